"""The ``simple`` BFS: 1D partition, owners receive aggregated (vertex, parent) pairs.

Seed 002, Algorithm II. Every level, each rank expands its own frontier vertices
(top-down, vectorized CSR gathers), settles the neighbours it owns itself and sends the
other (neighbour, parent) pairs, aggregated per destination, to their owners in one
``Alltoallv``; owners settle the unvisited ones, which form the next frontier. A
one-number ``Allreduce`` ends the level (and the search when no rank found anything).
No direction optimization: this is the reference's plain top-down algorithm.
"""

from __future__ import annotations

import numpy as np

from ._exchange import alltoallv_arrays
from ._frontier import LevelProfile, gather_rows, row_chunks

__all__ = ["settle", "bfs_simple", "expand_top_down"]


def settle(pred, local, parents, mark):
    """Give the unvisited of the owned vertices ``local`` (local indices) ``parents``.

    ``mark`` is an owned-size bool scratch array (all False on entry and exit).
    Returns the newly visited local indices, each once, sorted.
    """
    fresh = pred[local] < 0
    local = local[fresh]
    pred[local] = parents[fresh]
    mark[local] = True
    newly = np.flatnonzero(mark)
    mark[newly] = False
    return newly


def expand_top_down(comm, graph, frontier, pred, mark):
    """One top-down level of the 1D graph; returns the new local frontier.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    graph : Graph1D
        This rank's share of the graph.
    frontier : numpy.ndarray of int64
        Local indices of this level's owned frontier vertices.
    pred : numpy.ndarray of int64
        Owned parents (-1 = unvisited); updated.
    mark : numpy.ndarray of bool
        Owned-size scratch (all False).

    Returns
    -------
    numpy.ndarray of int64
        Local indices of the next frontier.
    """
    lo, hi, block = graph.lo, graph.hi, graph.partition.block
    outgoing_vertices, outgoing_parents = [], []
    found = []
    for rows in row_chunks(graph.indptr, frontier):
        neighbours, position = gather_rows(graph.indptr, graph.indices, rows)
        parents = rows[position] + lo
        if comm.size == 1:
            found.append(settle(pred, neighbours - lo, parents, mark))
            continue
        # Owned neighbours are settled here; chunks are independent since each
        # settle sees the updates of the previous ones.
        owned = (neighbours >= lo) & (neighbours < hi)
        found.append(settle(pred, neighbours[owned] - lo, parents[owned], mark))
        outgoing_vertices.append(neighbours[~owned])
        outgoing_parents.append(parents[~owned])
    if comm.size > 1:
        dtype = graph.indices.dtype
        vertices = np.concatenate(outgoing_vertices) if outgoing_vertices else np.empty(0, dtype)
        parents = (
            np.concatenate(outgoing_parents) if outgoing_parents else np.empty(0, np.int64)
        )
        vertices, parents = alltoallv_arrays(comm, vertices // block, vertices, parents)
        found.append(settle(pred, vertices - lo, parents, mark))
    if not found:
        return np.empty(0, dtype=np.int64)
    if len(found) == 1:
        return found[0]
    return np.unique(np.concatenate(found))


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
    mark = np.zeros(hi - lo, dtype=bool)
    if lo <= root < hi:
        pred[root - lo] = root
        frontier = np.array([root - lo], dtype=np.int64)
    else:
        frontier = np.empty(0, dtype=np.int64)
    size_now = 1
    profile.begin()
    while size_now:
        frontier = expand_top_down(comm, graph, frontier, pred, mark)
        count = comm.allreduce(int(frontier.size))
        profile.end_level(size_now)
        size_now = count
