"""Configuration of the communicator: the launch's link and command-line flags.

A launch carries its :class:`~scaleprobe.kernels.schema.LinkConfig` in the environment
variable :data:`~scaleprobe.kernels.schema.LINK_ENV`; a kernel started by hand may set
or override it with the flags of :func:`add_comm_arguments`.
"""

from __future__ import annotations

from scaleprobe.kernels.schema import LINK_ENV, THROTTLE_MODES, LinkConfig

from ._link import LinkModel
from ._topology import Allocation, Topology

__all__ = ["ENVIRONMENT_VARIABLE", "MODES", "add_comm_arguments", "resolve_config"]

#: The environment variable of a launch's link (``LINK_ENV`` of the schema).
ENVIRONMENT_VARIABLE = LINK_ENV
MODES = THROTTLE_MODES
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

    Flags left unset fall back to the launch's link (see :func:`resolve_config`).

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
    """Merge the launch's link (:data:`ENVIRONMENT_VARIABLE`) with command-line flags.

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
    >>> resolve_config(environ={"SCALEPROBE_LINK": '{"mode": "emulated", "ppn": 2}'})
    ... # doctest: +ELLIPSIS
    {'mode': 'emulated', 'ppn': 2, 'link': LinkModel(...), 'core_slots': None, ...}
    """
    link = LinkConfig.from_env(environ)
    if args is not None:
        link = _with_flags(link, args)
    try:
        topology = Topology.from_config(link.topology.to_dict())
        allocation = Allocation.from_config(link.allocation.to_dict())
    except (TypeError, ValueError) as error:
        raise ValueError(f"comm setting: {error}") from None
    return {
        "mode": link.mode,
        "ppn": link.ppn,
        "link": LinkModel.from_config(link.to_dict()),
        "core_slots": link.core_slots,
        "slot_dir": link.slot_dir,
        "topology": topology,
        "allocation": allocation,
    }


def _with_flags(link: LinkConfig, args) -> LinkConfig:
    """``link`` with the command line's flags (set ones only) put over it."""
    values = link.to_dict()
    flags = {
        "mode": getattr(args, "throttle", None),
        "ppn": getattr(args, "ppn", None),
        "bandwidth": getattr(args, "bandwidth_percent", None),
        "link_bandwidth": getattr(args, "link_bandwidth", None),
        "latency": getattr(args, "latency", None),
        "core_slots": getattr(args, "core_slots", None),
    }
    values.update({k: v for k, v in flags.items() if v is not None})
    for flag, section, key in _MACHINE_FLAGS:
        value = getattr(args, flag, None)
        if value is not None:
            values[section] = {**values[section], key: value}
    return LinkConfig.from_dict(values)
