"""The emulated machine: where a job's nodes sit and which links a message crosses.

:class:`Allocation` places the job's ``N`` nodes on a machine of ``machine_nodes``
nodes, compactly or at random (seeded), as a batch system on a busy machine does.
:class:`Topology` groups machine nodes ``nodes_per_switch`` to a leaf switch and
leaf switches ``switches_per_rack`` to a rack. :class:`Network` turns both, with the
:class:`~scaleprobe.kernels.comm.LinkModel`, into links with capacities and the route
of every node pair:

- every node has an injection link (its NIC sending) and an ejection link (its NIC
  receiving), each of the effective bandwidth ``B``;
- with a topology, every leaf switch has an uplink and a downlink of
  ``nodes_per_switch * B / oversubscription``, and with racks every rack an uplink
  and a downlink of ``switches_per_rack * leaf_uplink / rack_oversubscription``;
- a message between nodes of one switch crosses ``injection, ejection``; between
  switches of one rack (or of a machine without racks) also the two leaf links;
  between racks also the two rack links. Each switch beyond the first adds
  ``hop_latency``.

Without a topology the nodes hang on one non-blocking switch: only the NICs are
shared. Every capacity is proportional to ``B``, so throttling the link scales every
transfer time by the same factor. This module imports only numpy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .pattern import ALLOCATIONS, place_nodes

__all__ = ["Allocation", "Network", "Topology"]


def _positive_int(value, key, minimum=1):
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or (value < minimum)
    ):
        raise ValueError(f"{key} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _at_least_one(value, key):
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not number >= 1.0 or not np.isfinite(number):
        raise ValueError(f"{key} must be a number >= 1, got {value!r}")
    return number


def _only(config, allowed, what):
    if not isinstance(config, dict):
        raise ValueError(f"{what} must be a mapping, got {type(config).__name__}")
    unknown = sorted(set(config) - set(allowed))
    if unknown:
        raise ValueError(
            f"{what} has unknown key(s) {unknown}; allowed: {sorted(allowed)}"
        )


@dataclass(frozen=True)
class Topology:
    """Two levels of switches above the nodes, with oversubscribed uplinks.

    Parameters
    ----------
    nodes_per_switch : int, default=18
        Machine nodes on one leaf switch (18 on the machine of Papadopoulou et al.).
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
    >>> Topology.from_config({"nodes_per_switch": 4, "oversubscription": 2})
    ... # doctest: +ELLIPSIS
    Topology(nodes_per_switch=4, switches_per_rack=None, oversubscription=2.0, ...)
    """

    nodes_per_switch: int = 18
    switches_per_rack: int | None = None
    oversubscription: float = 1.0
    rack_oversubscription: float = 1.0
    hop_latency: float = 0.0

    def __post_init__(self):
        _positive_int(self.nodes_per_switch, "topology nodes_per_switch")
        if self.switches_per_rack is not None:
            _positive_int(self.switches_per_rack, "topology switches_per_rack")
        for key in ("oversubscription", "rack_oversubscription"):
            object.__setattr__(
                self, key, _at_least_one(getattr(self, key), f"topology {key}")
            )
        if not float(self.hop_latency) >= 0:
            raise ValueError(
                f"topology hop_latency must be >= 0 s, got {self.hop_latency!r}"
            )

    @classmethod
    def from_config(cls, config):
        """Topology from a dict of its fields (``hop_latency`` in s or ``"1 us"``).

        Parameters
        ----------
        config : dict

        Returns
        -------
        Topology
        """
        _only(config, cls.__dataclass_fields__, "topology")
        values = dict(config)
        if "hop_latency" in values:
            from ._link import _duration

            values["hop_latency"] = _duration(values["hop_latency"], "hop_latency")
        return cls(**values)

    def to_config(self):
        """The fields as a JSON-ready dict (SI units)."""
        return asdict(self)


@dataclass(frozen=True)
class Allocation:
    """Where a job's nodes sit on the machine.

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
    >>> Allocation.from_config("random").placement
    'random'
    >>> Allocation(machine_nodes=64, placement="random", seed=1).place(4).tolist()
    [28, 31, 47, 60]
    """

    placement: str = "compact"
    machine_nodes: int | None = None
    seed: int = 0

    def __post_init__(self):
        if self.placement not in ALLOCATIONS:
            raise ValueError(
                f"allocation placement must be one of {ALLOCATIONS}, got "
                f"{self.placement!r}"
            )
        if self.machine_nodes is not None:
            _positive_int(self.machine_nodes, "allocation machine_nodes")
        _positive_int(self.seed, "allocation seed", minimum=0)

    @classmethod
    def from_config(cls, config):
        """Allocation from ``"compact"``, ``"random"`` or a dict of its fields.

        Parameters
        ----------
        config : str or dict

        Returns
        -------
        Allocation
        """
        if isinstance(config, str):
            return cls(placement=config)
        _only(config, cls.__dataclass_fields__, "allocation")
        return cls(**config)

    def to_config(self):
        """The fields as a JSON-ready dict."""
        return asdict(self)

    def place(self, nodes):
        """Machine node of each of ``nodes`` job nodes (see ``place_nodes``).

        Parameters
        ----------
        nodes : int

        Returns
        -------
        numpy.ndarray of int
        """
        return place_nodes(
            nodes,
            allocation=self.placement,
            machine_nodes=self.machine_nodes,
            seed=self.seed,
        )


class Network:
    """Links, capacities and routes of a job's nodes on the emulated machine.

    Parameters
    ----------
    nodes : int
        Nodes of the job.
    bandwidth : float
        Effective (throttled) NIC bandwidth ``B``, bytes/s.
    latency : float
        Latency of a message between two nodes of one switch, s.
    topology : Topology, optional
        Default ``Topology()``: 18 nodes per switch, no racks, no oversubscription.
    allocation : Allocation, optional
        Default compact on a machine of exactly ``nodes`` nodes.

    Attributes
    ----------
    placement : numpy.ndarray of int
        Machine node of each job node.
    switch, rack : numpy.ndarray of int
        Leaf switch and rack of each job node.
    capacity : numpy.ndarray of float
        Bytes/s of every link: injections ``0..N-1``, ejections ``N..2N-1``, then
        the up- and downlinks of the switches and racks the job touches. Uplinks
        exist only where they can be a bottleneck (an oversubscription above 1):
        at 1 a leaf's uplink carries all its nodes' NICs at once.
    uplinks : bool
        Whether switch links or hop latencies change anything.

    Examples
    --------
    Two switches of two nodes, uplinks oversubscribed 2:1:

    >>> net = Network(4, 100.0, 1e-6, Topology(nodes_per_switch=2,
    ...                                        oversubscription=2.0))
    >>> net.route(0, 1), net.route(0, 3)
    ((0, 5), (0, 7, 8, 11))
    >>> float(net.capacity[8])
    100.0
    """

    def __init__(self, nodes, bandwidth, latency, topology=None, allocation=None):
        nodes = int(nodes)
        self.nodes = nodes
        self.bandwidth = float(bandwidth)
        self.base_latency = float(latency)
        self.topology = topology = topology or Topology()
        self.allocation = allocation or Allocation()
        self.placement = self.allocation.place(nodes)
        self.switch = self.placement // topology.nodes_per_switch
        racked = topology.switches_per_rack is not None
        self.rack = (
            self.switch // topology.switches_per_rack
            if racked
            else np.zeros_like(self.switch)
        )
        capacity = [self.bandwidth] * (2 * nodes)
        self._up = self._rack_up = None
        leaf = topology.nodes_per_switch * self.bandwidth / topology.oversubscription
        if topology.oversubscription > 1 or (
            racked and topology.rack_oversubscription > 1
        ):
            switches, index = np.unique(self.switch, return_inverse=True)
            self._up = len(capacity) + 2 * index
            capacity += [leaf] * (2 * len(switches))
        if racked and topology.rack_oversubscription > 1:
            racks, index = np.unique(self.rack, return_inverse=True)
            up = topology.switches_per_rack * leaf / topology.rack_oversubscription
            self._rack_up = len(capacity) + 2 * index
            capacity += [up] * (2 * len(racks))
        self.capacity = np.array(capacity, dtype=np.float64)
        self.uplinks = self._up is not None or topology.hop_latency > 0
        self._routes = {}

    def route(self, source, target):
        """Link indices a message from node ``source`` to node ``target`` crosses.

        Parameters
        ----------
        source, target : int
            Job nodes (different).

        Returns
        -------
        tuple of int
        """
        key = (int(source), int(target))
        found = self._routes.get(key)
        if found is None:
            found = self._routes[key] = tuple(
                int(i) for i in self._links(np.array([key[0]]), np.array([key[1]]))[1]
            )
        return found

    def _links(self, source, target):
        """``(message, link)`` index pairs of the messages ``source -> target``."""
        message = np.arange(len(source))
        pairs = [(message, source), (message, self.nodes + target)]
        if self._up is not None:
            cross = self.switch[source] != self.switch[target]
            pairs += [
                (message[cross], self._up[source[cross]]),
                (message[cross], self._up[target[cross]] + 1),
            ]
        if self._rack_up is not None:
            cross = self.rack[source] != self.rack[target]
            pairs += [
                (message[cross], self._rack_up[source[cross]]),
                (message[cross], self._rack_up[target[cross]] + 1),
            ]
        which = np.concatenate([p[0] for p in pairs])
        links = np.concatenate([p[1] for p in pairs])
        order = np.argsort(which, kind="stable")
        return which[order], links[order]

    def hops(self, source, target):
        """Switches a message crosses beyond the first: 0, 2 (two leaves and the
        spine or rack switch above them) or 4 (two racks and the core).

        Parameters
        ----------
        source, target : int

        Returns
        -------
        int
        """
        if self.switch[source] == self.switch[target]:
            return 0
        return 2 if self.rack[source] == self.rack[target] else 4

    def latency(self, source, target):
        """Latency of a message between two nodes: the base plus extra switch hops.

        Parameters
        ----------
        source, target : int

        Returns
        -------
        float
            Seconds.
        """
        extra = self.topology.hop_latency
        return self.base_latency + (extra * self.hops(source, target) if extra else 0.0)

    def loads(self, source, target, nbytes):
        """Bytes on every link when nodes ``source[i]`` send ``nbytes[i]`` to
        ``target[i]`` (arrays of messages between different nodes).

        Parameters
        ----------
        source, target : array_like of int
        nbytes : array_like of float

        Returns
        -------
        numpy.ndarray
            Bytes per link, aligned with :attr:`capacity`.

        Examples
        --------
        >>> net = Network(4, 100.0, 0.0, Topology(nodes_per_switch=2,
        ...                                       oversubscription=2.0))
        >>> net.loads([0, 1], [2, 3], [10.0, 10.0]).tolist()
        [10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 10.0, 10.0, 20.0, 0.0, 0.0, 20.0]
        """
        source = np.asarray(source, dtype=np.int64)
        which, links = self._links(source, np.asarray(target, dtype=np.int64))
        weights = np.asarray(nbytes, dtype=np.float64)[which]
        return np.bincount(links, weights, minlength=len(self.capacity))

    def mapping_metrics(self):
        """``SW`` (switches), ``R`` (racks) and ``SWR`` of the allocation.

        Returns
        -------
        dict
        """
        switches = float(len(np.unique(self.switch)))
        racks = float(len(np.unique(self.rack)))
        return {"SW": switches, "R": racks, "SWR": switches / racks}
