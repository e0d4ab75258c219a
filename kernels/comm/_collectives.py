"""Communication schedules of the modelled collective algorithms, and their cost.

Pure numpy, no MPI: every function here can be tested alone. A *schedule* lists every
message an algorithm sends as four equally long arrays ``step, src, dst, nbytes``
(ranks of the communicator). Its cost (:func:`schedule_cost`) is the sum over steps of
the slowest part of the step: messages of one step travel concurrently, inter-node
messages of one step share their node's interface in both directions (the step takes
``latency + max over nodes of max(bytes out of the node, bytes into it) /
effective_bandwidth``), intra-node messages take ``memory_latency + nbytes /
memory_bandwidth`` each. The algorithms follow MPICH's defaults where the project's
design asks for them:

- barrier: dissemination, ``ceil(log2 p)`` rounds of empty messages to ``rank + 2**k``;
- bcast / reduce: binomial tree rooted at ``root``, whole message on every edge;
- scatter(v) / gather(v): binomial tree; an edge carries the blocks of the subtree
  below it;
- allgather(v): recursive doubling when ``p`` is a power of two and the total is below
  ``ALLGATHER_LONG`` bytes, Bruck when ``p`` is not a power of two and the total is
  below that size, otherwise ring (``p - 1`` steps, one block each);
- allreduce: recursive doubling (non-powers of two fold the first ``2 * rem`` ranks in
  pairs before and after) for messages below ``ALLREDUCE_SHORT`` bytes, otherwise ring
  (a ring reduce-scatter then a ring allgather, ``2 (p - 1)`` steps of ``n / p`` bytes);
- alltoall(v): pairwise exchange, step ``s = 1 .. p-1`` sends ``counts[i, (i+s) % p]``
  from ``i`` to ``(i + s) % p``; empty pairs send nothing.

Reduction arithmetic is not charged (it runs inside MPI, outside the virtual clock).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "ALLGATHER_LONG",
    "ALLREDUCE_SHORT",
    "Schedule",
    "allgather_schedule",
    "allreduce_schedule",
    "alltoall_schedule",
    "barrier_schedule",
    "bcast_schedule",
    "build",
    "gather_schedule",
    "is_power_of_two",
    "rank_traffic",
    "reduce_schedule",
    "scatter_schedule",
    "schedule_cost",
    "schedule_cost_parts",
]


class Schedule(NamedTuple):
    """Every message of one collective: step index, source, destination, bytes."""

    step: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray


def build(rows) -> Schedule:
    """Make a schedule from rows of messages.

    Parameters
    ----------
    rows : iterable of tuple
        ``(step, src, dst, nbytes)`` per message.

    Returns
    -------
    Schedule
    """
    table = np.array(list(rows), dtype=np.float64).reshape(-1, 4)
    return Schedule(
        table[:, 0].astype(np.int64),
        table[:, 1].astype(np.int64),
        table[:, 2].astype(np.int64),
        table[:, 3],
    )


def is_power_of_two(n: int) -> bool:
    """Whether ``n`` is a positive power of two.

    Parameters
    ----------
    n : int

    Returns
    -------
    bool
    """
    return n > 0 and n & (n - 1) == 0


def schedule_cost(schedule: Schedule, nodes, link, network=None) -> float:
    """Modelled duration of a schedule, seconds (see the module docstring).

    Parameters
    ----------
    schedule : Schedule
        The messages.
    nodes : array-like of int
        Node of every rank of the communicator.
    link : LinkConfig
        Link and memory parameters.
    network : Network, optional
        Switch uplinks and hop latencies of the machine (see
        :func:`schedule_cost_parts`).

    Returns
    -------
    float
        The sum of :func:`schedule_cost_parts`.

    Examples
    --------
    >>> from scaleprobe.kernels.schema import LinkConfig
    >>> from scaleprobe.kernels.comm._collectives import alltoall_schedule
    >>> link = LinkConfig(link_bandwidth=100.0, latency=0.0)
    >>> schedule_cost(alltoall_schedule([[0, 100], [100, 0]]), [0, 1], link)
    1.0
    >>> schedule_cost(alltoall_schedule(np.full((4, 4), 100.0)), [0, 0, 1, 1], link)
    4.0
    """
    return float(sum(schedule_cost_parts(schedule, nodes, link, network)))


def schedule_cost_parts(
    schedule: Schedule, nodes, link, network=None
) -> tuple[float, float, float]:
    """Split a schedule's duration into latency, bandwidth and intra-node parts.

    Every step costs ``max(inter, intra)`` with ``inter = latency + busiest / B`` (the
    busiest node interface of the step) and ``intra`` the slowest intra-node message.
    With a ``network`` whose switch uplinks can be the bottleneck, ``busiest / B`` is
    the largest bytes over capacity of any link the step's messages cross, and the
    latency the largest of its messages' (extra switch hops included).
    A step whose inter-node part is the larger contributes its ``latency`` to the
    latency part and ``busiest / B`` to the bandwidth part; otherwise its intra-node
    time goes to the intra part. The three parts sum to :func:`schedule_cost`, and the
    first two scale exactly with the link's latency and inverse bandwidth, which is
    what lets a model re-price recorded traffic on another network.

    Parameters
    ----------
    schedule : Schedule
        The messages.
    nodes : array-like of int
        Node of every rank of the communicator.
    link : LinkConfig
        Link and memory parameters.

    Returns
    -------
    tuple of float
        ``(latency, bandwidth, intra)`` seconds.

    Examples
    --------
    >>> from scaleprobe.kernels.schema import LinkConfig
    >>> from scaleprobe.kernels.comm._collectives import alltoall_schedule
    >>> link = LinkConfig(link_bandwidth=100.0, latency=0.5)
    >>> schedule_cost_parts(alltoall_schedule([[0, 100], [100, 0]]), [0, 1], link)
    (0.5, 1.0, 0.0)
    """
    if len(schedule.step) == 0:
        return 0.0, 0.0, 0.0
    nodes = np.asarray(nodes, dtype=np.int64)
    steps = int(schedule.step.max()) + 1
    inter = nodes[schedule.src] != nodes[schedule.dst]
    latency, transfer = _inter_node_steps(schedule, nodes, inter, steps, link, network)
    slowest = np.zeros(steps)
    if (~inter).any():
        intra = link.memory_latency + schedule.nbytes[~inter] / link.memory_bandwidth
        np.maximum.at(slowest, schedule.step[~inter], intra)
    internal = slowest > latency + transfer
    return (
        float(latency[~internal].sum()),
        float(transfer[~internal].sum()),
        float(slowest[internal].sum()),
    )


def _inter_node_steps(schedule, nodes, inter, steps, link, network):
    """Latency and transfer seconds of every step's inter-node messages: the
    busiest node interface (both directions) or, with oversubscribed switches, the
    busiest link the step's messages cross."""
    latency = np.zeros(steps)
    transfer = np.zeros(steps)
    if not inter.any():
        return latency, transfer
    src_node, dst_node = nodes[schedule.src][inter], nodes[schedule.dst][inter]
    node_count = int(nodes.max()) + 1
    step = schedule.step[inter]
    weights = schedule.nbytes[inter]
    out_bytes = np.bincount(
        step * node_count + src_node, weights, steps * node_count
    ).reshape(steps, node_count)
    in_bytes = np.bincount(
        step * node_count + dst_node, weights, steps * node_count
    ).reshape(steps, node_count)
    busiest = np.maximum(out_bytes, in_bytes).max(axis=1)
    active = np.bincount(step, minlength=steps) > 0
    latency = np.where(active, link.latency, 0.0)
    transfer = np.where(active, busiest / link.effective_bandwidth, 0.0)
    if network is not None and network.uplinks:
        for index in np.flatnonzero(active):
            mine = step == index
            load = network.loads(src_node[mine], dst_node[mine], weights[mine])
            transfer[index] = float(np.max(load / network.capacity))
            latency[index] = max(
                network.latency(a, b)
                for a, b in zip(
                    src_node[mine].tolist(), dst_node[mine].tolist(), strict=True
                )
            )
    return latency, transfer


def rank_traffic(schedule: Schedule, rank: int, nodes) -> dict:
    """What one rank sends under a schedule.

    Parameters
    ----------
    schedule : Schedule
        The messages.
    rank : int
        Rank in the communicator.
    nodes : array-like of int
        Node of every rank.

    Returns
    -------
    dict
        ``bytes_inter``, ``bytes_intra``, ``messages``, ``messages_inter``.
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    mine = schedule.src == rank
    inter = nodes[schedule.dst[mine]] != nodes[rank]
    sent = schedule.nbytes[mine]
    return {
        "bytes_inter": round(float(sent[inter].sum())),
        "bytes_intra": round(float(sent[~inter].sum())),
        "messages": int(mine.sum()),
        "messages_inter": int(inter.sum()),
    }


def barrier_schedule(size: int) -> Schedule:
    """Dissemination barrier: round ``k`` sends an empty message to ``rank + 2**k``.

    Parameters
    ----------
    size : int
        Ranks in the communicator.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> barrier_schedule(4).step.tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    rows, k, distance = [], 0, 1
    while distance < size:
        rows += [(k, i, (i + distance) % size, 0) for i in range(size)]
        k, distance = k + 1, distance * 2
    return build(rows)


def bcast_schedule(size: int, nbytes: float, root: int = 0) -> Schedule:
    """Binomial-tree broadcast of ``nbytes`` from ``root``.

    Parameters
    ----------
    size : int
        Ranks in the communicator.
    nbytes : float
        Message size.
    root : int, default=0
        Broadcasting rank.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> s = bcast_schedule(4, 10)
    >>> list(zip(s.step.tolist(), s.src.tolist(), s.dst.tolist()))
    [(0, 0, 1), (1, 0, 2), (1, 1, 3)]
    """
    rows, k, mask = [], 0, 1
    while mask < size:
        for rel in range(min(mask, size - mask)):
            rows.append((k, (rel + root) % size, (rel + mask + root) % size, nbytes))
        k, mask = k + 1, mask * 2
    return build(rows)


def reduce_schedule(size: int, nbytes: float, root: int = 0) -> Schedule:
    """Binomial-tree reduction of ``nbytes`` per rank to ``root``.

    Parameters
    ----------
    size : int
        Ranks in the communicator.
    nbytes : float
        Message size.
    root : int, default=0
        Receiving rank.

    Returns
    -------
    Schedule
    """
    rows, k, mask = [], 0, 1
    while mask < size:
        for rel in range(mask, size, 2 * mask):
            rows.append((k, (rel + root) % size, (rel - mask + root) % size, nbytes))
        k, mask = k + 1, mask * 2
    return build(rows)


def _block_bytes(counts: np.ndarray, first: int, stop: int, root: int) -> float:
    """Bytes of the blocks of relative ranks ``first .. stop-1``."""
    size = len(counts)
    return float(sum(counts[(rel + root) % size] for rel in range(first, stop)))


def scatter_schedule(counts, root: int = 0) -> Schedule:
    """Binomial-tree scatter; ``counts[r]`` bytes end up on rank ``r``.

    Parameters
    ----------
    counts : array-like of float
        Bytes each rank receives (uniform for Scatter).
    root : int, default=0
        Scattering rank.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> scatter_schedule([1, 1, 1, 1]).nbytes.tolist()
    [2.0, 1.0, 1.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = len(counts)
    masks = []
    mask = 1
    while mask < size:
        masks.append(mask)
        mask *= 2
    rows = []
    for k, mask in enumerate(reversed(masks)):
        for rel in range(0, size, 2 * mask):
            if rel + mask < size:
                sent = _block_bytes(counts, rel + mask, min(rel + 2 * mask, size), root)
                rows.append((k, (rel + root) % size, (rel + mask + root) % size, sent))
    return build(rows)


def gather_schedule(counts, root: int = 0) -> Schedule:
    """Binomial-tree gather; rank ``r`` contributes ``counts[r]`` bytes.

    Parameters
    ----------
    counts : array-like of float
        Bytes each rank sends (uniform for Gather).
    root : int, default=0
        Gathering rank.

    Returns
    -------
    Schedule
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = len(counts)
    rows, k, mask = [], 0, 1
    while mask < size:
        for rel in range(mask, size, 2 * mask):
            sent = _block_bytes(counts, rel, min(rel + mask, size), root)
            rows.append((k, (rel + root) % size, (rel - mask + root) % size, sent))
        k, mask = k + 1, mask * 2
    return build(rows)


#: MPICH's ``MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE``: total bytes from which ring is used.
ALLGATHER_LONG = 524288
#: MPICH's ``MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE``: bytes below which recursive doubling.
ALLREDUCE_SHORT = 2048


def allgather_schedule(counts, algorithm: str = "auto") -> Schedule:
    """Allgather where rank ``r`` contributes ``counts[r]`` bytes.

    Parameters
    ----------
    counts : array-like of float
        Bytes contributed by each rank.
    algorithm : {"auto", "recursive_doubling", "bruck", "ring"}, default="auto"
        ``"auto"`` picks as described in the module docstring.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> allgather_schedule([8, 8, 8, 8]).nbytes.tolist()  # recursive doubling
    [8.0, 8.0, 8.0, 8.0, 16.0, 16.0, 16.0, 16.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = len(counts)
    if algorithm == "auto":
        if counts.sum() >= ALLGATHER_LONG:
            algorithm = "ring"
        elif is_power_of_two(size):
            algorithm = "recursive_doubling"
        else:
            algorithm = "bruck"
    rows = []
    if algorithm == "recursive_doubling":
        if not is_power_of_two(size):
            raise ValueError(
                f"recursive doubling needs a power of two, got {size} ranks"
            )
        k, mask = 0, 1
        while mask < size:
            for i in range(size):
                start = i & ~(mask - 1)
                rows.append((k, i, i ^ mask, counts[start : start + mask].sum()))
            k, mask = k + 1, mask * 2
    elif algorithm == "bruck":
        k, distance = 0, 1
        while distance < size:
            blocks = min(distance, size - distance)
            for i in range(size):
                held = counts[(i + np.arange(blocks)) % size].sum()
                rows.append((k, i, (i - distance) % size, held))
            k, distance = k + 1, distance * 2
    elif algorithm == "ring":
        for s in range(size - 1):
            rows += [
                (s, i, (i + 1) % size, counts[(i - s) % size]) for i in range(size)
            ]
    else:
        raise ValueError(
            f"allgather algorithm must be auto, recursive_doubling, bruck or ring, "
            f"got {algorithm!r}"
        )
    return build(rows)


def allreduce_schedule(size: int, nbytes: float, algorithm: str = "auto") -> Schedule:
    """Allreduce of ``nbytes`` per rank.

    Parameters
    ----------
    size : int
        Ranks in the communicator.
    nbytes : float
        Size of each rank's vector.
    algorithm : {"auto", "recursive_doubling", "ring"}, default="auto"
        ``"auto"``: recursive doubling below :data:`ALLREDUCE_SHORT` bytes, else ring.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> s = allreduce_schedule(3, 8)  # fold rank 0 into 1, exchange 1<->2, unfold
    >>> list(zip(s.step.tolist(), s.src.tolist(), s.dst.tolist()))
    [(0, 0, 1), (1, 1, 2), (1, 2, 1), (2, 1, 0)]
    """
    if algorithm == "auto":
        algorithm = "recursive_doubling" if nbytes < ALLREDUCE_SHORT else "ring"
    rows = []
    if size <= 1:
        return build(rows)
    if algorithm == "recursive_doubling":
        pof2 = 1 << (size.bit_length() - 1)
        rem = size - pof2
        k = 0
        if rem:
            rows += [(0, i, i + 1, nbytes) for i in range(0, 2 * rem, 2)]
            k = 1
        survivors = [i for i in range(size) if i >= 2 * rem or i % 2 == 1]
        mask = 1
        while mask < pof2:
            for j, rank in enumerate(survivors):
                rows.append((k, rank, survivors[j ^ mask], nbytes))
            k, mask = k + 1, mask * 2
        rows += [(k, i + 1, i, nbytes) for i in range(0, 2 * rem, 2)]
    elif algorithm == "ring":
        chunks = np.full(size, nbytes // size) + (np.arange(size) < nbytes % size)
        for s in range(2 * (size - 1)):
            offset = s if s < size - 1 else s - (size - 1) - 1
            rows += [
                (s, i, (i + 1) % size, chunks[(i - offset) % size]) for i in range(size)
            ]
    else:
        raise ValueError(
            f"allreduce algorithm must be auto, recursive_doubling or ring, "
            f"got {algorithm!r}"
        )
    return build(rows)


def alltoall_schedule(counts) -> Schedule:
    """Pairwise-exchange alltoall(v); ``counts[i, j]`` bytes go from ``i`` to ``j``.

    Parameters
    ----------
    counts : array-like of float, shape (p, p)
        The full send matrix (uniform for Alltoall). The diagonal is a local copy.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> alltoall_schedule([[0, 1], [2, 0]]).nbytes.tolist()
    [1.0, 2.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = counts.shape[0]
    if counts.shape != (size, size):
        raise ValueError(f"alltoall counts must be a square matrix, got {counts.shape}")
    src = np.tile(np.arange(size), size - 1)
    step = np.repeat(np.arange(size - 1), size)
    dst = (src + step + 1) % size
    nbytes = counts[src, dst]
    keep = nbytes > 0
    return Schedule(step[keep], src[keep], dst[keep], nbytes[keep])
