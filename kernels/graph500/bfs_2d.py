"""The 2D edge-partitioned BFS of Buluç and Madduri 2011 (the IBM code that Medya
et al. 2017 measure).

Ranks form an R x C grid (:func:`grid_shape`: ``square`` counts give q x q,
``two_p_squared`` counts 2q x q). Rank (i, j) owns vertex block ``i*C + j`` and the
edges from grid column j's vertices to grid row i's vertices. A top-down level:

1. **expand** — the frontier vertices owned in grid column j are gathered on all R
   ranks of the column (``Allgatherv`` of 8-byte ids on the column communicator);
2. local top-down step over the block: targets not yet seen by this rank become
   (target, parent) candidates, one per target;
3. **fold** — candidates go to the target's owner, a rank of the same grid row
   (``Alltoallv`` of 8-byte id pairs on the row communicator);
4. owners settle unvisited targets; an ``Allreduce`` of three numbers ends the level.

Each rank talks to R - 1 + C - 1 = O(sqrt(p)) peers per level, the property the
communication model of Medya et al. 2017 rests on.

**Direction optimizing** (with ``direction_optimizing=True``, the default; the same
switching rule as ``replicated-csr``): a bottom-up level expands the frontier as a
bitmap along the grid column, gathers the grid row's visited bits along the row, and
every rank looks, for each unvisited target of its row group, for a frontier source
in its block (through the block's transpose); found (target, parent) pairs are folded
to the owners as above, which keep one parent each.
"""

from __future__ import annotations

import numpy as np

from ._exchange import allgatherv_array, alltoallv_arrays
from ._frontier import LevelProfile, expand_rows, piece_budget, row_chunks
from .bfs_replicated import BETA, goes_bottom_up, level_totals, threaded_bottom_up
from .bfs_simple import settle

__all__ = ["bfs_2d"]


def _gather_bits(comm, owned_bits: np.ndarray, nbits: int) -> np.ndarray:
    """Allgather block-padded owned bool masks into one bool mask of ``nbits``."""
    if comm.size == 1:
        return owned_bits[:nbits]
    full = allgatherv_array(comm, np.packbits(owned_bits))
    return np.unpackbits(full, count=nbits).view(bool)


def _top_down(graph, view, frontier, seen, slot, team=None):
    """Local expand + filter of a top-down level: (targets, parents), global ids.

    The level's rows are cut into pieces of about equal adjacency, gathered over
    the ``team``'s threads (targets already seen when the level began dropped),
    then filtered one after the other in order: the same candidates for any number
    of threads.
    """
    sources = allgatherv_array(graph.col_comm, frontier)
    rows = graph.column_local(sources)
    pieces = row_chunks(graph.indptr, rows, piece_budget(graph.indptr, rows))

    def gather(rows):
        targets, parents = expand_rows(view, rows, graph.column_global(rows))
        fresh = ~seen[targets]
        return targets[fresh], parents[fresh]

    gathered = team.map(gather, pieces) if team is not None else map(gather, pieces)
    targets_out, parents_out = [], []
    for targets, parents in gathered:
        fresh = ~seen[targets]
        targets, parents = targets[fresh], parents[fresh]
        # one candidate per target: whichever index a repeated assignment keeps
        index = np.arange(targets.size)
        slot[targets] = index
        keep = slot[targets] == index
        targets, parents = targets[keep], parents[keep]
        seen[targets] = True
        targets_out.append(targets.astype(np.int64) + graph.row_lo)
        parents_out.append(parents)
    if not targets_out:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(targets_out), np.concatenate(parents_out)


def _bottom_up(graph, frontier_local, visited_block, seen, scratch, team=None):
    """Local step of a bottom-up level: (targets, parents), global ids."""
    block = graph.partition.block
    nrows = graph.grid[0]
    frontier_bits = np.zeros(block, dtype=bool)
    frontier_bits[frontier_local] = True
    in_queue = _gather_bits(graph.col_comm, frontier_bits, nrows * block)
    row_size = seen.size
    row_visited = _gather_bits(graph.row_comm, visited_block, row_size)
    seen |= row_visited
    candidates = np.flatnonzero(~row_visited & (np.diff(graph.t_indptr) > 0))
    parents, found_flags = scratch
    transposed = _Block(graph.t_indptr, graph.t_indices)
    newly, _ = threaded_bottom_up(
        transposed,
        candidates,
        np.diff(graph.t_indptr),
        in_queue,
        parents,
        found_flags,
        team,
    )
    found_flags[newly] = False
    seen[newly] = True
    return newly.astype(np.int64) + graph.row_lo, graph.column_global(parents[newly])


def _fold(graph, pred, visited, lo: int, vertices, parents):
    """Send the candidates to their owners in the grid row; settle those received."""
    destination = (vertices // graph.partition.block) % graph.grid[1]
    vertices, parents = alltoallv_arrays(graph.row_comm, destination, vertices, parents)
    return settle(pred, visited, vertices - lo, parents)


class _Block:
    """The attributes of a CSR graph that
    :func:`~.bfs_replicated.bottom_up_step` reads."""

    def __init__(self, indptr, indices):
        self.indptr, self.indices = indptr, indices


def bfs_2d(
    comm,
    graph,
    root: int,
    pred: np.ndarray,
    profile: LevelProfile,
    *,
    direction_optimizing: bool = True,
    team=None,
):
    """Breadth-first search on a :class:`Graph2D`; fills the owned ``pred``.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    graph : Graph2D
        This rank's block of the graph (with its transpose for bottom-up levels).
    root : int
        The global root vertex.
    pred : numpy.ndarray of int64
        Parents of the owned vertices, all -1 on entry.
    profile : LevelProfile
        Receives one entry per level.
    direction_optimizing : bool, default=True
        Run bottom-up levels while the frontier is large (needs ``t_indptr``).
    team : ThreadTeam, optional
        The rank's threads, over which every level's local step runs.
    """
    partition = graph.partition
    block = partition.block
    nvertices = partition.nvertices
    lo, hi = partition.bounds(comm.rank)
    row_lo = graph.row_lo
    direction_optimizing = direction_optimizing and graph.t_indptr is not None
    seen = np.zeros(max(graph.row_hi - row_lo, 0), dtype=bool)
    visited = np.zeros(block, dtype=bool)  # padded to a whole block for bit gathers
    slot = np.empty(seen.size, dtype=np.int64)
    scratch = (np.empty(seen.size, dtype=np.int64), np.zeros(seen.size, dtype=bool))
    degree = graph.degree.astype(np.float64)
    if lo <= root < hi:
        pred[root - lo] = root
        visited[root - lo] = True
        frontier = np.array([root], dtype=np.int64)
    else:
        frontier = np.empty(0, dtype=np.int64)
    if row_lo <= root < graph.row_hi:
        seen[root - row_lo] = True
    unexplored_local = float(degree.sum())
    frontier_size, frontier_edges, unexplored_edges = level_totals(
        comm, frontier.size, float(degree[frontier - lo].sum()), unexplored_local
    )
    previous_size, bottom_up = 0.0, False
    view = graph.row_view()
    profile.begin()
    while frontier_size:
        if direction_optimizing:
            bottom_up = goes_bottom_up(
                bottom_up,
                frontier_size,
                previous_size,
                frontier_edges,
                unexplored_edges,
                turn_back=frontier_size < nvertices / BETA
                and frontier_size <= previous_size,
            )
        if bottom_up:
            vertices, parents = _bottom_up(
                graph, frontier - lo, visited, seen, scratch, team
            )
        else:
            vertices, parents = _top_down(graph, view, frontier, seen, slot, team)
        newly = _fold(graph, pred, visited, lo, vertices, parents)
        frontier = newly + lo
        frontier_edges_local = float(degree[newly].sum())
        unexplored_local -= frontier_edges_local
        totals = level_totals(comm, newly.size, frontier_edges_local, unexplored_local)
        profile.end_level(frontier_size, bottom_up)
        previous_size = frontier_size
        frontier_size, frontier_edges, unexplored_edges = totals
