"""The emulated interconnect: what one message costs, and the machine's links.

A launch's :class:`~scaleprobe.kernels.schema.LinkConfig` is the one description of
the link; this module prices messages on it and lays out the machine it describes.

Message costs (:func:`inter_time`, :func:`intra_time`, :func:`transfer_time`)
    An inter-node message of ``n`` bytes alone on the network takes ``latency + n /
    B`` with ``B = link_bandwidth * bandwidth / 100`` (the link's
    ``effective_bandwidth``); an intra-node one takes ``memory_latency + n /
    memory_bandwidth``.

The machine (:class:`Network`)
    The link's :class:`~scaleprobe.kernels.schema.Allocation` places the job's ``N``
    nodes on a machine of ``machine_nodes`` nodes, compactly or at random (seeded), as
    a batch system on a busy machine does (:func:`~scaleprobe.kernels.comm.pattern.
    place_nodes`); its :class:`~scaleprobe.kernels.schema.Topology` groups machine
    nodes ``nodes_per_switch`` to a leaf switch and leaf switches
    ``switches_per_rack`` to a rack. Then:

    - every node has an injection link (its NIC sending) and an ejection link (its
      NIC receiving), each of the effective bandwidth ``B``;
    - with a topology, every leaf switch has an uplink and a downlink of
      ``nodes_per_switch * B / oversubscription``, and with racks every rack an
      uplink and a downlink of ``switches_per_rack * leaf_uplink /
      rack_oversubscription``;
    - a message between nodes of one switch crosses ``injection, ejection``; between
      switches of one rack (or of a machine without racks) also the two leaf links;
      between racks also the two rack links. Each switch beyond the first adds
      ``hop_latency``.

    Without a topology the nodes hang on one non-blocking switch: only the NICs are
    shared. Every capacity is proportional to ``B``, so throttling the link scales
    every transfer time by the same factor.

This module imports only numpy and the schema.
"""

from __future__ import annotations

import numpy as np
from scaleprobe.kernels.schema import Allocation, LinkConfig, Topology

from .pattern import place_nodes

__all__ = ["Network", "inter_time", "intra_time", "rank_bandwidth", "transfer_time"]


def rank_bandwidth(link: LinkConfig, ppn: int) -> float:
    """Inter-node bandwidth one rank gets for point-to-point messages, bytes/s.

    Parameters
    ----------
    link : LinkConfig
        The link.
    ppn : int
        Ranks per node sharing the interface.

    Returns
    -------
    float
        ``effective_bandwidth / ppn`` with ``nic_sharing="fair"`` (and with
        ``"flows"``, where it is the share of each rank when all the node's ranks
        send at once: an estimate, the replay charges the real sharing), else
        ``effective_bandwidth``.

    Examples
    --------
    >>> link = LinkConfig(link_bandwidth=1.25e8, bandwidth=50.0)
    >>> rank_bandwidth(link, 2), rank_bandwidth(link.at(nic_sharing="exclusive"), 2)
    (31250000.0, 62500000.0)
    """
    if link.nic_sharing in ("fair", "flows"):
        return link.effective_bandwidth / max(int(ppn), 1)
    return link.effective_bandwidth


def inter_time(link: LinkConfig, nbytes: float, ppn: int = 1) -> float:
    """Seconds of one inter-node message, latency included.

    Parameters
    ----------
    link : LinkConfig
        The link.
    nbytes : float
        Message size in bytes.
    ppn : int, default=1
        Ranks per node sharing the interface (see :func:`rank_bandwidth`).

    Returns
    -------
    float

    Examples
    --------
    >>> inter_time(LinkConfig(link_bandwidth=1.25e8, bandwidth=50, latency=0), 62.5e6)
    1.0
    """
    return link.latency + nbytes / rank_bandwidth(link, ppn)


def intra_time(link: LinkConfig, nbytes: float) -> float:
    """Seconds of one intra-node message, latency included.

    Parameters
    ----------
    link : LinkConfig
        The link (its memory bandwidth and latency).
    nbytes : float
        Message size in bytes.

    Returns
    -------
    float
    """
    return link.memory_latency + nbytes / link.memory_bandwidth


def transfer_time(link: LinkConfig, nbytes: float, inter: bool, ppn: int = 1) -> float:
    """Seconds of one message, inter-node or intra-node.

    Parameters
    ----------
    link : LinkConfig
        The link.
    nbytes : float
        Message size in bytes.
    inter : bool
        Whether the message crosses nodes.
    ppn : int, default=1
        Ranks per node sharing the interface.

    Returns
    -------
    float
    """
    return inter_time(link, nbytes, ppn) if inter else intra_time(link, nbytes)


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
        self.placement = place_nodes(nodes, self.allocation)
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

    @classmethod
    def from_link(cls, link: LinkConfig, nodes: int) -> Network:
        """The machine a link describes, for a job of ``nodes`` nodes.

        Parameters
        ----------
        link : LinkConfig
            Its effective bandwidth, latency, topology and allocation.
        nodes : int
            Nodes of the job.

        Returns
        -------
        Network

        Examples
        --------
        >>> link = LinkConfig(topology={"nodes_per_switch": 2}, allocation="compact")
        >>> Network.from_link(link, 4).switch.tolist()
        [0, 0, 1, 1]
        """
        return cls(
            nodes,
            link.effective_bandwidth,
            link.latency,
            link.topology,
            link.allocation,
        )

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
