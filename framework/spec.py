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

Every key a spec may hold is one entry of :data:`SPEC_SCHEMA` (its dotted name, type,
default, whether it is required, and what it means). The parser reads the known keys,
the required keys, the defaults and the list of allowed keys in its errors from there,
so the schema and the parser cannot drift apart. Every problem is reported as one
:class:`SpecError` whose message names the key and what is allowed. Sweep keys ending
in ``_bytes`` accept sizes with units (``1 MiB``).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import os
import re

import yaml
from scaleprobe.kernels.schema import Allocation, Topology

from . import config
from .admissible import RuleError, compile_rule
from .units import UnitError, parse_bandwidth, parse_duration, parse_size

__all__ = [
    "SPEC_SCHEMA",
    "Spec",
    "SpecEntry",
    "SpecError",
    "Throttle",
    "available_kernels",
    "load_spec",
]

THROTTLE_MODES = ("none", "emulated", "netns")
#: Sweep keys scaleprobe derives itself.
RESERVED = ("ranks", "trial")
#: Sweep keys of the launch, not passed to the kernel as parameters.
LAUNCH_AXES = ("nodes", "ppn", "bandwidth", "threads", "run")
#: Most points one campaign may have (a typo such as ``run: 1000000000`` would
#: otherwise plan for hours and exhaust memory).
MAX_POINTS = 1_000_000
_IDENT = re.compile(r"^[a-z_][a-z0-9_]*$")
_KERNEL_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$")


class SpecError(ValueError):
    """A spec is invalid; the message is one line naming the key and what is allowed."""


# ------------------------------------------------------------------------ schema


@dataclasses.dataclass(frozen=True)
class SpecEntry:
    """One key a spec may hold.

    Parameters
    ----------
    name : str
        Dotted name (``throttle.link_bandwidth``); ``prefix.*`` stands for any other
        key below ``prefix`` (a swept kernel parameter, an environment variable).
    type : str
        What the value is, in words (``"int"``, ``"bandwidth"``, ``"mapping"``...).
    default : object
        The value taken when the key is absent (None: none, or see ``help``).
    required : bool
        Whether a spec must give the key.
    help : str
        What the key means, one or two sentences.
    setting : str or None, default=None
        The ``scaleprobe.<setting>`` of :mod:`scaleprobe.framework.config` that gives
        the default when the key is absent; ``default`` is its packaged value.
    """

    name: str
    type: str
    default: object
    required: bool
    help: str
    setting: str | None = None


def _setting(key: str):
    """The packaged default of a setting (the value before any user override)."""
    return config.default(key)


#: Every key of a spec, in the order a spec reference lists them.
SPEC_SCHEMA = (
    SpecEntry("name", "str", None, True, "Name of the campaign, its Dataset's title."),
    SpecEntry("description", "str", None, False, "Free text about the campaign."),
    SpecEntry(
        "kernel",
        "str",
        None,
        True,
        "A registered kernel ('commbench.pingpong'; see 'scaleprobe.kernels' entry "
        "points) or 'external' for any MPI program.",
    ),
    SpecEntry("params", "mapping", {}, False, "Fixed parameters of the kernel."),
    SpecEntry(
        "params.*",
        "value",
        None,
        False,
        "One kernel parameter (its flag without dashes); for 'external', 'command', "
        "'parser' and the values of the command's placeholders.",
    ),
    SpecEntry(
        "sweep",
        "mapping",
        None,
        True,
        "The axes of the sweep; every key becomes a dimension of the Dataset.",
    ),
    SpecEntry("sweep.nodes", "list of int", None, True, "Node counts to measure."),
    SpecEntry("sweep.ppn", "list of int", [1], False, "Ranks per node."),
    SpecEntry(
        "sweep.bandwidth",
        "list of number",
        [100],
        False,
        "Share of the link bandwidth, percent in (0, 100]; below 100 needs throttle "
        "mode 'emulated' or 'netns'.",
    ),
    SpecEntry(
        "sweep.threads",
        "list of int",
        [1],
        False,
        "Threads of each rank (OMP_NUM_THREADS, the BLAS variables, SCALEPROBE_THREADS "
        "and a built-in kernel's --threads); a dimension only where swept.",
    ),
    SpecEntry(
        "sweep.run",
        "int or list of int",
        1,
        False,
        "Repeated runs: a count n means runs 0 to n-1.",
    ),
    SpecEntry(
        "sweep.*",
        "list",
        None,
        False,
        "A swept kernel parameter; keys ending in '_bytes' take sizes with units "
        "('1 MiB').",
    ),
    SpecEntry(
        "admissible",
        "str",
        "any",
        False,
        "Which (nodes, ppn) pairs to run: a named rule (power_of_two, square, "
        "two_p_squared) or an expression over nodes, ppn and ranks.",
    ),
    SpecEntry("order", "mapping", {}, False, "The order points run in."),
    SpecEntry(
        "order.shuffle", "bool", True, False, "Run the points in a seeded random order."
    ),
    SpecEntry("order.seed", "int", 0, False, "Seed of the shuffle."),
    SpecEntry("throttle", "mapping", {}, False, "How the interconnect is throttled."),
    SpecEntry(
        "throttle.mode",
        "str",
        _setting("throttle.mode"),
        False,
        "'none' (the real interconnect), 'emulated' (a link model in virtual time) "
        "or 'netns' (TCP links shaped between network namespaces; Linux, root).",
        setting="throttle.mode",
    ),
    SpecEntry(
        "throttle.link_bandwidth",
        "bandwidth",
        _setting("throttle.link-bandwidth"),
        False,
        "Bandwidth of a node's link at 100 % ('10 Gbit/s').",
        setting="throttle.link-bandwidth",
    ),
    SpecEntry(
        "throttle.latency",
        "duration",
        _setting("throttle.latency"),
        False,
        "Per-message latency between nodes ('5 us'); mode 'emulated' only.",
        setting="throttle.latency",
    ),
    SpecEntry(
        "throttle.memory_bandwidth",
        "bandwidth",
        _setting("throttle.memory-bandwidth"),
        False,
        "Bandwidth of a message between two ranks of one node.",
        setting="throttle.memory-bandwidth",
    ),
    SpecEntry(
        "throttle.memory_latency",
        "duration",
        _setting("throttle.memory-latency"),
        False,
        "Per-message latency between two ranks of one node.",
        setting="throttle.memory-latency",
    ),
    SpecEntry(
        "throttle.core_slots",
        "int or null",
        _setting("throttle.core-slots"),
        False,
        "Ranks of the host computing at once in mode 'emulated'; null: one per "
        "core, 0: no limit.",
        setting="throttle.core-slots",
    ),
    SpecEntry(
        "throttle.topology",
        "mapping",
        None,
        False,
        "Switches of the emulated machine (mode 'emulated'); none: one switch.",
    ),
    SpecEntry(
        "throttle.topology.nodes_per_switch",
        "int",
        18,
        False,
        "Machine nodes on one leaf switch.",
    ),
    SpecEntry(
        "throttle.topology.switches_per_rack",
        "int or null",
        None,
        False,
        "Leaf switches in one rack; null: no rack level.",
    ),
    SpecEntry(
        "throttle.topology.oversubscription",
        "number",
        1.0,
        False,
        "Down-port bandwidth of a leaf over its uplink bandwidth (>= 1).",
    ),
    SpecEntry(
        "throttle.topology.rack_oversubscription",
        "number",
        1.0,
        False,
        "The same ratio for a rack's uplink.",
    ),
    SpecEntry(
        "throttle.topology.hop_latency",
        "duration",
        0.0,
        False,
        "Latency added per switch a message crosses beyond the first ('100 ns').",
    ),
    SpecEntry(
        "throttle.allocation",
        "str or mapping",
        "compact",
        False,
        "Where a point's nodes sit on the emulated machine (mode 'emulated'): "
        "'compact', 'random' or a mapping of the keys below.",
    ),
    SpecEntry(
        "throttle.allocation.placement",
        "str",
        "compact",
        False,
        "'compact' (consecutive machine nodes) or 'random' (drawn anew every run).",
    ),
    SpecEntry(
        "throttle.allocation.machine_nodes",
        "int or null",
        None,
        False,
        "Nodes of the machine; null: the point's own node count.",
    ),
    SpecEntry(
        "throttle.allocation.seed",
        "int",
        0,
        False,
        "Seed of a random placement; run r draws with seed + r.",
    ),
    SpecEntry(
        "timeout",
        "duration",
        _setting("launch.timeout"),
        False,
        "Time allowed per point (seconds, or '10 min').",
        setting="launch.timeout",
    ),
    SpecEntry(
        "output",
        "path",
        "results/<name>.zarr",
        False,
        "Where the results go ('.nc' for netCDF, else Zarr); relative to the spec "
        "file's folder.",
    ),
    SpecEntry(
        "max_concurrent_launches",
        "int",
        _setting("launch.max-concurrent-launches"),
        False,
        "Launches at once across the cluster (1 in mode 'netns').",
        setting="launch.max-concurrent-launches",
    ),
    SpecEntry("env", "mapping", {}, False, "Environment variables of every launch."),
    SpecEntry("env.*", "str", None, False, "One environment variable and its value."),
)

_ENTRIES = {entry.name: entry for entry in SPEC_SCHEMA}


def _children(prefix: str) -> list[SpecEntry]:
    """The entries directly below ``prefix`` (``""``: the top level), ``*`` excluded."""
    depth = prefix.count(".") + 1 if prefix else 0
    start = f"{prefix}." if prefix else ""
    return [
        entry
        for entry in SPEC_SCHEMA
        if entry.name.startswith(start)
        and entry.name.count(".") == depth
        and not entry.name.endswith("*")
    ]


def _check_keys(raw: dict, prefix: str = "") -> None:
    """Refuse keys the schema does not know below ``prefix``; require its required."""
    known = [entry.name.rpartition(".")[2] for entry in _children(prefix)]
    where = f"{prefix}." if prefix else ""
    if f"{where}*" not in _ENTRIES:
        for key in raw:
            if key not in known:
                _fail(f"{where}{key}", f"unknown key; allowed: {', '.join(known)}")
    for entry in _children(prefix):
        key = entry.name.rpartition(".")[2]
        if entry.required and key not in raw:
            near = difflib.get_close_matches(key, [str(k) for k in raw], n=1)
            hint = f"; did you mean it by {near[0]!r}?" if near else ""
            _fail(entry.name, f"is required ({entry.type}){hint}")


def _default(name: str):
    """The default of a key: its setting's current value, or the schema's."""
    entry = _ENTRIES[name]
    if entry.setting:
        return config.get(entry.setting)
    return copy.deepcopy(entry.default)


def _get(raw: dict, name: str):
    """The value of the key ``name`` (below ``raw``'s level) or its default."""
    key = name.rpartition(".")[2]
    return raw[key] if key in raw else _default(name)


# ------------------------------------------------------------------------- spec


@dataclasses.dataclass(frozen=True)
class Throttle:
    """How the interconnect is throttled during a sweep.

    Attributes
    ----------
    mode : {"none", "emulated", "netns"}
        ``none`` uses the real interconnect; ``emulated`` runs kernels in virtual time
        over a link model; ``netns`` shapes real TCP links between network namespaces.
    link_bandwidth : float
        Full link bandwidth in bytes/s (the sweep's ``bandwidth`` is a percent of it).
    latency : float
        Per-message link latency in seconds.
    memory_bandwidth, memory_latency : float
        The intra-node transfer model, in bytes/s and seconds.
    core_slots : int or None
        Host-wide compute slots for emulated mode; None means one per core, 0 off.
    topology : dict or None
        The emulated machine's switches (``nodes_per_switch``, ``switches_per_rack``,
        ``oversubscription``, ``rack_oversubscription``, ``hop_latency`` in s; see
        :class:`scaleprobe.kernels.schema.Topology`); None: the defaults.
    allocation : dict or None
        Where a point's nodes sit on it (``placement`` compact or random,
        ``machine_nodes``, ``seed``; a random placement draws anew for every run,
        seed ``seed + run``); None: compact.
    """

    mode: str
    link_bandwidth: float
    latency: float
    memory_bandwidth: float
    memory_latency: float
    core_slots: int | None
    topology: dict | None = None
    allocation: dict | None = None

    def as_dict(self) -> dict:
        """Return the throttle settings as a plain dict (for the campaign identity)."""
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
        return tuple(k for k in self.sweep if k not in LAUNCH_AXES)


def _fail(key: str, message: str):
    raise SpecError(f"spec key '{key}': {message}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ------------------------------------------------------------------------ parser


def _load_yaml(text: str, source: str) -> dict:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise SpecError(
            f"{source}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None
    if not isinstance(raw, dict):
        required = ", ".join(e.name for e in _children("") if e.required)
        raise SpecError(
            f"{source}: a spec is a YAML mapping of keys such as {required}"
        )
    return raw


def _parse(text: str, source: str) -> Spec:
    raw = _load_yaml(text, source)
    _check_keys(raw)
    name = raw["name"]
    if not isinstance(name, str) or not name.strip():
        _fail("name", f"must be a non-empty string, got {name!r}")
    params = _get(raw, "params") or {}
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
    rule = str(_get(raw, "admissible"))
    _check_admitted(raw, rule, sweep, params, throttle.mode, min_ranks)
    shuffle, seed = _order(raw.get("order"))
    return Spec(
        name=name,
        kernel=raw["kernel"],
        params=params,
        sweep=sweep,
        admissible=rule,
        shuffle=shuffle,
        seed=seed,
        throttle=throttle,
        timeout=_timeout(raw),
        output=_output(raw, name),
        max_concurrent_launches=_launch_slots(raw, throttle.mode),
        env=_environment(raw),
        text=text,
        min_ranks=min_ranks,
    )


def _check_admitted(raw, rule, sweep, params, mode: str, min_ranks: int) -> None:
    """Refuse a rule that admits no point, or points all too small for the kernel."""
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
        _external_launches_ranks(params["command"], max(admitted), mode)
    if max(admitted) < min_ranks:
        _fail(
            "sweep",
            f"kernel {raw['kernel']!r} needs at least {min_ranks} ranks, and no point "
            f"has more than {max(admitted)} (nodes x ppn); sweep more nodes or ppn",
        )


def _order(order) -> tuple[bool, int]:
    order = order or {}
    if not isinstance(order, dict):
        _fail("order", "must be a mapping with keys 'shuffle' (bool) and 'seed' (int)")
    _check_keys(order, "order")
    shuffle, seed = _get(order, "order.shuffle"), _get(order, "order.seed")
    if not isinstance(shuffle, bool):
        _fail("order.shuffle", f"must be true or false, got {shuffle!r}")
    if not _is_int(seed):
        _fail("order.seed", f"must be an integer, got {seed!r}")
    return shuffle, seed


def _timeout(raw: dict) -> float:
    try:
        timeout = parse_duration(_get(raw, "timeout"))
    except UnitError as exc:
        _fail("timeout", str(exc))
    if timeout <= 0:
        _fail("timeout", "must be positive (seconds per point)")
    return timeout


def _output(raw: dict, name: str) -> str:
    output = raw.get("output", f"results/{name}.zarr")
    if not isinstance(output, str) or not output.strip():
        _fail("output", f"must be a path, got {output!r}")
    return output


def _launch_slots(raw: dict, mode: str) -> int:
    slots = _get(raw, "max_concurrent_launches")
    if not _is_int(slots) or slots < 1:
        _fail("max_concurrent_launches", f"must be a positive integer, got {slots!r}")
    if mode == "netns" and slots != 1:
        _fail(
            "max_concurrent_launches",
            f"must be 1 in throttle mode 'netns' (launches share the shaped links), "
            f"got {slots}",
        )
    return slots


def _environment(raw: dict) -> dict:
    env = _get(raw, "env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        _fail("env", "must be a mapping of environment variable names to values")
    return {k: str(v) for k, v in env.items()}


def _bandwidth_acts(mode: str, bandwidths) -> None:
    shaped = [b for b in bandwidths if b != 100]
    if shaped and mode not in ("emulated", "netns"):
        _fail(
            "sweep.bandwidth",
            f"{shaped[0]:g} % asked, but throttle mode {mode!r} does not shape the "
            "interconnect, so every bandwidth would measure the same full link; use "
            "throttle mode 'emulated' or 'netns', or sweep bandwidth: 100 only",
        )


# ------------------------------------------------------------------------- sweep


def _check_axis_values(key: str, values: list) -> list:
    """Check the values of one axis by what the axis is; sizes to bytes."""
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
    if key in ("nodes", "ppn", "threads", "run"):
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
    return values


def _axis(key: str, value) -> tuple:
    if key == "run" and _is_int(value):
        if value < 1:
            _fail("sweep.run", f"a repeat count must be at least 1, got {value}")
        if value > MAX_POINTS:
            _fail("sweep.run", f"at most {MAX_POINTS:,} repeats, got {value:,}")
        return tuple(range(value))
    values = value if isinstance(value, list) else [value]
    if not values:
        _fail(f"sweep.{key}", "the list of values is empty; give at least one value")
    values = _check_axis_values(key, values)
    if len(set(values)) != len(values):
        _fail(f"sweep.{key}", f"values repeat: {values}")
    return tuple(values)


def _sweep(raw) -> dict:
    if not isinstance(raw, dict):
        _fail(
            "sweep",
            f"must be a mapping of axis name to values, got {type(raw).__name__}",
        )
    _check_keys(raw, "sweep")
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
    # Canonical order: nodes, ppn, bandwidth, threads where swept, the kernel's axes
    # as written, run last.
    ordered = {
        "nodes": sweep["nodes"],
        "ppn": sweep.get("ppn", tuple(_default("sweep.ppn"))),
        "bandwidth": sweep.get("bandwidth", tuple(_default("sweep.bandwidth"))),
    }
    if "threads" in sweep:
        ordered["threads"] = sweep["threads"]
    ordered.update({k: v for k, v in sweep.items() if k not in ordered and k != "run"})
    ordered["run"] = sweep.get("run", tuple(range(_default("sweep.run"))))
    size = 1
    for values in ordered.values():
        size *= len(values)
    if size > MAX_POINTS:
        _fail(
            "sweep",
            f"{size:,} points (the product of the axes' lengths); a campaign has at "
            f"most {MAX_POINTS:,}: split it into several",
        )
    return ordered


# ---------------------------------------------------------------------- throttle


def _throttle(raw) -> Throttle:
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        _fail("throttle", f"must be a mapping, got {type(raw).__name__}")
    _check_keys(raw, "throttle")
    mode = _get(raw, "throttle.mode")
    if mode not in THROTTLE_MODES:
        _fail("throttle.mode", f"got {mode!r}; allowed: {', '.join(THROTTLE_MODES)}")
    if mode == "netns":
        _check_netns(raw)
    slots = _get(raw, "throttle.core_slots")
    if slots is not None and (not _is_int(slots) or slots < 0):
        _fail(
            "throttle.core_slots",
            f"must be a non-negative integer or null, got {slots!r}",
        )
    values = {}
    for key, parse in (
        ("link_bandwidth", parse_bandwidth),
        ("memory_bandwidth", parse_bandwidth),
        ("latency", parse_duration),
        ("memory_latency", parse_duration),
    ):
        try:
            # what the spec writes must say its unit; a packaged default does
            values[key] = parse(_get(raw, f"throttle.{key}"), require_unit=key in raw)
        except UnitError as exc:
            _fail(f"throttle.{key}", str(exc))
    machine = _machine(raw, mode)
    return Throttle(mode=mode, core_slots=slots, **values, **machine)


def _machine(raw: dict, mode: str) -> dict:
    """``throttle.topology`` and ``throttle.allocation``, checked and in SI units."""
    machine = {}
    for key, kind in (("topology", Topology), ("allocation", Allocation)):
        if raw.get(key) is None:
            continue
        if mode != "emulated":
            _fail(
                f"throttle.{key}",
                f"describes the emulated machine: needs mode 'emulated', got {mode!r}",
            )
        if isinstance(raw[key], dict):
            _check_keys(raw[key], f"throttle.{key}")
        hop = raw[key].get("hop_latency") if isinstance(raw[key], dict) else None
        if isinstance(hop, (int, float)) and not isinstance(hop, bool):
            try:
                parse_duration(hop, require_unit=True)
            except UnitError as exc:
                _fail("throttle.topology.hop_latency", str(exc))
        try:
            machine[key] = kind.from_dict(raw[key]).to_dict()
        except (TypeError, ValueError) as exc:
            _fail(f"throttle.{key}", str(exc))
    return machine


def machine_fits(throttle: Throttle, nodes) -> None:
    """Refuse an allocation's machine smaller than the largest point's nodes.

    Parameters
    ----------
    throttle : Throttle
        The spec's throttle.
    nodes : sequence of int
        The sweep's node counts.

    Raises
    ------
    SpecError
        Naming ``throttle.allocation.machine_nodes``.
    """
    machine = (throttle.allocation or {}).get("machine_nodes")
    if machine is not None and max(nodes) > machine:
        _fail(
            "throttle.allocation.machine_nodes",
            f"{machine} machine nodes cannot hold a point of {max(nodes)} nodes",
        )


def _check_netns(raw: dict) -> None:
    from .netns import netns_unavailable

    reason = netns_unavailable()
    if reason is not None:
        _fail("throttle.mode", f"{reason}; use 'emulated' (no privileges) instead")
    if "latency" in raw:
        _fail(
            "throttle.latency",
            "mode 'netns' shapes bandwidth only and cannot add latency (no tc netem); "
            "the link latency is that of the namespaces' veth pairs: remove the key",
        )


# ------------------------------------------------------------------------ kernel


def _kernel(name, params: dict, mode: str, sweep: dict) -> int:
    """Check the kernel and its parameters; return the fewest ranks it runs on."""
    if not isinstance(name, str) or not _KERNEL_NAME.match(name):
        _fail(
            "kernel",
            f"must be a kernel name such as 'commbench.pingpong', got {name!r}",
        )
    if name == "external":
        _check_external(params, mode, sweep)
        return 1
    from scaleprobe.kernels.registry import kernel_min_ranks

    from ._kernel_check import check_kernel

    check_kernel(name, params, sweep, _fail)
    return kernel_min_ranks(name)


def _check_external(params: dict, mode: str, sweep: dict) -> None:
    from scaleprobe.kernels.external import validate_params

    if mode == "emulated":
        _fail(
            "throttle.mode",
            "an external program cannot be throttled in 'emulated' "
            "mode (it does not talk through scaleprobe's communicator); use 'none' "
            "or 'netns'",
        )
    try:
        validate_params(params, sweep_keys=list(sweep))
    except ValueError as exc:
        key, _, message = str(exc).partition(": ")
        if not key.startswith("params"):
            key, message = "params", str(exc)
        _fail(key, message)


def _external_launches_ranks(command: str, largest: int, mode: str) -> None:
    """Refuse a template that would not start a point's ranks as the point says."""
    from scaleprobe.kernels.external.command import template_fields

    fields = template_fields(command)
    needed = ["ranks"] if largest > 1 else []
    if mode == "netns":
        needed.insert(0, "mpiexec")  # only scaleprobe's launcher enters the nodes
    missing = [f for f in needed if f not in fields]
    if missing:
        where = "in throttle mode 'netns' " if "mpiexec" in missing else ""
        _fail(
            "params.command",
            f"{command!r} has no {' and no '.join('{' + f + '}' for f in missing)}: "
            f"{where}it would not start the point's ranks (a point of {largest} "
            f"ranks would be stored as {largest} while running what the command "
            "starts); write it as '{mpiexec} -n {ranks} ./program ...'",
        )


def available_kernels() -> list[str]:
    """List the registered kernels (entry-point group ``scaleprobe.kernels``).

    Returns
    -------
    list of str
        Names usable as a spec's ``kernel`` (``external`` is always allowed too).
    """
    from scaleprobe.kernels.registry import kernel_names

    return kernel_names()


# ------------------------------------------------------------------------- load


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
    >>> load_spec({"name": "demo", "kernel": "commbench.compute", "sweep": {}})
    Traceback (most recent call last):
    ...
    scaleprobe.framework.spec.SpecError: spec key 'sweep.nodes': is required (list of int)
    """  # noqa: E501
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
