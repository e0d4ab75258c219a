"""Campaign specs: load a YAML description of a sweep and validate it.

A spec is the contract between a user and scaleprobe::

    name: pingpong-throttle
    kernel: commbench.pingpong        # a kernel in scaleprobe.kernels, or `external`
    params: {iterations: 50}          # fixed kernel parameters
    sweep:                            # every key becomes a Dataset dimension
      nodes: [1, 2, 4]
      ppn: 1                          # ranks per node; ranks = nodes * ppn
      bandwidth: [100, 50, 25, 10]    # percent of the link
      msg_bytes: [65536, 1048576]     # kernel parameters may be swept too
      run: 3                          # repeats: an int n means 0..n-1
    admissible: power_of_two          # named rule or expression over nodes/ppn/ranks
    order: {shuffle: true, seed: 7}
    throttle: {mode: emulated, link_bandwidth: 1 Gbit/s, latency: 5 us}
    timeout: 120                      # seconds per point
    output: results/pingpong.zarr

Every problem is reported as one :class:`SpecError` whose message names the key and
what is allowed. Sweep keys ending in ``_bytes`` accept sizes with units (``1 MiB``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re

import yaml

from . import config
from .admissible import RuleError, compile_rule
from .units import UnitError, parse_bandwidth, parse_duration, parse_size

__all__ = ["Spec", "SpecError", "Throttle", "load_spec"]

TOP_KEYS = (
    "name",
    "description",
    "kernel",
    "params",
    "sweep",
    "admissible",
    "order",
    "throttle",
    "timeout",
    "output",
    "max_concurrent_launches",
    "env",
)
REQUIRED = ("name", "kernel", "sweep")
THROTTLE_KEYS = (
    "mode",
    "link_bandwidth",
    "latency",
    "memory_bandwidth",
    "memory_latency",
    "core_slots",
)
THROTTLE_MODES = ("none", "emulated", "netns")
RESERVED = ("ranks", "trial")
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")


class SpecError(ValueError):
    """A spec is invalid; the message is one line naming the key and what is allowed."""


@dataclasses.dataclass(frozen=True)
class Throttle:
    """How the interconnect is throttled during a sweep.

    Attributes
    ----------
    mode : {"none", "emulated", "netns"}
        ``none`` uses the real interconnect; ``emulated`` runs kernels in virtual time
        over a link model; ``netns`` shapes real TCP links between network namespaces.
    link_bandwidth : float
        Full link bandwidth in bytes/s (the sweep's ``bandwidth`` is a percentage of it).
    latency : float
        Per-message link latency in seconds.
    memory_bandwidth, memory_latency : float
        The intra-node transfer model, in bytes/s and seconds.
    core_slots : int or None
        Host-wide compute slots for emulated mode; None means one per core, 0 off.
    """

    mode: str
    link_bandwidth: float
    latency: float
    memory_bandwidth: float
    memory_latency: float
    core_slots: int | None

    def as_dict(self) -> dict:
        """Return the throttle settings as a plain dict (for provenance and env)."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Spec:
    """A validated campaign spec.

    Attributes
    ----------
    name, kernel : str
        Campaign name and kernel (module below ``scaleprobe.kernels``, or ``external``).
    params : dict
        Fixed kernel parameters.
    sweep : dict of str to tuple
        Ordered sweep axes; ``nodes``, ``ppn``, ``bandwidth`` and ``run`` always exist.
    admissible : str
        The admissible rule as written.
    shuffle : bool
        Whether points run in a seeded random order.
    seed : int
        The shuffle seed.
    throttle : Throttle
        Link model and mode.
    timeout : float
        Seconds allowed per point.
    output : str
        Store path (relative paths are relative to the working directory).
    max_concurrent_launches : int
        Launches allowed at once across the cluster.
    env : dict
        Extra environment variables for every launch.
    text : str
        The YAML the spec was loaded from, kept for provenance.
    """

    name: str
    kernel: str
    params: dict
    sweep: dict
    admissible: str
    shuffle: bool
    seed: int
    throttle: Throttle
    timeout: float
    output: str
    max_concurrent_launches: int
    env: dict
    text: str = ""

    @property
    def dims(self) -> tuple[str, ...]:
        """Sweep dimension names in spec order."""
        return tuple(self.sweep)

    @property
    def kernel_axes(self) -> tuple[str, ...]:
        """Sweep keys that are passed to the kernel as parameters."""
        return tuple(
            k for k in self.sweep if k not in ("nodes", "ppn", "bandwidth", "run")
        )


def _fail(key: str, message: str):
    raise SpecError(f"spec key '{key}': {message}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _axis(key: str, value) -> tuple:
    if key == "run" and _is_int(value):
        if value < 1:
            _fail("sweep.run", f"a repeat count must be at least 1, got {value}")
        return tuple(range(value))
    values = value if isinstance(value, list) else [value]
    if not values:
        _fail(f"sweep.{key}", "the list of values is empty; give at least one value")
    for v in values:
        if not isinstance(v, (int, float, str, bool)) or v is None:
            _fail(
                f"sweep.{key}",
                f"values must be numbers, strings or booleans, got {v!r}",
            )
    if key.endswith("_bytes"):
        try:
            values = [parse_size(v) for v in values]
        except UnitError as exc:
            _fail(f"sweep.{key}", str(exc))
    if key in ("nodes", "ppn", "run"):
        for v in values:
            if not _is_int(v) or v < (0 if key == "run" else 1):
                allowed = (
                    "non-negative integers" if key == "run" else "positive integers"
                )
                _fail(f"sweep.{key}", f"values must be {allowed}, got {v!r}")
    if key == "bandwidth":
        for v in values:
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not 0 < v <= 100
            ):
                _fail(
                    "sweep.bandwidth",
                    f"values are percent of the link in (0, 100], got {v!r}",
                )
    if len(set(values)) != len(values):
        _fail(f"sweep.{key}", f"values repeat: {values}")
    return tuple(values)


def _sweep(raw) -> dict:
    if not isinstance(raw, dict):
        _fail(
            "sweep",
            f"must be a mapping of axis name to values, got {type(raw).__name__}",
        )
    if "nodes" not in raw:
        _fail("sweep.nodes", "is required (a list of node counts)")
    sweep = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not _IDENT.match(key):
            _fail(f"sweep.{key}", "axis names are lowercase identifiers (a-z, 0-9, _)")
        if key in RESERVED:
            _fail(
                f"sweep.{key}",
                f"is derived by scaleprobe and cannot be swept ({', '.join(RESERVED)})",
            )
        sweep[key] = _axis(key, value)
    # Canonical order: nodes, ppn, bandwidth, the kernel's axes as written, run last.
    ordered = {
        "nodes": sweep["nodes"],
        "ppn": sweep.get("ppn", (1,)),
        "bandwidth": sweep.get("bandwidth", (100,)),
    }
    ordered.update({k: v for k, v in sweep.items() if k not in ordered and k != "run"})
    ordered["run"] = sweep.get("run", (0,))
    return ordered


def _throttle(raw) -> Throttle:
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        _fail("throttle", f"must be a mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in THROTTLE_KEYS:
            _fail(
                f"throttle.{key}", f"unknown key; allowed: {', '.join(THROTTLE_KEYS)}"
            )
    mode = raw.get("mode", config.get("throttle.mode"))
    if mode not in THROTTLE_MODES:
        _fail("throttle.mode", f"got {mode!r}; allowed: {', '.join(THROTTLE_MODES)}")
    if mode == "netns":
        _fail(
            "throttle.mode",
            "'netns' (shaped links between network namespaces) is not "
            "available yet; use 'none' (the real interconnect) or 'emulated'",
        )
    slots = raw.get("core_slots", config.get("throttle.core-slots"))
    if slots is not None and (not _is_int(slots) or slots < 0):
        _fail(
            "throttle.core_slots",
            f"must be a non-negative integer or null, got {slots!r}",
        )
    try:
        values = {
            "link_bandwidth": parse_bandwidth(
                raw.get("link_bandwidth", config.get("throttle.link-bandwidth"))
            ),
            "memory_bandwidth": parse_bandwidth(
                raw.get("memory_bandwidth", config.get("throttle.memory-bandwidth"))
            ),
        }
    except UnitError as exc:
        key = "link_bandwidth" if "link_bandwidth" in raw else "memory_bandwidth"
        _fail(f"throttle.{key}", str(exc))
    for key, default in (
        ("latency", "throttle.latency"),
        ("memory_latency", "throttle.memory-latency"),
    ):
        try:
            values[key] = parse_duration(raw.get(key, config.get(default)))
        except UnitError as exc:
            _fail(f"throttle.{key}", str(exc))
    return Throttle(mode=mode, core_slots=slots, **values)


def _kernel(name, params: dict, mode: str, sweep_keys) -> None:
    if not isinstance(name, str) or not re.match(
        r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$", name
    ):
        _fail(
            "kernel",
            f"must be a kernel name such as 'commbench.pingpong', got {name!r}",
        )
    if name == "external":
        from scaleprobe.kernels.external import validate_params

        if mode == "emulated":
            _fail(
                "throttle.mode",
                "an external program cannot be throttled in 'emulated' "
                "mode (it does not talk through scaleprobe's communicator); use 'none' "
                "or 'netns'",
            )
        try:
            validate_params(params, sweep_keys=sweep_keys)
        except ValueError as exc:
            key, _, message = str(exc).partition(": ")
            if not key.startswith("params"):
                key, message = "params", str(exc)
            _fail(key, message)
        return
    module = f"scaleprobe.kernels.{name}"
    try:
        found = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        found = None
    if (
        found is None
        or name.split(".")[-1].startswith("_")
        or name in ("record", "comm")
    ):
        _fail(
            "kernel",
            f"unknown kernel {name!r}; available: {', '.join(available_kernels())}, external",
        )


def available_kernels() -> list[str]:
    """List the kernels shipped in :mod:`scaleprobe.kernels`.

    Returns
    -------
    list of str
        Names usable as a spec's ``kernel`` (``external`` is always allowed too).
    """
    import scaleprobe.kernels as pkg

    names = []
    for root in pkg.__path__:
        for entry in sorted(os.listdir(root)):
            path = os.path.join(root, entry)
            if entry.startswith(("_", ".")) or entry in (
                "comm",
                "external",
                "record.py",
            ):
                continue
            if os.path.isfile(os.path.join(path, "__main__.py")):
                names.append(entry)
            elif os.path.isdir(path):
                names += [
                    f"{entry}.{m[:-3]}"
                    for m in sorted(os.listdir(path))
                    if m.endswith(".py") and not m.startswith("_")
                ]
    return names


def _parse(text: str, source: str) -> Spec:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise SpecError(
            f"{source}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None
    if not isinstance(raw, dict):
        raise SpecError(
            f"{source}: a spec is a YAML mapping of keys such as {', '.join(REQUIRED)}"
        )
    for key in raw:
        if key not in TOP_KEYS:
            _fail(str(key), f"unknown key; allowed: {', '.join(TOP_KEYS)}")
    for key in REQUIRED:
        if key not in raw:
            _fail(key, "is required")
    name = raw["name"]
    if not isinstance(name, str) or not name.strip():
        _fail("name", f"must be a non-empty string, got {name!r}")
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        _fail(
            "params",
            f"must be a mapping of kernel parameters, got {type(params).__name__}",
        )
    sweep = _sweep(raw["sweep"])
    for key in sweep:
        if key in params:
            _fail(f"params.{key}", "is also a sweep axis; give it in one place only")
    throttle = _throttle(raw.get("throttle"))
    _kernel(raw["kernel"], params, throttle.mode, list(sweep))
    rule = raw.get("admissible", "any")
    try:
        predicate = compile_rule(rule)
    except RuleError as exc:
        _fail("admissible", str(exc))
    admitted = [
        (n, p)
        for n in sweep["nodes"]
        for p in sweep["ppn"]
        if predicate(nodes=n, ppn=p, ranks=n * p)
    ]
    if not admitted:
        _fail(
            "admissible",
            f"rule {rule!r} admits none of nodes={list(sweep['nodes'])} "
            f"x ppn={list(sweep['ppn'])}",
        )
    order = raw.get("order", {}) or {}
    if not isinstance(order, dict) or set(order) - {"shuffle", "seed"}:
        _fail("order", "must be a mapping with keys 'shuffle' (bool) and 'seed' (int)")
    shuffle, seed = order.get("shuffle", True), order.get("seed", 0)
    if not isinstance(shuffle, bool):
        _fail("order.shuffle", f"must be true or false, got {shuffle!r}")
    if not _is_int(seed):
        _fail("order.seed", f"must be an integer, got {seed!r}")
    try:
        timeout = parse_duration(raw.get("timeout", config.get("launch.timeout")))
    except UnitError as exc:
        _fail("timeout", str(exc))
    if timeout <= 0:
        _fail("timeout", "must be positive (seconds per point)")
    output = raw.get("output", f"results/{name}.zarr")
    if not isinstance(output, str) or not output.strip():
        _fail("output", f"must be a path, got {output!r}")
    slots = raw.get(
        "max_concurrent_launches", config.get("launch.max-concurrent-launches")
    )
    if not _is_int(slots) or slots < 1:
        _fail("max_concurrent_launches", f"must be a positive integer, got {slots!r}")
    env = raw.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        _fail("env", "must be a mapping of environment variable names to values")
    return Spec(
        name=name,
        kernel=raw["kernel"],
        params=params,
        sweep=sweep,
        admissible=str(rule),
        shuffle=shuffle,
        seed=seed,
        throttle=throttle,
        timeout=timeout,
        output=output,
        max_concurrent_launches=slots,
        env={k: str(v) for k, v in env.items()},
        text=text,
    )


def load_spec(spec: str | os.PathLike | dict | Spec) -> Spec:
    """Load and validate a spec.

    Parameters
    ----------
    spec : str, path-like, dict or Spec
        A path to a YAML file, YAML text (a string containing a newline), a dict with
        the same keys, or an already validated :class:`Spec` (returned unchanged).

    Returns
    -------
    Spec
        The validated spec.

    Raises
    ------
    SpecError
        With a one-line message naming the offending key and what is allowed.

    Examples
    --------
    >>> spec = load_spec({"name": "demo", "kernel": "commbench.compute",
    ...                   "sweep": {"nodes": [1, 2], "run": 2}})
    >>> spec.sweep["run"], spec.throttle.mode
    ((0, 1), 'emulated')
    """
    if isinstance(spec, Spec):
        return spec
    if isinstance(spec, dict):
        return _parse(yaml.safe_dump(spec, sort_keys=False), "spec")
    if isinstance(spec, str) and "\n" in spec:
        return _parse(spec, "spec")
    path = os.fspath(spec)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise SpecError(f"cannot read spec file {path!r}: {exc.strerror}") from None
    return _parse(text, path)
