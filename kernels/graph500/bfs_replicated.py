"""The replicated-bitmap BFS variants (Suzumura et al. 2011, Algorithms III and IV).

Both keep the frontier of the whole graph on every rank as a bitmap (``in_queue``),
built each level by an ``Allgatherv`` of every rank's packed ``out_queue`` bits
(``nvertices / 8`` bytes per rank and level).

- ``replicated-csr`` (Algorithm III) is a bottom-up search: each rank checks its own
  unvisited vertices, and a vertex takes the first neighbour found in ``in_queue`` as
  its parent. Vectorized: a few rounds test the k-th neighbour of every still-open
  vertex at once (most vertices stop in the first rounds), then the remaining
  neighbours of the few open vertices are scanned in bulk. It is **direction
  optimizing** by default (Beamer et al. 2012): a level runs top-down, pushing (vertex,
  parent) pairs to the owners as ``simple`` does, while the frontier is not growing
  or touches few edges (``m_f <= m_u / ALPHA``), and again once it has shrunk below
  ``nvertices / BETA``; in between levels are bottom-up. ``ALPHA = 6`` (Beamer's C
  code uses 14; here a top-down level costs more per edge, measured best at scale
  16-20), ``BETA = 24``. With ``direction_optimizing=False`` every level is
  bottom-up, as in the reference.
- ``replicated-csc`` (Algorithm IV) is top-down: each rank scans the global frontier
  and, through the transposed adjacency, settles its own unvisited neighbours of it.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._exchange import allgatherv_array
from ._frontier import (
    LevelProfile,
    expand_rows,
    first_in_segment,
    gather_rows,
    piece_budget,
    row_chunks,
)
from .bfs_simple import expand_top_down, settle

__all__ = ["bfs_replicated_csc", "bfs_replicated_csr", "bottom_up_step"]

BOTTOM_UP_ROUNDS = 12
ALPHA = 6.0  # Beamer et al. 2012 use 14 in C; numpy top-down steps cost more
BETA = 24.0


def _global_bitmap(comm, local_mask: np.ndarray, nvertices: int) -> np.ndarray:
    """Allgather every rank's owned bool mask into the global bool bitmap."""
    if comm.size == 1:
        return local_mask
    full = allgatherv_array(comm, np.packbits(local_mask))
    return np.unpackbits(full, count=nvertices).view(bool)


def bottom_up_step(graph, candidates, row_length, in_queue, pred, visited):
    """One bottom-up level over the open ``candidates``; returns (newly, still_open).

    ``candidates`` (sorted row ids of ``graph.indptr``) take as parent, written to
    ``pred``, the first neighbour set in ``in_queue``; found rows are flagged in
    ``visited``.
    """
    indptr, indices = graph.indptr, graph.indices
    start = indptr[candidates]
    length = row_length[candidates]
    found = np.zeros(candidates.size, dtype=bool)
    active = np.arange(candidates.size)
    for k in range(BOTTOM_UP_ROUNDS):
        if active.size == 0:
            break
        neighbour = indices[start[active] + k]
        hit = in_queue[neighbour]
        winners = active[hit]
        found[winners] = True
        pred[candidates[winners]] = neighbour[hit]
        hit |= length[active] <= k + 1
        active = active[~hit]
    if active.size:
        for piece in row_chunks(indptr, candidates[active]):
            neighbour, position = gather_rows(
                indptr, indices, piece, skip=BOTTOM_UP_ROUNDS
            )
            hits = np.flatnonzero(in_queue[neighbour])
            if hits.size == 0:
                continue
            segment = position[hits]
            first = first_in_segment(segment)
            # candidates are sorted, so a vertex's slot is found by bisection
            rows = piece[segment[first]]
            slot = np.searchsorted(candidates, rows)
            found[slot] = True
            pred[rows] = neighbour[hits[first]]
    newly = candidates[found]
    visited[newly] = True
    return newly, candidates[~found]


def threaded_bottom_up(graph, candidates, row_length, in_queue, pred, visited, team):
    """:func:`bottom_up_step` over the ``team``'s threads: the sorted ``candidates``
    cut into consecutive pieces of about equal adjacency, each searched on its own
    (a vertex's parent is the first neighbour in ``in_queue`` whatever the pieces,
    and each piece writes only its own vertices)."""
    if team is None or team.threads < 2 or candidates.size < 2 * team.threads:
        return bottom_up_step(graph, candidates, row_length, in_queue, pred, visited)
    from scaleprobe.kernels.comm.threads import balanced_cuts

    cuts = balanced_cuts(row_length[candidates], team.threads).tolist()
    pieces = [candidates[a:b] for a, b in itertools.pairwise(cuts)]
    done = team.map(
        lambda piece: bottom_up_step(graph, piece, row_length, in_queue, pred, visited),
        [piece for piece in pieces if piece.size],
    )
    return (
        np.concatenate([newly for newly, _ in done]),
        np.concatenate([still for _, still in done]),
    )


def level_totals(comm, frontier_size, frontier_edges, unexplored_edges) -> np.ndarray:
    """The new frontier's vertices and edges and the edges left unexplored, summed
    over the ranks (the ``Allreduce`` of three numbers that ends every level).

    Parameters
    ----------
    comm : InstrumentedComm
    frontier_size, frontier_edges, unexplored_edges : float
        This rank's share.

    Returns
    -------
    numpy.ndarray of shape (3,)
    """
    totals = np.array([float(frontier_size), frontier_edges, unexplored_edges])
    if comm.size > 1:
        summed = np.empty_like(totals)
        comm.Allreduce(totals, summed)
        totals = summed
    return totals


def goes_bottom_up(bottom_up, size, previous, edges, unexplored, *, turn_back) -> bool:
    """Beamer's switch: go bottom-up once a growing frontier touches more than
    ``unexplored / ALPHA`` edges, and top-down again when ``turn_back`` says so.

    Parameters
    ----------
    bottom_up : bool
        The last level's direction.
    size, previous : float
        Vertices of this level's frontier and of the last one's.
    edges, unexplored : float
        Edges of the frontier and edges not explored yet.
    turn_back : bool
        Whether a bottom-up search goes top-down again at this level (the frontier
        has shrunk below ``nvertices / BETA``).

    Returns
    -------
    bool
    """
    if not bottom_up and size > previous and edges > unexplored / ALPHA:
        return True
    if bottom_up and turn_back:
        return False
    return bottom_up


def bfs_replicated_csr(
    comm,
    graph,
    root: int,
    pred: np.ndarray,
    profile: LevelProfile,
    *,
    direction_optimizing: bool = True,
    team=None,
):
    """Replicated-bitmap bottom-up BFS (Algorithm III), direction optimizing by default.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    graph : Graph1D
        This rank's share of the graph.
    root : int
        The global root vertex.
    pred : numpy.ndarray of int64
        Owned parents, all -1 on entry; filled.
    profile : LevelProfile
        Receives one entry per level.
    direction_optimizing : bool, default=True
        Run top-down levels while the frontier is small.
    team : ThreadTeam, optional
        The rank's threads, over which every level runs
        (:func:`threaded_bottom_up`, :func:`~.bfs_simple.expand_top_down`).
    """
    nvertices = graph.partition.nvertices
    lo, hi = graph.lo, graph.hi
    row_length = np.diff(graph.indptr)
    mark = np.zeros(hi - lo, dtype=bool)
    visited = np.zeros(hi - lo, dtype=bool)
    open_vertices = np.flatnonzero(row_length)
    unexplored_local = float(row_length.sum())
    if lo <= root < hi:
        pred[root - lo] = root
        visited[root - lo] = True
        frontier = np.array([root - lo], dtype=np.int64)
        open_vertices = open_vertices[open_vertices != root - lo]
    else:
        frontier = np.empty(0, dtype=np.int64)
    frontier_size, frontier_edges, unexplored_edges = level_totals(
        comm, frontier.size, float(row_length[frontier].sum()), unexplored_local
    )
    bottom_up = not direction_optimizing
    previous_size = 0.0
    profile.begin()
    while frontier_size:
        if direction_optimizing:
            bottom_up = goes_bottom_up(
                bottom_up,
                frontier_size,
                previous_size,
                frontier_edges,
                unexplored_edges,
                turn_back=frontier_size < min(nvertices / BETA, previous_size),
            )
        if bottom_up:
            mark[frontier] = True
            in_queue = _global_bitmap(comm, mark, nvertices)
            open_vertices = open_vertices[~visited[open_vertices]]
            newly, open_vertices = threaded_bottom_up(
                graph, open_vertices, row_length, in_queue, pred, visited, team
            )
            mark[frontier] = False
        else:
            newly = expand_top_down(comm, graph, frontier, pred, visited, team)
        frontier_edges_local = float(row_length[newly].sum())
        unexplored_local -= frontier_edges_local
        totals = level_totals(comm, newly.size, frontier_edges_local, unexplored_local)
        profile.end_level(frontier_size, bottom_up)
        previous_size = frontier_size
        frontier_size, frontier_edges, unexplored_edges = totals
        frontier = newly


def bfs_replicated_csc(
    comm, graph, root: int, pred: np.ndarray, profile: LevelProfile, team=None
):
    """Replicated-bitmap top-down BFS over the transposed adjacency (Algorithm IV).

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    graph : Graph1D
        This rank's share of the graph, built with ``transpose=True``.
    root : int
        The global root vertex.
    pred : numpy.ndarray of int64
        Owned parents, all -1 on entry; filled.
    profile : LevelProfile
        Receives one entry per level.
    team : ThreadTeam, optional
        The rank's threads: a level's pieces of the global frontier are gathered
        over them, then settled in order (the tree does not depend on them).
    """
    if graph.csc_indptr is None:
        raise ValueError("replicated-csc needs a graph built with transpose=True")
    nvertices = graph.partition.nvertices
    lo, hi = graph.lo, graph.hi
    mark = np.zeros(hi - lo, dtype=bool)
    visited = np.zeros(hi - lo, dtype=bool)
    if lo <= root < hi:
        pred[root - lo] = root
        visited[root - lo] = True
    frontier = np.array([root], dtype=np.int64)
    profile.begin()
    while frontier.size:
        view = graph.column_view()
        pieces = row_chunks(
            graph.csc_indptr, frontier, piece_budget(graph.csc_indptr, frontier)
        )

        def gather(rows, view=view):
            local, parents = expand_rows(view, rows, rows)
            fresh = ~visited[local]
            return local[fresh], parents[fresh]

        gathered = team.map(gather, pieces) if team is not None else map(gather, pieces)
        found = [settle(pred, visited, *pair) for pair in gathered]
        newly = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
        mark[newly] = True
        in_queue = _global_bitmap(comm, mark, nvertices)
        next_frontier = np.flatnonzero(in_queue)
        mark[newly] = False
        profile.end_level(frontier.size)
        frontier = next_frontier
