"""Configuration of the communicator: ``SCALEPROBE_COMM`` and command-line flags."""

from __future__ import annotations

import json
import os

from ._link import LinkModel
from ._topology import Allocation, Topology

__all__ = ["ENVIRONMENT_VARIABLE", "MODES", "add_comm_arguments", "resolve_config"]

ENVIRONMENT_VARIABLE = "SCALEPROBE_COMM"
MODES = ("none", "emulated", "netns")
_KNOWN = {
    "mode",
    "ppn",
    "bandwidth",
    "link_bandwidth",
    "latency",
    "memory_bandwidth",
    "memory_latency",
    "core_slots",
    "slot_dir",
    "nic_sharing",
    "topology",
    "allocation",
}
#: Command-line flags of the emulated machine: (flag, config section, key).
_MACHINE_FLAGS = (
    ("allocation", "allocation", "placement"),
    ("machine_nodes", "allocation", "machine_nodes"),
    ("allocation_seed", "allocation", "seed"),
    ("nodes_per_switch", "topology", "nodes_per_switch"),
    ("switches_per_rack", "topology", "switches_per_rack"),
    ("oversubscription", "topology", "oversubscription"),
)


def add_comm_arguments(parser) -> None:
    """Add the communicator's flags to an :class:`argparse.ArgumentParser`.

    Flags left unset fall back to ``SCALEPROBE_COMM`` (see :func:`resolve_config`).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        Parser of a kernel.

    Examples
    --------
    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> add_comm_arguments(parser)
    >>> parser.parse_args(["--throttle", "emulated", "--ppn", "2"]).ppn
    2
    """
    group = parser.add_argument_group("interconnect")
    group.add_argument(
        "--throttle",
        choices=MODES,
        default=None,
        help="none: real interconnect and wall time; "
        "emulated: throttled link in virtual time; "
        "netns: link shaped by the network, wall time",
    )
    group.add_argument("--ppn", type=int, default=None, help="ranks per node")
    group.add_argument(
        "--bandwidth-percent",
        type=float,
        default=None,
        help="percent of the link bandwidth (throttle)",
    )
    group.add_argument(
        "--link-bandwidth",
        default=None,
        help='link bandwidth, e.g. "1 Gbit/s" or bytes/s',
    )
    group.add_argument("--latency", default=None, help='link latency, e.g. "5 us"')
    group.add_argument(
        "--core-slots",
        type=int,
        default=None,
        help="ranks of this host computing at once (0 = no limit)",
    )
    machine = parser.add_argument_group("emulated machine")
    machine.add_argument(
        "--allocation",
        choices=("compact", "random"),
        default=None,
        help="placement of the job's nodes on the machine",
    )
    machine.add_argument(
        "--machine-nodes",
        type=int,
        default=None,
        help="nodes of the machine (default: the job's)",
    )
    machine.add_argument(
        "--allocation-seed",
        type=int,
        default=None,
        help="seed of a random allocation (default 0)",
    )
    machine.add_argument(
        "--nodes-per-switch",
        type=int,
        default=None,
        help="nodes per leaf switch (default 18)",
    )
    machine.add_argument(
        "--switches-per-rack",
        type=int,
        default=None,
        help="leaf switches per rack (default: no racks)",
    )
    machine.add_argument(
        "--oversubscription",
        type=float,
        default=None,
        help="down/up bandwidth ratio of a leaf switch (default 1)",
    )


def resolve_config(args=None, environ=None) -> dict:
    """Merge ``SCALEPROBE_COMM`` (defaults) with command-line flags (overrides).

    Parameters
    ----------
    args : argparse.Namespace, optional
        Parsed flags from :func:`add_comm_arguments`.
    environ : mapping, optional
        Environment to read; :data:`os.environ` by default.

    Returns
    -------
    dict
        ``mode``, ``ppn``, ``link`` (:class:`LinkModel`), ``core_slots`` (int or None
        for the mode's default), ``slot_dir`` (str or None), ``topology``
        (:class:`Topology`) and ``allocation`` (:class:`Allocation`).

    Raises
    ------
    ValueError
        Bad JSON, an unknown key or an invalid value; the message names it.

    Examples
    --------
    >>> resolve_config(environ={"SCALEPROBE_COMM": '{"mode": "emulated", "ppn": 2}'})
    ... # doctest: +ELLIPSIS
    {'mode': 'emulated', 'ppn': 2, 'link': LinkModel(...), 'core_slots': None, ...}
    """
    environ = os.environ if environ is None else environ
    text = environ.get(ENVIRONMENT_VARIABLE, "").strip()
    config = {}
    if text:
        try:
            config = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{ENVIRONMENT_VARIABLE} is not valid JSON: {error}"
            ) from None
        if not isinstance(config, dict):
            raise ValueError(
                f"{ENVIRONMENT_VARIABLE} must be a JSON object, "
                f"got {type(config).__name__}"
            )
        unknown = sorted(set(config) - _KNOWN)
        if unknown:
            raise ValueError(
                f"{ENVIRONMENT_VARIABLE} has unknown key(s) {unknown}; "
                f"allowed: {sorted(_KNOWN)}"
            )
    if args is not None:
        flags = {
            "mode": getattr(args, "throttle", None),
            "ppn": getattr(args, "ppn", None),
            "bandwidth": getattr(args, "bandwidth_percent", None),
            "link_bandwidth": getattr(args, "link_bandwidth", None),
            "latency": getattr(args, "latency", None),
            "core_slots": getattr(args, "core_slots", None),
        }
        config.update({k: v for k, v in flags.items() if v is not None})
        for flag, section, key in _MACHINE_FLAGS:
            value = getattr(args, flag, None)
            if value is not None:
                current = config.get(section) or {}
                if isinstance(current, str):
                    current = {"placement": current}
                config[section] = {**current, key: value}
    mode = config.get("mode") or "none"
    if mode not in MODES:
        raise ValueError(f"comm mode must be one of {MODES}, got {mode!r}")
    ppn = config.get("ppn", 1)
    if isinstance(ppn, bool) or not isinstance(ppn, int) or ppn < 1:
        raise ValueError(f"comm setting 'ppn' must be a positive integer, got {ppn!r}")
    core_slots = config.get("core_slots")
    if core_slots is not None and (
        isinstance(core_slots, bool)
        or not isinstance(core_slots, int)
        or core_slots < 0
    ):
        raise ValueError(
            f"comm setting 'core_slots' must be an integer >= 0 (0 = off), "
            f"got {core_slots!r}"
        )
    try:
        topology = Topology.from_config(config.get("topology") or {})
        allocation = Allocation.from_config(config.get("allocation") or {})
    except (TypeError, ValueError) as error:
        raise ValueError(f"comm setting: {error}") from None
    return {
        "mode": mode,
        "ppn": ppn,
        "link": LinkModel.from_config(config),
        "core_slots": core_slots,
        "slot_dir": config.get("slot_dir"),
        "topology": topology,
        "allocation": allocation,
    }
