"""Communication patterns and their descriptive metrics, known ahead of execution.

A :class:`CommPattern` says who sends how many bytes to whom in one point-to-point
phase (every message of a phase is in flight at once). Together with the mapping —
``ppn`` consecutive ranks per node, and the place of each node on a two-level machine
(``nodes_per_switch`` nodes per switch, ``switches_per_rack`` switches per rack) —
it gives the metrics of Papadopoulou et al. 2015 without running anything:

=======  ===============================================================
``S``    message size, bytes (the mean over messages)
``M``    messages sent per process (the mean over processes)
``PPN``  processes per node
``N``    nodes
``I``    share of messages that cross nodes
``PT``   process traffic ``S * M``, bytes
``NT``   node traffic ``PT * PPN * I``, bytes
``V``    total volume ``NT * N``, bytes
``NI``   messages injected per node ``M * I * PPN``
``VI``   total injected messages ``NI * N``
``SW``   switches the allocation touches
``R``    racks the allocation touches
``SWR``  ``SW / R``
=======  ===============================================================

The paper assumes every process sends as many messages of one size, so the mean
process (and node) is also the busiest. A phase ends when its busiest node has
finished, and patterns with boundaries (a stencil's edge ranks have fewer
neighbours) are not uniform; :meth:`CommPattern.metrics` therefore also gives
``NTmax``, the inter-node bytes of the busiest node (the larger of what it sends
and what it receives), and ``SWTmax``, the inter-switch bytes of the busiest switch
(what leaves or enters it through its uplinks: ``SW`` counts the switches an
allocation touches, not what their uplinks carry). Neither is among the paper's
metrics (:data:`METRICS`); both are in :data:`EXTRA_METRICS`.

:func:`place_nodes` puts an allocation of ``N`` nodes on a machine of
``machine_nodes`` nodes, compactly (consecutive nodes) or at random (seeded), as a
busy batch system does; an :class:`~scaleprobe.kernels.schema.Allocation` says which.
This module imports only numpy and the schema.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scaleprobe.kernels.schema import ALLOCATION_PLACEMENTS, Allocation

__all__ = [
    "EXTRA_METRICS",
    "METRICS",
    "METRIC_LONG_NAMES",
    "METRIC_UNITS",
    "CommPattern",
    "place_nodes",
]

#: The descriptive metrics, in the order :meth:`CommPattern.metric_vector` uses.
METRICS = ("S", "M", "PPN", "N", "I", "PT", "NT", "V", "NI", "VI", "SW", "R", "SWR")

#: Metrics beyond the paper's: the busiest node's inter-node bytes, the busiest
#: switch's inter-switch bytes.
EXTRA_METRICS = ("NTmax", "SWTmax")

#: Long names of the metrics.
METRIC_LONG_NAMES = {
    "S": "message size (mean over messages)",
    "M": "messages sent per process (mean over processes)",
    "PPN": "processes per node",
    "N": "nodes",
    "I": "share of messages that cross nodes",
    "PT": "process traffic S * M",
    "NT": "node traffic PT * PPN * I",
    "V": "total volume NT * N",
    "NI": "messages injected per node M * I * PPN",
    "VI": "total injected messages NI * N",
    "SW": "switches the allocation touches",
    "R": "racks the allocation touches",
    "SWR": "switches per rack SW / R",
    "NTmax": "inter-node bytes of the busiest node (sent or received)",
    "SWTmax": "inter-switch bytes of the busiest switch (sent or received)",
}

#: Units of the metrics.
METRIC_UNITS = {
    "S": "bytes",
    "M": "1",
    "PPN": "1",
    "N": "1",
    "I": "1",
    "PT": "bytes",
    "NT": "bytes",
    "V": "bytes",
    "NI": "1",
    "VI": "1",
    "SW": "1",
    "R": "1",
    "SWR": "1",
    "NTmax": "bytes",
    "SWTmax": "bytes",
}


def _busiest(group, sizes) -> float:
    """The most bytes one group of ranks (a node, a switch) sends to other groups or
    receives from them; ``group`` gives each rank's group, numbered from 0."""
    across = np.where(group[:, None] != group[None, :], sizes, 0.0)
    sent = np.bincount(group, across.sum(axis=1))
    received = np.bincount(group, across.sum(axis=0))
    return float(max(sent.max(), received.max()))


def place_nodes(nodes, allocation="compact", *, machine_nodes=None, seed=0):
    """Machine node index of each node of an allocation.

    Parameters
    ----------
    nodes : int
        Nodes in the allocation (>= 1).
    allocation : Allocation or {"compact", "random"}, default="compact"
        Where the nodes go: ``"compact"`` takes machine nodes ``0 .. nodes-1``;
        ``"random"`` draws ``nodes`` distinct machine nodes with
        ``numpy.random.default_rng(seed)``. An
        :class:`~scaleprobe.kernels.schema.Allocation` carries the placement, the
        machine's nodes and the seed itself.
    machine_nodes : int, optional
        Size of the machine (default ``nodes``: the allocation is the machine); only
        with a placement given by name.
    seed : int, default=0
        Only with a placement given by name.

    Returns
    -------
    numpy.ndarray of int
        Sorted machine node indices, one per allocated node.

    Examples
    --------
    >>> place_nodes(3).tolist()
    [0, 1, 2]
    >>> len(set(place_nodes(4, allocation="random", machine_nodes=72, seed=1)))
    4
    >>> place_nodes(4, Allocation("random", machine_nodes=64, seed=1)).tolist()
    [28, 31, 47, 60]
    """
    if isinstance(allocation, Allocation):
        if machine_nodes is not None or seed != 0:
            raise ValueError(
                "an Allocation carries its own machine_nodes and seed; give them "
                "there, not as arguments"
            )
        allocation, machine_nodes, seed = (
            allocation.placement,
            allocation.machine_nodes,
            allocation.seed,
        )
    nodes = int(nodes)
    machine_nodes = nodes if machine_nodes is None else int(machine_nodes)
    if nodes < 1 or machine_nodes < nodes:
        raise ValueError(
            f"need 1 <= nodes <= machine_nodes, got nodes={nodes}, "
            f"machine_nodes={machine_nodes}"
        )
    if allocation == "compact":
        return np.arange(nodes)
    if allocation == "random":
        rng = np.random.default_rng(seed)
        return np.sort(rng.choice(machine_nodes, size=nodes, replace=False))
    raise ValueError(
        f"allocation must be one of {ALLOCATION_PLACEMENTS}, got {allocation!r}"
    )


@dataclass(frozen=True)
class CommPattern:
    """One point-to-point phase: ``sizes[i, j]`` bytes sent by rank i to rank j.

    Parameters
    ----------
    sizes : array_like of shape (ranks, ranks)
        Bytes rank i sends to rank j in the phase; 0 means no message.
    counts : array_like of shape (ranks, ranks), optional
        Messages rank i sends to rank j (default one wherever ``sizes > 0``); ``S`` is
        the mean size of a message.

    Examples
    --------
    Four ranks on two nodes exchanging 1 KiB with their neighbour across nodes:

    >>> pattern = CommPattern.from_partners([[2], [3], [0], [1]], 1024)
    >>> m = pattern.metrics(ppn=2)
    >>> m["I"], m["NT"], m["V"]
    (1.0, 2048.0, 4096.0)
    """

    sizes: np.ndarray
    counts: np.ndarray | None = None

    def __post_init__(self):
        sizes = np.asarray(self.sizes, dtype=float)
        if sizes.ndim != 2 or sizes.shape[0] != sizes.shape[1] or sizes.shape[0] < 1:
            raise ValueError(
                f"sizes must be a square (ranks, ranks) matrix, got shape {sizes.shape}"
            )
        if not np.all(np.isfinite(sizes)) or np.any(sizes < 0):
            raise ValueError("sizes must be finite and >= 0 bytes")
        counts = (
            (sizes > 0).astype(float)
            if self.counts is None
            else np.asarray(self.counts, dtype=float)
        )
        if counts.shape != sizes.shape or np.any((counts > 0) != (sizes > 0)):
            raise ValueError(
                "counts must have the shape of sizes and be > 0 exactly where sizes are"
            )
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "counts", counts)

    @classmethod
    def from_partners(cls, partners, message_bytes):
        """Pattern in which rank i sends ``message_bytes`` to each of ``partners[i]``.

        Parameters
        ----------
        partners : sequence of sequences of int
        message_bytes : float

        Returns
        -------
        CommPattern
        """
        ranks = len(partners)
        sizes = np.zeros((ranks, ranks))
        counts = np.zeros((ranks, ranks))
        for rank, peers in enumerate(partners):
            for peer in peers:
                if not 0 <= int(peer) < ranks or int(peer) == rank:
                    raise ValueError(
                        f"rank {rank} lists partner {peer}; partners must be other "
                        f"ranks in 0..{ranks - 1}"
                    )
                sizes[rank, int(peer)] += float(message_bytes)
                counts[rank, int(peer)] += 1
        return cls(sizes, counts)

    @property
    def ranks(self) -> int:
        """Number of ranks."""
        return self.sizes.shape[0]

    def metrics(
        self, *, ppn=1, placement=None, nodes_per_switch=18, switches_per_rack=None
    ):
        """The descriptive metrics of this pattern under a mapping.

        Parameters
        ----------
        ppn : int, default=1
            Consecutive ranks per node (rank r is on node ``r // ppn``).
        placement : array_like of int, optional
            Machine node index of each node (:func:`place_nodes`); default compact.
        nodes_per_switch : int, default=18
        switches_per_rack : int, optional
            Default: one rack holds every switch.

        Returns
        -------
        dict
            ``{name: float}`` for every name in :data:`METRICS` and
            :data:`EXTRA_METRICS`.
        """
        ppn = int(ppn)
        if ppn < 1 or self.ranks % ppn:
            raise ValueError(
                f"ppn must be >= 1 and divide the {self.ranks} ranks, got {ppn}"
            )
        nodes = self.ranks // ppn
        placement = (
            np.arange(nodes) if placement is None else np.asarray(placement, dtype=int)
        )
        if placement.shape != (nodes,):
            raise ValueError(
                f"placement must give one machine node per node ({nodes}), got "
                f"{placement.shape[0] if placement.ndim else 'a scalar'}"
            )
        if int(nodes_per_switch) < 1 or (
            switches_per_rack is not None and int(switches_per_rack) < 1
        ):
            raise ValueError("nodes_per_switch and switches_per_rack must be >= 1")
        messages = float(self.counts.sum())
        node = np.arange(self.ranks) // ppn
        crossing = node[:, None] != node[None, :]
        share = float(self.counts[crossing].sum()) / messages if messages else 0.0
        size = float(self.sizes.sum()) / messages if messages else 0.0
        per_process = messages / self.ranks
        switch = placement // int(nodes_per_switch)
        switches = len(np.unique(switch))
        rack = (
            np.zeros_like(switch)
            if switches_per_rack is None
            else switch // int(switches_per_rack)
        )
        racks = len(np.unique(rack))
        process_traffic = size * per_process
        node_traffic = process_traffic * ppn * share
        node_messages = per_process * share * ppn
        rank_switch = np.unique(switch, return_inverse=True)[1][node]
        return {
            "S": size,
            "M": per_process,
            "PPN": float(ppn),
            "N": float(nodes),
            "I": share,
            "PT": process_traffic,
            "NT": node_traffic,
            "V": node_traffic * nodes,
            "NI": node_messages,
            "VI": node_messages * nodes,
            "SW": float(switches),
            "R": float(racks),
            "SWR": switches / racks,
            "NTmax": _busiest(node, self.sizes),
            "SWTmax": _busiest(rank_switch, self.sizes),
        }

    def metric_vector(self, **mapping):
        """:meth:`metrics` as an array in the order of :data:`METRICS`."""
        values = self.metrics(**mapping)
        return np.array([values[name] for name in METRICS])
