"""Checks of the parts of a spec: sweep axes, throttle, kernel.

Every check raises :class:`SpecError` with a one-line message that names the key and
what is allowed.
"""

from __future__ import annotations

import dataclasses
import re

from . import config
from .units import UnitError, parse_bandwidth, parse_duration, parse_size

__all__ = ["SpecError", "Throttle", "available_kernels"]

THROTTLE_KEYS = (
    "mode",
    "link_bandwidth",
    "latency",
    "memory_bandwidth",
    "memory_latency",
    "core_slots",
    "topology",
    "allocation",
)
THROTTLE_MODES = ("none", "emulated", "netns")
RESERVED = ("ranks", "trial")
#: Most points one campaign may have (a typo such as ``run: 1000000000`` would
#: otherwise plan for hours and exhaust memory).
MAX_POINTS = 1_000_000
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
        :class:`scaleprobe.kernels.comm.Topology`); None: the defaults.
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
        """Return the throttle settings as a plain dict (for provenance and env)."""
        return dataclasses.asdict(self)


def _fail(key: str, message: str):
    raise SpecError(f"spec key '{key}': {message}")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
        _check_netns(raw)
    slots = raw.get("core_slots", config.get("throttle.core-slots"))
    if slots is not None and (not _is_int(slots) or slots < 0):
        _fail(
            "throttle.core_slots",
            f"must be a non-negative integer or null, got {slots!r}",
        )
    for key, example in _UNIT_EXAMPLES.items():
        _require_unit(raw, key, example)
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
    machine = _machine(raw, mode)
    return Throttle(mode=mode, core_slots=slots, **values, **machine)


def _machine(raw: dict, mode: str) -> dict:
    """``throttle.topology`` and ``throttle.allocation``, checked and in SI units."""
    from scaleprobe.kernels.comm import Allocation, Topology

    machine = {}
    for key, kind in (("topology", Topology), ("allocation", Allocation)):
        if raw.get(key) is None:
            continue
        if mode != "emulated":
            _fail(
                f"throttle.{key}",
                f"describes the emulated machine: needs mode 'emulated', got {mode!r}",
            )
        hop = raw[key].get("hop_latency") if isinstance(raw[key], dict) else None
        if isinstance(hop, (int, float)) and not isinstance(hop, bool) and hop != 0:
            _fail("throttle.topology.hop_latency", f"{hop} needs a unit: '{hop} us'")
        try:
            machine[key] = kind.from_config(raw[key]).to_config()
        except (TypeError, ValueError) as exc:
            _fail(f"throttle.{key}", str(exc))
    return machine


def machine_fits(throttle: Throttle, nodes) -> None:
    """Refuse an allocation's machine smaller than the largest point's nodes."""
    machine = (throttle.allocation or {}).get("machine_nodes")
    if machine is not None and max(nodes) > machine:
        _fail(
            "throttle.allocation.machine_nodes",
            f"{machine} machine nodes cannot hold a point of {max(nodes)} nodes",
        )


_UNIT_EXAMPLES = {
    "link_bandwidth": "10 Gbit/s",
    "memory_bandwidth": "5 GB/s",
    "latency": "5 us",
    "memory_latency": "0.5 us",
}


def _require_unit(raw: dict, key: str, example: str) -> None:
    """Refuse a dimensioned throttle value given as a bare number (other than 0)."""
    value = raw.get(key)
    if isinstance(value, bool) or value is None:
        return
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return  # has a unit (or is garbage the unit parser names)
    if number != 0:
        if key.endswith("latency"):
            example = f"{number:g} {example.split()[1]}"
        _fail(f"throttle.{key}", f"{text} needs a unit, e.g. '{example}'")


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


def _kernel(name, params: dict, mode: str, sweep: dict) -> int:
    """Check the kernel and its parameters; return the fewest ranks it runs on."""
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
            validate_params(params, sweep_keys=list(sweep))
        except ValueError as exc:
            key, _, message = str(exc).partition(": ")
            if not key.startswith("params"):
                key, message = "params", str(exc)
            _fail(key, message)
        return 1
    from scaleprobe.kernels.registry import kernel_min_ranks

    from ._kernel_check import check_kernel

    check_kernel(name, params, sweep, _fail)
    return kernel_min_ranks(name)


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
