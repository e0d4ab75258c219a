"""A collective's messages as arrays, and what they cost on the link model."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "Schedule",
    "build",
    "is_power_of_two",
    "rank_traffic",
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
    src_node, dst_node = nodes[schedule.src], nodes[schedule.dst]
    inter = src_node != dst_node
    node_count = int(nodes.max()) + 1
    latency = np.zeros(steps)
    transfer = np.zeros(steps)
    if inter.any():
        step = schedule.step[inter]
        weights = schedule.nbytes[inter]
        out_bytes = np.bincount(
            step * node_count + src_node[inter], weights, steps * node_count
        ).reshape(steps, node_count)
        in_bytes = np.bincount(
            step * node_count + dst_node[inter], weights, steps * node_count
        ).reshape(steps, node_count)
        busiest = np.maximum(out_bytes, in_bytes).max(axis=1)
        active = np.bincount(step, minlength=steps) > 0
        latency = np.where(active, link.latency, 0.0)
        transfer = np.where(active, busiest / link.effective_bandwidth, 0.0)
        if network is not None and network.uplinks:
            sources, targets = src_node[inter], dst_node[inter]
            for index in np.flatnonzero(active):
                mine = step == index
                load = network.loads(sources[mine], targets[mine], weights[mine])
                transfer[index] = float(np.max(load / network.capacity))
                latency[index] = max(
                    network.latency(a, b)
                    for a, b in zip(
                        sources[mine].tolist(), targets[mine].tolist(), strict=True
                    )
                )
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
