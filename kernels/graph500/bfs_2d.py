"""The 2D edge-partitioned BFS of Buluc & Madduri (the IBM code of seed 000).

Ranks form an R x C grid (:func:`grid_shape`: ``square`` counts give q x q,
``two_p_squared`` counts 2q x q). Rank (i, j) owns vertex block ``i*C + j`` and the
edges from grid column j's vertices to grid row i's vertices. Every level:

1. **expand** — the frontier vertices owned in grid column j are gathered on all R
   ranks of the column (``Allgatherv`` of 8-byte ids on the column communicator);
2. local top-down step over the block: targets not yet seen by this rank become
   (target, parent) candidates, one per target;
3. **fold** — candidates go to the target's owner, a rank of the same grid row
   (``Alltoallv`` of 8-byte id pairs on the row communicator);
4. owners settle unvisited targets; a one-number ``Allreduce`` ends the level.

Each rank talks to R - 1 + C - 1 = O(sqrt(p)) peers per level, the property seed 000's
communication model rests on. Top-down only (no direction optimization).
"""

from __future__ import annotations

import numpy as np

from ._exchange import allgatherv_array, alltoallv_arrays
from ._frontier import LevelProfile, expand_rows, row_chunks
from .bfs_simple import settle

__all__ = ["bfs_2d"]


def bfs_2d(comm, graph, root: int, pred: np.ndarray, profile: LevelProfile):
    """Breadth-first search on a :class:`Graph2D`; fills the owned ``pred``.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    graph : Graph2D
        This rank's block of the graph.
    root : int
        The global root vertex.
    pred : numpy.ndarray of int64
        Parents of the owned vertices, all -1 on entry.
    profile : LevelProfile
        Receives one entry per level.
    """
    partition = graph.partition
    block = partition.block
    ncols = graph.grid[1]
    lo, hi = partition.bounds(comm.rank)
    row_lo = graph.row_lo
    seen = np.zeros(max(graph.row_hi - row_lo, 0), dtype=bool)
    visited = np.zeros(hi - lo, dtype=bool)
    slot = np.empty(seen.size, dtype=np.int64)
    if lo <= root < hi:
        pred[root - lo] = root
        visited[root - lo] = True
        frontier = np.array([root], dtype=np.int64)
    else:
        frontier = np.empty(0, dtype=np.int64)
    if row_lo <= root < graph.row_hi:
        seen[root - row_lo] = True
    frontier_size = 1
    view = graph.row_view()
    profile.begin()
    while frontier_size:
        sources = allgatherv_array(graph.col_comm, frontier)
        targets_out, parents_out = [], []
        for rows in row_chunks(graph.indptr, graph.column_local(sources)):
            targets, parents = expand_rows(view, rows, graph.column_global(rows))
            fresh = ~seen[targets]
            targets, parents = targets[fresh], parents[fresh]
            # one candidate per target: whichever index a repeated assignment keeps
            index = np.arange(targets.size)
            slot[targets] = index
            keep = slot[targets] == index
            targets, parents = targets[keep], parents[keep]
            seen[targets] = True
            targets_out.append(targets.astype(np.int64) + row_lo)
            parents_out.append(parents)
        vertices = np.concatenate(targets_out) if targets_out else np.empty(0, np.int64)
        parents = np.concatenate(parents_out) if parents_out else np.empty(0, np.int64)
        destination = (vertices // block) % ncols
        vertices, parents = alltoallv_arrays(graph.row_comm, destination, vertices, parents)
        newly = settle(pred, visited, vertices - lo, parents)
        frontier = newly + lo
        count = comm.allreduce(int(newly.size))
        profile.end_level(frontier_size)
        frontier_size = count
