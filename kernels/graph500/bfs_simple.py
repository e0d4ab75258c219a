"""The ``simple`` BFS: 1D partition, owners receive aggregated (vertex, parent) pairs.

Suzumura et al. 2011, Algorithm II. Every level, each rank expands its own frontier
vertices (top-down, vectorized CSR gathers), settles the neighbours it owns itself and
sends the other (neighbour, parent) pairs, aggregated per destination, to their owners
in one ``Alltoallv``; owners settle the unvisited ones, which form the next frontier. A
one-number ``Allreduce`` ends the level (and the search when no rank found anything). No
direction optimization: this is the reference's plain top-down algorithm.
"""

from __future__ import annotations

import numpy as np

from ._exchange import alltoallv_arrays
from ._frontier import LevelProfile, expand_rows, piece_budget, row_chunks

__all__ = ["bfs_simple", "expand_top_down", "settle"]


def settle(pred, visited, local, parents):
    """Give the unvisited of the owned vertices ``local`` (local indices) ``parents``.

    ``(local, parents)`` pairs must be distinct (they are: adjacency rows hold each
    neighbour once and every vertex is expanded once), so when a vertex comes with
    several parents exactly one of them is kept by the assignment and recognized
    below. Returns the newly visited local indices, each once, in no order.
    """
    fresh = ~visited[local]
    local = local[fresh]
    parents = parents[fresh]
    pred[local] = parents
    visited[local] = True
    return local[pred[local] == parents]


def _gather_piece(view, rows, visited, lo: int, hi: int, alone: bool):
    """A piece's (neighbour, parent) pairs; reads the graph and ``visited`` only.

    Returns the owned unvisited pairs (local neighbour indices, global parents),
    and the pairs of neighbours other ranks own (None for a rank alone). Owned
    neighbours already visited when the level began are dropped here, so the
    serial settling that follows sees only the new ones.
    """
    if alone:
        neighbours, parents = expand_rows(view, rows, rows)
        fresh = ~visited[neighbours]
        return neighbours[fresh], parents[fresh], None, None
    neighbours, parents = expand_rows(view, rows, rows + lo)
    owned = (neighbours >= lo) & (neighbours < hi)
    local = neighbours[owned] - lo
    fresh = ~visited[local]
    # ids travel as 8-byte integers, the id size of the reference (and of the
    # volume formula of Suzumura et al. 2011)
    return (
        local[fresh],
        parents[owned][fresh],
        neighbours[~owned].astype(np.int64),
        parents[~owned],
    )


def expand_top_down(comm, graph, frontier, pred, visited, team=None):
    """One top-down level of the 1D graph; returns the new local frontier.

    The level's rows are cut into pieces of about equal adjacency
    (:func:`~._frontier.piece_budget`); the pieces are gathered on the rank's
    threads (``team``), then settled one after the other in order, so the tree does
    not depend on the number of threads.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    graph : Graph1D
        This rank's share of the graph.
    frontier : numpy.ndarray of int
        Local indices of this level's owned frontier vertices.
    pred : numpy.ndarray of int64
        Owned parents (-1 = unvisited); updated.
    visited : numpy.ndarray of bool
        Owned visited flags; updated.
    team : ThreadTeam, optional
        The rank's threads; None expands on the calling thread.

    Returns
    -------
    numpy.ndarray of int64
        Local indices of the next frontier.
    """
    lo, hi, block = graph.lo, graph.hi, graph.partition.block
    view = graph.row_view()
    alone = comm.size == 1
    pieces = list(
        row_chunks(graph.indptr, frontier, piece_budget(graph.indptr, frontier))
    )

    def gather(rows):
        return _gather_piece(view, rows, visited, lo, hi, alone)

    gathered = team.map(gather, pieces) if team is not None else map(gather, pieces)
    found, outgoing_vertices, outgoing_parents = [], [], []
    for local, parents, away, away_parents in gathered:
        found.append(settle(pred, visited, local, parents))
        if not alone:
            outgoing_vertices.append(away)
            outgoing_parents.append(away_parents)
    if not alone:
        vertices = _joined(outgoing_vertices)
        parents = _joined(outgoing_parents)
        vertices, parents = alltoallv_arrays(comm, vertices // block, vertices, parents)
        found.append(settle(pred, visited, vertices - lo, parents))
    if not found:
        return np.empty(0, dtype=np.int64)
    return found[0] if len(found) == 1 else np.concatenate(found)


def _joined(arrays) -> np.ndarray:
    return np.concatenate(arrays) if arrays else np.empty(0, np.int64)


def bfs_simple(
    comm, graph, root: int, pred: np.ndarray, profile: LevelProfile, team=None
):
    """Breadth-first search from ``root``; fills the owned ``pred`` (-1 = unreached).

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    graph : Graph1D
        This rank's share of the graph.
    root : int
        The global root vertex.
    pred : numpy.ndarray of int64
        Owned parents, all -1 on entry.
    profile : LevelProfile
        Receives one entry per level.
    team : ThreadTeam, optional
        The rank's threads, over which each level's expansion runs.
    """
    lo, hi = graph.lo, graph.hi
    visited = np.zeros(hi - lo, dtype=bool)
    if lo <= root < hi:
        pred[root - lo] = root
        visited[root - lo] = True
        frontier = np.array([root - lo], dtype=np.int64)
    else:
        frontier = np.empty(0, dtype=np.int64)
    size_now = 1
    profile.begin()
    while size_now:
        frontier = expand_top_down(comm, graph, frontier, pred, visited, team)
        count = comm.allreduce(int(frontier.size))
        profile.end_level(size_now)
        size_now = count
