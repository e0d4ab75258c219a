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
import os

import yaml

from . import config
from ._checks import (
    SpecError,
    Throttle,
    _external_launches_ranks,
    _fail,
    _is_int,
    _kernel,
    _sweep,
    _throttle,
    available_kernels,
    machine_fits,
)
from .admissible import RuleError, compile_rule
from .units import UnitError, parse_duration

__all__ = ["Spec", "SpecError", "Throttle", "available_kernels", "load_spec"]

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
        Store path (a spec file's relative output is resolved against its folder).
    max_concurrent_launches : int
        Launches allowed at once across the cluster.
    env : dict
        Extra environment variables for every launch.
    text : str
        The YAML the spec was loaded from, kept for provenance.
    min_ranks : int
        The fewest ranks the kernel runs on (its ``MIN_RANKS``); the plan leaves
        out points with fewer.
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
    min_ranks: int = 1

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
    machine_fits(throttle, sweep["nodes"])
    min_ranks = _kernel(raw["kernel"], params, throttle.mode, sweep)
    _bandwidth_acts(throttle.mode, sweep["bandwidth"])
    rule = raw.get("admissible", "any")
    try:
        predicate = compile_rule(rule)
    except RuleError as exc:
        _fail("admissible", str(exc))
    admitted = [
        n * p
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
    if raw["kernel"] == "external":
        _external_launches_ranks(params["command"], max(admitted), throttle.mode)
    if max(admitted) < min_ranks:
        _fail(
            "sweep",
            f"kernel {raw['kernel']!r} needs at least {min_ranks} ranks, and no point "
            f"has more than {max(admitted)} (nodes x ppn); sweep more nodes or ppn",
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
    if throttle.mode == "netns" and slots != 1:
        _fail(
            "max_concurrent_launches",
            f"must be 1 in throttle mode 'netns' (launches share the shaped links), "
            f"got {slots}",
        )
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
        min_ranks=min_ranks,
    )


def _bandwidth_acts(mode: str, bandwidths) -> None:
    shaped = [b for b in bandwidths if b != 100]
    if shaped and mode not in ("emulated", "netns"):
        _fail(
            "sweep.bandwidth",
            f"{shaped[0]:g} % asked, but throttle mode {mode!r} does not shape the "
            "interconnect, so every bandwidth would measure the same full link; use "
            "throttle mode 'emulated' or 'netns', or sweep bandwidth: 100 only",
        )


def load_spec(spec: str | os.PathLike | dict | Spec) -> Spec:
    """Load and validate a spec.

    Parameters
    ----------
    spec : str, path-like, dict or Spec
        A path to a YAML file, YAML text (a string containing a newline), a dict with
        the same keys, or an already validated :class:`Spec` (returned unchanged).
        A relative ``output`` of a spec file is resolved against the file's folder;
        of YAML text or a dict, against the current directory.

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
    parsed = _parse(text, path)
    output = os.path.expanduser(parsed.output)
    # A relative output belongs beside its spec, wherever the command is run from.
    folder = os.path.dirname(os.path.abspath(path))
    return dataclasses.replace(parsed, output=os.path.join(folder, output))
