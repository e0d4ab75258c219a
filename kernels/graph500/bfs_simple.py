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
from ._frontier import LevelProfile, expand_rows, row_chunks

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


def expand_top_down(comm, graph, frontier, pred, visited):
    """One top-down level of the 1D graph; returns the new local frontier.

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

    Returns
    -------
    numpy.ndarray of int64
        Local indices of the next frontier.
    """
    lo, hi, block = graph.lo, graph.hi, graph.partition.block
    outgoing_vertices, outgoing_parents = [], []
    found = []
    view = graph.row_view()
    for rows in row_chunks(graph.indptr, frontier):
        if comm.size == 1:
            neighbours, parents = expand_rows(view, rows, rows)
            fresh = ~visited[neighbours]
            local = neighbours[fresh]
            parents = parents[fresh]
            pred[local] = parents
            visited[local] = True
            found.append(local[pred[local] == parents])
            continue
        neighbours, parents = expand_rows(view, rows, rows + lo)
        # Owned neighbours are settled here; chunks are independent since each
        # settle sees the updates of the previous ones.
        owned = (neighbours >= lo) & (neighbours < hi)
        found.append(settle(pred, visited, neighbours[owned] - lo, parents[owned]))
        # ids travel as 8-byte integers, the id size of the reference (and of the
        # volume formula of Suzumura et al. 2011)
        outgoing_vertices.append(neighbours[~owned].astype(np.int64))
        outgoing_parents.append(parents[~owned])
    if comm.size > 1:
        vertices = (
            np.concatenate(outgoing_vertices)
            if outgoing_vertices
            else np.empty(0, np.int64)
        )
        parents = (
            np.concatenate(outgoing_parents)
            if outgoing_parents
            else np.empty(0, np.int64)
        )
        vertices, parents = alltoallv_arrays(comm, vertices // block, vertices, parents)
        found.append(settle(pred, visited, vertices - lo, parents))
    if not found:
        return np.empty(0, dtype=np.int64)
    return found[0] if len(found) == 1 else np.concatenate(found)


def bfs_simple(comm, graph, root: int, pred: np.ndarray, profile: LevelProfile):
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
        frontier = expand_top_down(comm, graph, frontier, pred, visited)
        count = comm.allreduce(int(frontier.size))
        profile.end_level(size_now)
        size_now = count
