"""The seams of scaleprobe as types: what a launch asks for and what a kernel answers.

Two values cross process boundaries on every sweep point:

- :class:`LinkConfig`, the throttled interconnect a launch asks for. It leaves the
  spec once, travels to the ranks as one environment variable (:meth:`LinkConfig.
  to_env` / :meth:`LinkConfig.from_env`), comes back in the kernel's record as the
  link the kernel applied (:meth:`LinkConfig.to_dict`), and is kept by the store as
  typed attributes of the ``bandwidth`` coordinate (:meth:`LinkConfig.to_attrs` /
  :meth:`LinkConfig.from_attrs`), where the models read it.
- :class:`Record`, what a kernel prints on rank 0: metrics with units, trials,
  profiles, the link it applied and the ranks and hosts it saw
  (:class:`Placement`). It is validated when it is written and when it is read; a
  record whose rank count differs from its point's is invalid (:meth:`Record.
  mismatch`).

The column names every layer uses (the critical-path parts, the collectives, FiM's
measurements) are defined here once. This module imports only the standard library:
kernels import it in every MPI rank, the framework on the client and the workers,
the models when they read a store.

Examples
--------
>>> link = LinkConfig(mode="emulated", link_bandwidth=1.25e8).at(bandwidth=50, ppn=2)
>>> LinkConfig.from_env(link.to_env()) == link
True
>>> link.effective_bandwidth
62500000.0
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

from scaleprobe.kernels.units import UnitError, parse_bandwidth, parse_duration

__all__ = [
    "ALLOCATION_PLACEMENTS",
    "COLLECTIVE_KINDS",
    "COLLECTIVE_LATENCY_COLUMNS",
    "CRITICAL_PATH_COLUMNS",
    "FIM_COLUMNS",
    "LINK_COLUMNS",
    "LINK_DEFAULTS",
    "LINK_ENV",
    "NIC_SHARING",
    "RECORD_MARKER",
    "RECORD_STATUSES",
    "REPLICATE_COLUMNS",
    "SUMMARY_UNITS",
    "THREADS_ENV",
    "THROTTLE_MODES",
    "Allocation",
    "LinkConfig",
    "Placement",
    "Record",
    "RecordError",
    "Topology",
]

# --------------------------------------------------------------------------- names

#: How the interconnect is throttled: ``none`` (the real one, wall time),
#: ``emulated`` (a link model in virtual time), ``netns`` (real TCP links shaped
#: between network namespaces).
THROTTLE_MODES = ("none", "emulated", "netns")

#: How concurrent messages share a node's interface (see :class:`LinkConfig`).
NIC_SHARING = ("flows", "fair", "exclusive")

#: Where a job's nodes sit on the emulated machine (see :class:`Allocation`).
ALLOCATION_PLACEMENTS = ("compact", "random")

#: The environment variable that carries a launch's :class:`LinkConfig`.
LINK_ENV = "SCALEPROBE_LINK"

#: The environment variable that carries a launch's threads per rank (the sweep key
#: ``threads``); the harness reads it as the default of every kernel's
#: ``--threads``.
THREADS_ENV = "SCALEPROBE_THREADS"

#: The emulated link when nothing else is set, as a spec or the Dask configuration
#: (``scaleprobe.throttle.<key>``) writes it. :class:`LinkConfig` parses its field
#: defaults from here, and :mod:`scaleprobe.framework.config` installs them.
LINK_DEFAULTS = {
    "link-bandwidth": "1 Gbit/s",
    "latency": "5 us",
    "memory-bandwidth": "5 GB/s",
    "memory-latency": "0.5 us",
}

#: Columns of the critical path of the rank that finished last (seconds; emulated
#: mode): computation, inter-node latency, inter-node transfer, intra-node transfer.
CRITICAL_PATH_COLUMNS = (
    "cp_comp_time",
    "cp_latency_time",
    "cp_bandwidth_time",
    "cp_intra_time",
)

#: The latency that collectives over all ranks charged, by how their rounds grow
#: (``log2 p`` and ``p``; part of ``cp_latency_time``).
COLLECTIVE_LATENCY_COLUMNS = ("coll_tree_latency_time", "coll_linear_latency_time")

#: The absolute link of a row of a feature frame: full link bandwidth (bytes/s) and
#: latency (s), from :meth:`LinkConfig.from_attrs`.
LINK_COLUMNS = ("link_bandwidth", "latency")

#: Columns that index repeated measurements rather than configurations.
REPLICATE_COLUMNS = ("run", "trial")

#: Collectives whose time, calls and data points the iterative and NPB kernels
#: record per point (``<kind>_time``, ``_calls``, ``_jobs``, ``_job_bytes``).
COLLECTIVE_KINDS = (
    "scatter",
    "scatterv",
    "bcast",
    "gather",
    "gatherv",
    "reduce",
    "allgather",
    "allgatherv",
    "allreduce",
    "alltoall",
    "alltoallv",
)

#: FiM's per-point measurements of the computation and of the hardware.
FIM_COLUMNS = (
    "comp_time_iterations",
    "comp_time_iterations_mean",
    "stages",
    "working_set",
    "llc_bytes",
    "cache_sharers",
    "hw_utilisation",
    "hw_total_cycles",
    "hw_frequency",
)

#: Units of the instrumented communicator's whole-run summary, for a record.
SUMMARY_UNITS = {
    "time": "s",
    "wall_time": "s",
    "comp_time": "s",
    "comm_time": "s",
    "comp_time_max": "s",
    "comm_time_max": "s",
    "bytes_sent": "bytes",
    "bytes_inter": "bytes",
    "bytes_intra": "bytes",
    "messages": "1",
    "messages_inter": "1",
    "peak_rss": "bytes",
    "slot_wait_time": "s",
    "slot_timeouts": "1",
    **dict.fromkeys(CRITICAL_PATH_COLUMNS, "s"),
    **dict.fromkeys(COLLECTIVE_LATENCY_COLUMNS, "s"),
    "wait_time": "s",
    "SW": "1",
    "R": "1",
    "SWR": "1",
}

# ------------------------------------------------------------------------- helpers


def _fail(what: str, message: str):
    raise ValueError(f"{what}: {message}")


def _integer(value, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        # numpy integers and integral floats from JSON are integers too
        try:
            as_int = int(value)
        except (TypeError, ValueError):
            _fail(what, f"must be an integer >= {minimum}, got {value!r}")
        if isinstance(value, bool) or as_int != value:
            _fail(what, f"must be an integer >= {minimum}, got {value!r}")
        value = as_int
    if value < minimum:
        _fail(what, f"must be an integer >= {minimum}, got {value!r}")
    return value


def _number(value, what: str, *, low: float, low_open: bool, high=math.inf) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    below = number <= low if low_open else number < low
    if isinstance(value, bool) or math.isnan(number) or below or number > high:
        bound = f"> {low:g}" if low_open else f">= {low:g}"
        if math.isfinite(high):
            bound += f" and <= {high:g}"
        _fail(what, f"must be a number {bound}, got {value!r}")
    return number


def _rate(value, what: str) -> float:
    try:
        return parse_bandwidth(value)
    except UnitError as error:
        _fail(what, str(error))


def _seconds(value, what: str) -> float:
    # A latency of exactly zero is a legitimate idealisation; parse_duration wants > 0.
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    try:
        return parse_duration(value)
    except UnitError as error:
        _fail(what, str(error))


def _only(mapping, allowed, what: str) -> dict:
    if not isinstance(mapping, Mapping):
        _fail(what, f"must be a mapping, got {type(mapping).__name__}")
    unknown = sorted(set(map(str, mapping)) - set(allowed))
    if unknown:
        _fail(what, f"unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    return dict(mapping)


def _choice(value, allowed, what: str) -> str:
    if value not in allowed:
        _fail(what, f"must be one of {list(allowed)}, got {value!r}")
    return value


# ------------------------------------------------------------------------ machine


@dataclasses.dataclass(frozen=True)
class Topology:
    """Two levels of switches above the emulated nodes, with oversubscribed uplinks.

    Parameters
    ----------
    nodes_per_switch : int, default=18
        Machine nodes on one leaf switch (18 on the machine of Papadopoulou et al.
        2015).
    switches_per_rack : int, optional
        Leaf switches in one rack; None: no rack level (leaves meet at one spine).
    oversubscription : float, default=1.0
        Down-port bandwidth of a leaf over its uplink bandwidth (>= 1).
    rack_oversubscription : float, default=1.0
        The same ratio for a rack's uplink.
    hop_latency : float, default=0.0
        Seconds added per switch a message crosses beyond the first.

    Examples
    --------
    >>> Topology.from_dict({"nodes_per_switch": 4, "oversubscription": 2})
    ... # doctest: +ELLIPSIS
    Topology(nodes_per_switch=4, switches_per_rack=None, oversubscription=2.0, ...)
    >>> Topology(nodes_per_switch=0)
    Traceback (most recent call last):
    ...
    ValueError: topology nodes_per_switch: must be an integer >= 1, got 0
    """

    nodes_per_switch: int = 18
    switches_per_rack: int | None = None
    oversubscription: float = 1.0
    rack_oversubscription: float = 1.0
    hop_latency: float = 0.0

    def __post_init__(self):
        set_ = object.__setattr__
        set_(
            self,
            "nodes_per_switch",
            _integer(self.nodes_per_switch, "topology nodes_per_switch", 1),
        )
        if self.switches_per_rack is not None:
            set_(
                self,
                "switches_per_rack",
                _integer(self.switches_per_rack, "topology switches_per_rack", 1),
            )
        for key in ("oversubscription", "rack_oversubscription"):
            value = _number(
                getattr(self, key),
                f"topology {key}",
                low=1.0,
                low_open=False,
                high=math.inf,
            )
            if not math.isfinite(value):
                _fail(f"topology {key}", f"must be a finite number >= 1, got {value!r}")
            set_(self, key, value)
        set_(self, "hop_latency", _seconds(self.hop_latency, "topology hop_latency"))

    @classmethod
    def from_dict(cls, mapping) -> Topology:
        """Topology from a mapping of its fields (``hop_latency`` in s or ``"1 us"``).

        Parameters
        ----------
        mapping : mapping
            Any subset of the fields; unknown keys are refused.

        Returns
        -------
        Topology
        """
        return cls(**_only(mapping, _fields(cls), "topology"))

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (SI units).

        Returns
        -------
        dict
        """
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Allocation:
    """Where a job's nodes sit on the emulated machine.

    Parameters
    ----------
    placement : {"compact", "random"}, default="compact"
        Consecutive machine nodes, or distinct machine nodes drawn at random.
    machine_nodes : int, optional
        Nodes of the machine; default the job's own node count.
    seed : int, default=0
        Seed of a random placement.

    Examples
    --------
    >>> Allocation.from_dict("random").placement
    'random'
    >>> Allocation(placement="scattered")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: allocation placement: must be one of [...], got 'scattered'
    """

    placement: str = "compact"
    machine_nodes: int | None = None
    seed: int = 0

    def __post_init__(self):
        _choice(self.placement, ALLOCATION_PLACEMENTS, "allocation placement")
        if self.machine_nodes is not None:
            object.__setattr__(
                self,
                "machine_nodes",
                _integer(self.machine_nodes, "allocation machine_nodes", 1),
            )
        object.__setattr__(self, "seed", _integer(self.seed, "allocation seed", 0))

    @classmethod
    def from_dict(cls, mapping) -> Allocation:
        """Allocation from ``"compact"``, ``"random"`` or a mapping of its fields.

        Parameters
        ----------
        mapping : str or mapping

        Returns
        -------
        Allocation
        """
        if isinstance(mapping, str):
            return cls(placement=mapping)
        return cls(**_only(mapping, _fields(cls), "allocation"))

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict.

        Returns
        -------
        dict
        """
        return dataclasses.asdict(self)


def _fields(cls) -> tuple:
    return tuple(field.name for field in dataclasses.fields(cls))


# --------------------------------------------------------------------------- link


@dataclasses.dataclass(frozen=True)
class LinkConfig:
    """The interconnect one launch asks for: throttle mode, link model, machine.

    An inter-node message of ``n`` bytes costs ``latency + n / effective_bandwidth``
    with ``effective_bandwidth = link_bandwidth * bandwidth / 100``; an intra-node
    message ``memory_latency + n / memory_bandwidth``. Values are SI units (bytes/s,
    seconds); :meth:`from_dict` also takes strings with units (``"1 Gbit/s"``,
    ``"5 us"``). The defaults are :data:`LINK_DEFAULTS`.

    Parameters
    ----------
    mode : {"none", "emulated", "netns"}, default="none"
        ``none``: the real interconnect; ``emulated``: the link model in virtual
        time; ``netns``: real TCP links shaped between network namespaces.
    ppn : int, default=1
        Ranks per node.
    bandwidth : float, default=100.0
        Percentage of ``link_bandwidth`` the link delivers (the throttle).
    link_bandwidth : float, default=1.25e8
        Bandwidth of one node's network interface at 100 %, bytes/s.
    latency : float, default=5e-6
        Per-message latency between nodes, seconds.
    memory_bandwidth : float, default=5e9
        Bandwidth of a message between two ranks of one node, bytes/s.
    memory_latency : float, default=5e-7
        Per-message latency between two ranks of one node, seconds.
    nic_sharing : {"flows", "fair", "exclusive"}, default="flows"
        How concurrent messages share the network: max-min fair flows over every
        interface and switch link, a fixed ``1/ppn`` of the interface per rank, or
        the whole interface per rank (an optimistic bound).
    core_slots : int, optional
        Ranks of the host computing at once in mode ``emulated`` (0: no limit);
        None: the mode's default.
    slot_dir : str, optional
        Folder of the host's core-slot files; None: the default.
    topology : Topology, default=Topology()
        Switches of the emulated machine.
    allocation : Allocation, default=Allocation()
        Where the job's nodes sit on the emulated machine.

    Attributes
    ----------
    effective_bandwidth : float
        ``link_bandwidth * bandwidth / 100``, bytes/s.

    Examples
    --------
    >>> link = LinkConfig.from_dict({"mode": "emulated", "link_bandwidth": "10 Gbit/s",
    ...                              "latency": "1 us", "bandwidth": 25})
    >>> link.effective_bandwidth, link.latency
    (312500000.0, 1e-06)
    >>> LinkConfig(mode="emulated", bandwidth=0)
    Traceback (most recent call last):
    ...
    ValueError: link bandwidth: must be a number > 0 and <= 100, got 0
    """

    mode: str = "none"
    ppn: int = 1
    bandwidth: float = 100.0
    link_bandwidth: float = parse_bandwidth(LINK_DEFAULTS["link-bandwidth"])
    latency: float = parse_duration(LINK_DEFAULTS["latency"])
    memory_bandwidth: float = parse_bandwidth(LINK_DEFAULTS["memory-bandwidth"])
    memory_latency: float = parse_duration(LINK_DEFAULTS["memory-latency"])
    nic_sharing: str = "flows"
    core_slots: int | None = None
    slot_dir: str | None = None
    topology: Topology = dataclasses.field(default_factory=Topology)
    allocation: Allocation = dataclasses.field(default_factory=Allocation)

    #: Fields of the link itself, compared between what a point asks and what its
    #: kernel applied, per throttle mode: in mode ``none`` no model acts; ``netns``
    #: shapes the bandwidth only (the latency is the host's).
    ACTING: ClassVar[dict] = {
        "none": (),
        "emulated": ("bandwidth", "link_bandwidth", "latency"),
        "netns": ("bandwidth", "link_bandwidth"),
    }

    def __post_init__(self):
        set_ = object.__setattr__
        _choice(self.mode, THROTTLE_MODES, "link mode")
        set_(self, "ppn", _integer(self.ppn, "link ppn", 1))
        set_(
            self,
            "bandwidth",
            _number(
                self.bandwidth, "link bandwidth", low=0.0, low_open=True, high=100.0
            ),
        )
        for key in ("link_bandwidth", "memory_bandwidth"):
            value = _number(getattr(self, key), f"link {key}", low=0.0, low_open=True)
            set_(self, key, value)
        for key in ("latency", "memory_latency"):
            value = _number(getattr(self, key), f"link {key}", low=0.0, low_open=False)
            set_(self, key, value)
        _choice(self.nic_sharing, NIC_SHARING, "link nic_sharing")
        if self.core_slots is not None:
            set_(self, "core_slots", _integer(self.core_slots, "link core_slots", 0))
        if self.slot_dir is not None and not isinstance(self.slot_dir, str):
            _fail("link slot_dir", f"must be a path, got {self.slot_dir!r}")
        if not isinstance(self.topology, Topology):
            set_(self, "topology", Topology.from_dict(self.topology or {}))
        if not isinstance(self.allocation, Allocation):
            set_(self, "allocation", Allocation.from_dict(self.allocation or {}))

    @property
    def effective_bandwidth(self) -> float:
        """Inter-node bandwidth after throttling, bytes/s."""
        return self.link_bandwidth * self.bandwidth / 100.0

    def at(self, **changes) -> LinkConfig:
        """A copy with some fields changed (a point's ``bandwidth`` and ``ppn``).

        Parameters
        ----------
        **changes
            Fields and their new values.

        Returns
        -------
        LinkConfig
        """
        return dataclasses.replace(self, **changes)

    # ---------------------------------------------------------------- dicts

    @classmethod
    def from_dict(cls, mapping) -> LinkConfig:
        """Build a link from a mapping of its fields; missing fields take defaults.

        Bandwidths and latencies may be numbers in SI units or strings with units;
        ``bandwidth`` may be written ``"25 %"``. ``topology`` and ``allocation``
        are mappings of their fields (``allocation`` also ``"random"``).

        Parameters
        ----------
        mapping : mapping
            Any subset of the fields; unknown keys are refused.

        Returns
        -------
        LinkConfig

        Raises
        ------
        ValueError
            An unknown key or a bad value; the message names it and what is allowed.
        """
        values = _only(mapping, _fields(cls), "link")
        values = {key: value for key, value in values.items() if value is not None}
        for key in ("link_bandwidth", "memory_bandwidth"):
            if key in values:
                values[key] = _rate(values[key], f"link {key}")
        for key in ("latency", "memory_latency"):
            if key in values:
                values[key] = _seconds(values[key], f"link {key}")
        if isinstance(values.get("bandwidth"), str):
            text = values["bandwidth"].strip().removesuffix("%").strip()
            try:
                values["bandwidth"] = float(text)
            except ValueError:
                _fail("link bandwidth", f"is a percentage of the link, got {text!r}")
        if "topology" in values:
            values["topology"] = Topology.from_dict(values["topology"])
        if "allocation" in values:
            values["allocation"] = Allocation.from_dict(values["allocation"])
        return cls(**values)

    def to_dict(self) -> dict:
        """Every field as a JSON-ready dict in SI units.

        Returns
        -------
        dict
            ``LinkConfig.from_dict(link.to_dict()) == link``.
        """
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        values["topology"] = self.topology.to_dict()
        values["allocation"] = self.allocation.to_dict()
        return values

    # ---------------------------------------------------------- environment

    def to_env(self) -> dict:
        """The link as the environment of a launch: ``{LINK_ENV: json}``.

        Returns
        -------
        dict
        """
        return {LINK_ENV: json.dumps(self.to_dict(), separators=(",", ":"))}

    @classmethod
    def from_env(cls, environ=None) -> LinkConfig:
        """Read the link a launch asked for from :data:`LINK_ENV`.

        Parameters
        ----------
        environ : mapping, optional
            The environment; :data:`os.environ` by default.

        Returns
        -------
        LinkConfig
            The defaults (mode ``none``) when the variable is unset or empty.

        Raises
        ------
        ValueError
            Malformed JSON, an unknown key or a bad value.
        """
        environ = os.environ if environ is None else environ
        text = str(environ.get(LINK_ENV, "")).strip()
        if not text:
            return cls()
        try:
            mapping = json.loads(text)
        except json.JSONDecodeError as error:
            _fail(LINK_ENV, f"is not valid JSON: {error}")
        if not isinstance(mapping, dict):
            _fail(LINK_ENV, f"must be a JSON object, got {type(mapping).__name__}")
        return cls.from_dict(mapping)

    # ------------------------------------------------------- stored attributes

    def to_attrs(self) -> dict:
        """The link as typed attributes of a Dataset's ``bandwidth`` coordinate.

        Returns
        -------
        dict
            ``units`` and ``long_name`` of the coordinate and ``throttle_mode``;
            where a link model acts (:attr:`ACTING`) also ``link_bandwidth``
            (bytes/s, the rate of 100 %) and, in mode ``emulated``, ``latency`` (s),
            ``memory_bandwidth``, ``memory_latency`` and ``nic_sharing``; each
            number with a ``<name>_units`` attribute. In mode ``none`` the
            interconnect is the real one and its rate unknown, so none is given.

        Examples
        --------
        >>> attrs = LinkConfig(mode="netns", link_bandwidth=1e9).to_attrs()
        >>> sorted(attrs)[:2], attrs["throttle_mode"]
        (['link_bandwidth', 'link_bandwidth_units'], 'netns')
        """
        attrs = {
            "units": "percent",
            "long_name": "share of the link bandwidth",
            "throttle_mode": self.mode,
        }
        if self.mode == "none":
            return attrs
        attrs.update(link_bandwidth=self.link_bandwidth, link_bandwidth_units="bytes/s")
        if self.mode == "emulated":
            attrs.update(
                latency=self.latency,
                latency_units="s",
                memory_bandwidth=self.memory_bandwidth,
                memory_bandwidth_units="bytes/s",
                memory_latency=self.memory_latency,
                memory_latency_units="s",
                nic_sharing=self.nic_sharing,
            )
        return attrs

    @classmethod
    def from_attrs(cls, attrs) -> LinkConfig | None:
        """The link a Dataset was measured on, from :meth:`to_attrs`'s attributes.

        Parameters
        ----------
        attrs : mapping
            Attributes of the ``bandwidth`` coordinate. Stores written before the
            link was typed keep it as a ``link_model`` JSON text among the
            Dataset's attributes; pass those to read it.

        Returns
        -------
        LinkConfig or None
            None when the attributes name no throttle mode or link.

        Examples
        --------
        >>> attrs = LinkConfig(mode="emulated", latency=1e-6).to_attrs()
        >>> LinkConfig.from_attrs(attrs).latency
        1e-06
        >>> LinkConfig.from_attrs({"units": "percent"}) is None
        True
        """
        if isinstance(attrs.get("link_model"), (str, dict)):
            return cls._from_legacy(attrs)
        mode = attrs.get("throttle_mode")
        if mode not in THROTTLE_MODES:
            return None
        keys = ("link_bandwidth", "latency", "memory_bandwidth", "memory_latency")
        values = {key: float(attrs[key]) for key in keys if key in attrs}
        if "nic_sharing" in attrs:
            values["nic_sharing"] = str(attrs["nic_sharing"])
        return cls(mode=mode, **values)

    @classmethod
    def _from_legacy(cls, attrs) -> LinkConfig | None:
        text = attrs["link_model"]
        try:
            mapping = json.loads(text) if isinstance(text, str) else dict(text)
        except json.JSONDecodeError:
            return None
        mode = mapping.get("mode", attrs.get("throttle_mode"))
        keys = ("link_bandwidth", "latency", "memory_bandwidth", "memory_latency")
        values = {k: mapping[k] for k in keys if mapping.get(k) is not None}
        try:
            return cls.from_dict({"mode": mode or "none", **values})
        except ValueError:
            return None

    # ------------------------------------------------------------- comparison

    def mismatch(self, applied: LinkConfig) -> str:
        """Say how the link a kernel applied differs from this one, or ``""``.

        Compares the throttle mode, the ranks per node and, where a link model acts
        in the mode (:attr:`ACTING`), the bandwidth share, the link rate and the
        latency.

        Parameters
        ----------
        applied : LinkConfig
            The link the kernel reports in its record.

        Returns
        -------
        str
            One line naming every difference; empty when they agree.

        Examples
        --------
        >>> asked = LinkConfig(mode="emulated", bandwidth=50)
        >>> asked.mismatch(asked.at(bandwidth=100.0))
        'the kernel applied bandwidth 100 % but the point asks 50 %'
        """
        problems = []
        if applied.mode != self.mode:
            problems.append(
                f"throttle mode {applied.mode!r} but the point asks {self.mode!r}"
            )
        else:
            units = {"bandwidth": "%", "link_bandwidth": "bytes/s", "latency": "s"}
            for key in self.ACTING[self.mode]:
                mine, theirs = getattr(self, key), getattr(applied, key)
                if not math.isclose(mine, theirs, rel_tol=1e-9, abs_tol=0.0):
                    name = key.replace("_", " ")
                    problems.append(
                        f"{name} {theirs:g} {units[key]} but the point asks "
                        f"{mine:g} {units[key]}"
                    )
        if applied.ppn != self.ppn:
            problems.append(
                f"{applied.ppn} ranks per node but the point asks {self.ppn}"
            )
        return "the kernel applied " + "; ".join(problems) if problems else ""


# ------------------------------------------------------------------------- record

#: The prefix of the one line of standard output that holds a kernel's record.
RECORD_MARKER = "SCALEPROBE-RECORD "

#: What a kernel may say of its own point: measured, or not a valid measurement.
RECORD_STATUSES = ("ok", "invalid")


class RecordError(ValueError):
    """A kernel's output holds no record, or a record of the wrong shape."""


@dataclasses.dataclass(frozen=True)
class Placement:
    """The ranks a program saw, and how they sat on hosts.

    Parameters
    ----------
    ranks : int
        Size of ``MPI_COMM_WORLD`` as the program saw it.
    hosts : tuple of str
        Host names (``MPI_Get_processor_name``, or the SLURM node name), in the
        order of each host's lowest rank.
    ranks_per_host : tuple of int
        Ranks on each of ``hosts``.

    Examples
    --------
    >>> seen = Placement(ranks=4, hosts=("n1", "n2"), ranks_per_host=(2, 2))
    >>> seen.mismatch(ranks=4, nodes=2, ppn=2)
    ''
    >>> Placement(ranks=4, hosts=("n1",), ranks_per_host=(4,)).mismatch(
    ...     ranks=4, nodes=2, ppn=2)
    'the program ran 4 ranks on 1 host (n1: 4) but the point asks 2 nodes of 2 ranks'
    """

    ranks: int
    hosts: tuple = ()
    ranks_per_host: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "ranks", _integer(self.ranks, "placement ranks", 1))
        hosts = tuple(str(h) for h in self.hosts)
        counts = tuple(
            _integer(c, "placement ranks_per_host", 1) for c in self.ranks_per_host
        )
        if len(hosts) != len(counts):
            _fail(
                "placement",
                f"{len(hosts)} hosts but {len(counts)} counts of ranks per host",
            )
        if counts and sum(counts) != self.ranks:
            _fail(
                "placement",
                f"ranks per host {list(counts)} sum to {sum(counts)}, not to "
                f"{self.ranks} ranks",
            )
        object.__setattr__(self, "hosts", hosts)
        object.__setattr__(self, "ranks_per_host", counts)

    def mismatch(self, *, ranks: int, nodes: int | None = None, ppn=None) -> str:
        """Say how this placement differs from the one a point asks for, or ``""``.

        Parameters
        ----------
        ranks : int
            Ranks the point asks for.
        nodes, ppn : int, optional
            Hosts and ranks per host the point asks for; given only where the
            point's nodes are real hosts (throttle mode ``none`` on a cluster), not
            where they are emulated on one host.

        Returns
        -------
        str
        """
        if self.ranks != int(ranks):
            return (
                f"the program ran as {self.ranks} rank(s) but the point asks {ranks} "
                "(was it launched by another MPI's mpiexec?)"
            )
        if nodes is None or not self.hosts:
            return ""
        wanted = (int(ppn),) * int(nodes) if ppn is not None else None
        if len(self.hosts) == int(nodes) and (
            wanted is None or self.ranks_per_host == wanted
        ):
            return ""
        seen = ", ".join(
            f"{h}: {c}" for h, c in zip(self.hosts, self.ranks_per_host, strict=True)
        )
        plural = "host" if len(self.hosts) == 1 else "hosts"
        asked = f"{nodes} nodes" + (f" of {ppn} ranks" if ppn is not None else "")
        return (
            f"the program ran {self.ranks} ranks on {len(self.hosts)} {plural} "
            f"({seen}) but the point asks {asked}"
        )

    def to_dict(self) -> dict:
        """JSON-ready fields.

        Returns
        -------
        dict
        """
        return {
            "ranks": self.ranks,
            "hosts": list(self.hosts),
            "ranks_per_host": list(self.ranks_per_host),
        }

    @classmethod
    def from_dict(cls, mapping) -> Placement:
        """Placement from :meth:`to_dict`'s mapping.

        Parameters
        ----------
        mapping : mapping

        Returns
        -------
        Placement
        """
        values = _only(mapping, _fields(cls), "placement")
        if "ranks" not in values:
            _fail("placement", "needs 'ranks'")
        return cls(
            ranks=values["ranks"],
            hosts=tuple(values.get("hosts", ())),
            ranks_per_host=tuple(values.get("ranks_per_host", ())),
        )


def _json_safe(value: Any) -> Any:
    """Make numpy scalars and arrays and non-finite floats JSON-safe."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return _json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


_SCALAR = (int, float, str, bool, type(None))


def _check_scalars(mapping, what: str) -> dict:
    if not isinstance(mapping, Mapping):
        raise RecordError(
            f"record {what} must be an object, got {type(mapping).__name__}"
        )
    for key, value in mapping.items():
        if not isinstance(value, _SCALAR):
            raise RecordError(
                f"record {what} {key!r} must be a number, text, true/false or null, "
                f"got {type(value).__name__}"
            )
    return dict(mapping)


def _check_parameters(mapping) -> dict:
    if not isinstance(mapping, Mapping):
        raise RecordError("record parameters must be an object")
    for key, value in mapping.items():
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(item, _SCALAR) for item in items):
            raise RecordError(
                f"record parameter {key!r} must be a number, text, true/false, null "
                "or a list of them"
            )
    return dict(mapping)


def _check_text_map(mapping, what: str) -> dict:
    if not isinstance(mapping, Mapping) or not all(
        isinstance(v, str) for v in mapping.values()
    ):
        raise RecordError(f"record {what} must map names to text")
    return dict(mapping)


def _check_trials(trials) -> tuple:
    if not isinstance(trials, (list, tuple)) or not all(
        isinstance(t, Mapping) for t in trials
    ):
        raise RecordError("record trials must be a list of objects")
    return tuple(dict(t) for t in trials)


def _check_profiles(profiles) -> dict:
    if not isinstance(profiles, Mapping):
        raise RecordError("record profiles must map a dimension to its arrays")
    for dim, arrays in profiles.items():
        if not isinstance(arrays, Mapping) or not all(
            isinstance(a, (list, tuple)) for a in arrays.values()
        ):
            raise RecordError(
                f"record profile {dim!r} must map variable names to lists"
            )
    return {str(k): dict(v) for k, v in profiles.items()}


@dataclasses.dataclass(frozen=True)
class Record:
    """What a kernel reports of one launch, printed as one marked JSON line.

    Parameters
    ----------
    metrics : dict
        Scalars of the point (``time``, ``teps``...): numbers, text, booleans or
        None; each becomes a variable over the sweep's dimensions.
    kernel : str, default=""
        The kernel's registered name.
    status : {"ok", "invalid"}, default="ok"
        ``invalid`` when the kernel could not measure what the point asks (too few
        ranks, a failed verification); ``reason`` says why.
    reason : str, default=""
        Why the point is invalid.
    units : dict, default={}
        Unit of each metric, trial variable or profile variable (``"s"``,
        ``"bytes"``, ``"1"``).
    long_names : dict, default={}
        Long names of the variables.
    trials : tuple of dict, default=()
        One mapping per repeated measurement inside the run; each key becomes a
        variable over the sweep's dimensions plus ``trial``. A trial may carry its
        own ``profiles``.
    profiles : dict, default={}
        Arrays over a new dimension, ``{dimension: {variable: list}}``.
    link : LinkConfig, optional
        The link the kernel applied; checked against the point's.
    placement : Placement, optional
        The ranks and hosts the program saw; checked against the point's.
    parameters : dict, default={}
        The kernel's parameters as it ran them, defaults included (numbers, text,
        booleans, None or lists of them).
    threads : int, default=1
        Threads each rank ran its computation on (the sweep key ``threads``);
        checked against the point's.

    Examples
    --------
    >>> record = Record(metrics={"time": 1.5}, units={"time": "s"}, kernel="demo")
    >>> Record.parse("noise\\n" + record.to_line()) == record
    True
    >>> Record(metrics={}, status="invalid")
    Traceback (most recent call last):
    ...
    scaleprobe.kernels.schema.RecordError: an invalid record needs a reason
    """

    metrics: dict
    kernel: str = ""
    status: str = "ok"
    reason: str = ""
    units: dict = dataclasses.field(default_factory=dict)
    long_names: dict = dataclasses.field(default_factory=dict)
    trials: tuple = ()
    profiles: dict = dataclasses.field(default_factory=dict)
    link: LinkConfig | None = None
    placement: Placement | None = None
    parameters: dict = dataclasses.field(default_factory=dict)
    threads: int = 1

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "metrics", _check_scalars(_json_safe(self.metrics), "metrics"))
        if self.status not in RECORD_STATUSES:
            raise RecordError(
                f"record status must be one of {list(RECORD_STATUSES)}, "
                f"got {self.status!r}"
            )
        if self.status == "invalid" and not str(self.reason).strip():
            raise RecordError("an invalid record needs a reason")
        set_(self, "units", _check_text_map(self.units, "units"))
        set_(self, "long_names", _check_text_map(self.long_names, "long_names"))
        set_(self, "trials", _check_trials(_json_safe(list(self.trials))))
        set_(self, "profiles", _check_profiles(_json_safe(self.profiles)))
        if self.link is not None and not isinstance(self.link, LinkConfig):
            raise RecordError("record link must be a LinkConfig")
        if self.placement is not None and not isinstance(self.placement, Placement):
            raise RecordError("record placement must be a Placement")
        set_(self, "parameters", _check_parameters(_json_safe(self.parameters)))
        threads = self.threads
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise RecordError(
                f"record threads must be an integer >= 1, got {threads!r}"
            )

    @classmethod
    def invalid(cls, kernel: str, reason: str, **fields) -> Record:
        """A record that says the point could not be measured, and why.

        Parameters
        ----------
        kernel : str
            The kernel's name.
        reason : str
            One line: what was wrong and what is allowed.
        **fields
            Other fields (``link``, ``placement``).

        Returns
        -------
        Record
        """
        return cls(metrics={}, kernel=kernel, status="invalid", reason=reason, **fields)

    def mismatch(
        self, *, link: LinkConfig | None = None, threads: int | None = None, **point
    ) -> str:
        """Say how what the kernel saw differs from what its point asks, or ``""``.

        Parameters
        ----------
        link : LinkConfig, optional
            The link the point asks for; compared with :attr:`link` when both are
            known.
        threads : int, optional
            Threads per rank the point asks for; compared with :attr:`threads`.
        **point
            ``ranks`` and, where the point's nodes are real hosts, ``nodes`` and
            ``ppn``: compared with :attr:`placement` when the record has one.

        Returns
        -------
        str
            One line naming every difference; empty when they agree.
        """
        problems = []
        if link is not None and self.link is not None:
            problems.append(link.mismatch(self.link))
        if self.placement is not None and "ranks" in point:
            problems.append(self.placement.mismatch(**point))
        if threads is not None and self.threads != int(threads):
            problems.append(
                f"the program ran {self.threads} thread(s) per rank but the point "
                f"asks {threads}"
            )
        return "; ".join(p for p in problems if p)

    # ------------------------------------------------------------- serialise

    def to_dict(self) -> dict:
        """The record as a JSON-ready dict (empty fields left out).

        Returns
        -------
        dict
        """
        out = {"kernel": self.kernel, "status": self.status, "metrics": self.metrics}
        optional = {
            "reason": self.reason,
            "units": self.units,
            "long_names": self.long_names,
            "trials": list(self.trials),
            "profiles": self.profiles,
            "link": self.link.to_dict() if self.link is not None else None,
            "placement": (
                self.placement.to_dict() if self.placement is not None else None
            ),
            "parameters": self.parameters,
            "threads": self.threads if self.threads != 1 else None,
        }
        out.update({key: value for key, value in optional.items() if value})
        return out

    @classmethod
    def from_dict(cls, mapping) -> Record:
        """Validate and build a record from its JSON object.

        Parameters
        ----------
        mapping : mapping

        Returns
        -------
        Record

        Raises
        ------
        RecordError
            Unknown keys, a missing ``metrics`` object or values of the wrong shape.
        """
        if not isinstance(mapping, Mapping) or not isinstance(
            mapping.get("metrics"), Mapping
        ):
            raise RecordError("the kernel record has no 'metrics' object")
        unknown = sorted(set(mapping) - set(_fields(cls)))
        if unknown:
            raise RecordError(
                f"the kernel record has unknown key(s) {unknown}; allowed: "
                f"{sorted(_fields(cls))}"
            )
        values = dict(mapping)
        try:
            if values.get("link") is not None:
                values["link"] = LinkConfig.from_dict(values["link"])
            if values.get("placement") is not None:
                values["placement"] = Placement.from_dict(values["placement"])
        except ValueError as error:
            raise RecordError(f"the kernel record's {error}") from None
        values["trials"] = tuple(values.get("trials") or ())
        return cls(**values)

    def to_line(self) -> str:
        """The record as its marked line of standard output (no newline).

        Returns
        -------
        str
        """
        return RECORD_MARKER + json.dumps(
            _json_safe(self.to_dict()), separators=(",", ":"), allow_nan=False
        )

    def emit(self, stream=None) -> str:
        """Print :meth:`to_line` (call it on one rank only: rank 0).

        Parameters
        ----------
        stream : file-like, optional
            Where to print; standard output by default.

        Returns
        -------
        str
            The line printed.
        """
        line = self.to_line()
        print(line, file=sys.stdout if stream is None else stream, flush=True)
        return line

    @classmethod
    def parse(cls, stdout: str) -> Record:
        """Find, decode and validate the one record in a launch's standard output.

        Parameters
        ----------
        stdout : str
            Everything the launch printed on standard output.

        Returns
        -------
        Record

        Raises
        ------
        RecordError
            No marked line, more than one, malformed JSON or a record of the wrong
            shape.
        """
        lines = [ln for ln in stdout.splitlines() if ln.startswith(RECORD_MARKER)]
        if not lines:
            raise RecordError(
                "the kernel printed no record line (no 'SCALEPROBE-RECORD')"
            )
        if len(lines) > 1:
            raise RecordError(
                f"the kernel printed {len(lines)} record lines; exactly one is "
                "expected (emit the record on rank 0 only)"
            )
        try:
            mapping = json.loads(lines[0][len(RECORD_MARKER) :])
        except json.JSONDecodeError as error:
            raise RecordError(f"the kernel record is not valid JSON: {error}") from None
        return cls.from_dict(mapping)
