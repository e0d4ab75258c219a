"""The link a kernel applies: the launch's, with a hand-run kernel's flags over it.

A launch carries its :class:`~scaleprobe.kernels.schema.LinkConfig` in the environment
variable :data:`~scaleprobe.kernels.schema.LINK_ENV`; a kernel started by hand may set
or override it with the flags of :func:`add_comm_arguments`. :func:`resolve_config`
merges both into the one :class:`~scaleprobe.kernels.schema.LinkConfig` the
communicator applies.
"""

from __future__ import annotations

from scaleprobe.kernels.schema import ALLOCATION_PLACEMENTS, THROTTLE_MODES, LinkConfig

__all__ = ["add_comm_arguments", "resolve_config"]

#: The link's flags: (flag, LinkConfig field, argparse keywords).
_LINK_FLAGS = (
    (
        "throttle",
        "mode",
        {
            "choices": THROTTLE_MODES,
            "help": "none: real interconnect and wall time; "
            "emulated: throttled link in virtual time; "
            "netns: link shaped by the network, wall time",
        },
    ),
    ("ppn", "ppn", {"type": int, "help": "ranks per node"}),
    (
        "bandwidth_percent",
        "bandwidth",
        {"type": float, "help": "percent of the link bandwidth (throttle)"},
    ),
    (
        "link_bandwidth",
        "link_bandwidth",
        {"help": 'link bandwidth, e.g. "1 Gbit/s" or bytes/s'},
    ),
    ("latency", "latency", {"help": 'link latency, e.g. "5 us"'}),
    (
        "core_slots",
        "core_slots",
        {"type": int, "help": "ranks of this host computing at once (0 = no limit)"},
    ),
)

#: The emulated machine's flags: (flag, LinkConfig section, key, argparse keywords).
_MACHINE_FLAGS = (
    (
        "allocation",
        "allocation",
        "placement",
        {
            "choices": ALLOCATION_PLACEMENTS,
            "help": "placement of the job's nodes on the machine",
        },
    ),
    (
        "machine_nodes",
        "allocation",
        "machine_nodes",
        {"type": int, "help": "nodes of the machine (default: the job's)"},
    ),
    (
        "allocation_seed",
        "allocation",
        "seed",
        {"type": int, "help": "seed of a random allocation (default 0)"},
    ),
    (
        "nodes_per_switch",
        "topology",
        "nodes_per_switch",
        {"type": int, "help": "nodes per leaf switch (default 18)"},
    ),
    (
        "switches_per_rack",
        "topology",
        "switches_per_rack",
        {"type": int, "help": "leaf switches per rack (default: no racks)"},
    ),
    (
        "oversubscription",
        "topology",
        "oversubscription",
        {"type": float, "help": "down/up bandwidth ratio of a leaf switch (default 1)"},
    ),
)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


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
    for flag, _, options in _LINK_FLAGS:
        group.add_argument(_flag(flag), default=None, **options)
    machine = parser.add_argument_group("emulated machine")
    for flag, _, _, options in _MACHINE_FLAGS:
        machine.add_argument(_flag(flag), default=None, **options)


def resolve_config(args=None, environ=None) -> LinkConfig:
    """The link to apply: the launch's (:data:`~scaleprobe.kernels.schema.LINK_ENV`)
    with the command line's flags put over it.

    Parameters
    ----------
    args : argparse.Namespace, optional
        Parsed flags from :func:`add_comm_arguments`; only those set count.
    environ : mapping, optional
        Environment to read; :data:`os.environ` by default.

    Returns
    -------
    LinkConfig
        Mode ``none`` and the defaults when neither says anything.

    Raises
    ------
    ValueError
        Bad JSON, an unknown key or an invalid value; the message names it.

    Examples
    --------
    >>> link = resolve_config(environ={"SCALEPROBE_LINK": '{"mode": "emulated"}'})
    >>> link.mode, link.ppn
    ('emulated', 1)
    """
    link = LinkConfig.from_env(environ)
    if args is None:
        return link
    values = link.to_dict()
    for flag, field, _ in _LINK_FLAGS:
        if getattr(args, flag, None) is not None:
            values[field] = getattr(args, flag)
    for flag, section, key, _ in _MACHINE_FLAGS:
        if getattr(args, flag, None) is not None:
            values[section] = {**values[section], key: getattr(args, flag)}
    return LinkConfig.from_dict(values)
