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

from ._exchanges import (
    ALLGATHER_LONG,
    ALLREDUCE_SHORT,
    allgather_schedule,
    allreduce_schedule,
    alltoall_schedule,
)
from ._schedule import Schedule, rank_traffic, schedule_cost, schedule_cost_parts
from ._trees import (
    barrier_schedule,
    bcast_schedule,
    gather_schedule,
    reduce_schedule,
    scatter_schedule,
)

__all__ = [
    "ALLGATHER_LONG",
    "ALLREDUCE_SHORT",
    "Schedule",
    "allgather_schedule",
    "allreduce_schedule",
    "alltoall_schedule",
    "barrier_schedule",
    "bcast_schedule",
    "gather_schedule",
    "rank_traffic",
    "reduce_schedule",
    "scatter_schedule",
    "schedule_cost",
    "schedule_cost_parts",
]
