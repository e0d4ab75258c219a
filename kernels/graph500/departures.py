"""Opt-in BFS variants that restore optimisations of Suzumura et al. 2011.

The built-in variants depart from the implementations Suzumura et al. 2011 measure in
ways that suit vectorized numpy (``docs/kernels/graph500.md``, "Departures"). These
variants put two of the optimisations back so that their effect on TEPS can be
measured (``tests/benchmarks/bench_graph500_variants.py``); they give the same
(validated) BFS trees:

- ``simple-isend``: the reference ``simple`` code's exchange. Instead of one aggregated
  ``Alltoallv`` per level, the (vertex, parent) pairs travel in buffers of
  :data:`PAIRS_PER_BUFFER` pairs (256, 4 KiB), each its own ``Isend``, received by
  matching ``Irecv``s; an ``Alltoall`` of the pair counts first tells every rank how
  many buffers to expect (the reference detects the end of a level by messages
  instead).
- ``replicated-csr-summary``: ``replicated-csr`` whose bottom-up checks first test a
  summary bitmap, one bit per :data:`SUMMARY_WORD` bits of ``in_queue``, set when any
  of them is, and read ``in_queue`` only where the summary bit is set (the
  "in-queue summary" of Suzumura et al. 2011, which keeps the sparse first levels'
  checks in cache).
- ``replicated-csc-grouped``: ``replicated-csc`` over the reference's compact CSC:
  one column pointer per :data:`COLUMN_GROUP` (32) global columns, each row entry
  holding ``local row << 5 | column mod 32``; a level scans the groups that hold a
  frontier vertex and keeps the entries whose column is in ``in_queue``. It is
  derived from the row adjacency at the first search (and kept with the graph), so
  that search's time includes it: read its median TEPS.
"""

from __future__ import annotations

import numpy as np

from ._exchange import group_by_destination
from ._frontier import LevelProfile, expand_rows, gather_rows, row_chunks
from .bfs_replicated import (
    BETA,
    _global_bitmap,
    bottom_up_step,
    goes_bottom_up,
    level_totals,
)
from .bfs_simple import bfs_simple, expand_top_down, settle

__all__ = [
    "COLUMN_GROUP",
    "DEPARTURES",
    "PAIRS_PER_BUFFER",
    "SUMMARY_WORD",
    "SummarizedBitmap",
    "bfs_replicated_csc_grouped",
    "bfs_replicated_csr_summary",
    "bfs_simple_isend",
    "grouped_columns",
    "isend_pairs",
]

#: (vertex, parent) pairs per message of ``simple-isend`` (the reference's buffers).
PAIRS_PER_BUFFER = 256
#: Bits of ``in_queue`` summarised by one bit of the summary bitmap.
SUMMARY_WORD = 64
#: Global columns sharing one column pointer in ``replicated-csc-grouped``.
COLUMN_GROUP = 32
_TAG = 48


def isend_pairs(comm, destination, vertices, parents, pairs: int = PAIRS_PER_BUFFER):
    """Send pair ``i`` to rank ``destination[i]`` in buffers of ``pairs`` pairs.

    Parameters
    ----------
    comm : InstrumentedComm
        The communicator.
    destination : numpy.ndarray of int
        Destination rank of each pair.
    vertices, parents : numpy.ndarray of int64
        The pairs.
    pairs : int, default=PAIRS_PER_BUFFER
        Pairs per message.

    Returns
    -------
    tuple of numpy.ndarray
        The received vertices and parents, grouped by source rank in rank order.
    """
    size = comm.size
    order, send_counts = group_by_destination(destination, size)
    outgoing = np.empty((order.size, 2), dtype=np.int64)
    outgoing[:, 0] = vertices[order]
    outgoing[:, 1] = parents[order]
    send_counts = send_counts.astype(np.int64)
    recv_counts = np.empty(size, dtype=np.int64)
    comm.Alltoall(send_counts, recv_counts)
    incoming = np.empty((int(recv_counts.sum()), 2), dtype=np.int64)
    requests = []
    for buffers, counts, post in (
        (incoming, recv_counts, lambda buf, rank: comm.Irecv(buf, rank, _TAG)),
        (outgoing, send_counts, lambda buf, rank: comm.Isend(buf, rank, _TAG)),
    ):
        offset = 0
        for rank, count in enumerate(counts.tolist()):
            for start in range(offset, offset + count, pairs):
                stop = min(offset + count, start + pairs)
                requests.append(post(buffers[start:stop], rank))
            offset += count
    comm.Waitall(requests)
    return incoming[:, 0], incoming[:, 1]


def _expand_isend(comm, graph, frontier, pred, visited):
    """One top-down level of ``simple`` with the pairs sent by :func:`isend_pairs`."""
    lo, hi, block = graph.lo, graph.hi, graph.partition.block
    view = graph.row_view()
    found, out_vertices, out_parents = [], [], []
    for rows in row_chunks(graph.indptr, frontier):
        neighbours, parents = expand_rows(view, rows, rows + lo)
        owned = (neighbours >= lo) & (neighbours < hi)
        found.append(settle(pred, visited, neighbours[owned] - lo, parents[owned]))
        out_vertices.append(neighbours[~owned].astype(np.int64))
        out_parents.append(parents[~owned].astype(np.int64))
    vertices = np.concatenate(out_vertices) if out_vertices else np.empty(0, np.int64)
    parents = np.concatenate(out_parents) if out_parents else np.empty(0, np.int64)
    vertices, parents = isend_pairs(comm, vertices // block, vertices, parents)
    found.append(settle(pred, visited, vertices - lo, parents))
    return np.concatenate(found)


def bfs_simple_isend(comm, graph, root: int, pred: np.ndarray, profile: LevelProfile):
    """The ``simple`` BFS with Isend buffers of 256 pairs (``simple-isend``).

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
    """
    if comm.size == 1:  # nothing to send: the same search as ``simple``
        bfs_simple(comm, graph, root, pred, profile)
        return
    lo, hi = graph.lo, graph.hi
    visited = np.zeros(hi - lo, dtype=bool)
    frontier = np.empty(0, dtype=np.int64)
    if lo <= root < hi:
        pred[root - lo] = root
        visited[root - lo] = True
        frontier = np.array([root - lo], dtype=np.int64)
    size_now = 1
    profile.begin()
    while size_now:
        frontier = _expand_isend(comm, graph, frontier, pred, visited)
        count = comm.allreduce(int(frontier.size))
        profile.end_level(size_now)
        size_now = count


class SummarizedBitmap:
    """A bool bitmap read through a summary: one bit per :data:`SUMMARY_WORD` bits.

    Parameters
    ----------
    bitmap : numpy.ndarray of bool
        The global ``in_queue``.

    Examples
    --------
    >>> bits = np.zeros(200, dtype=bool); bits[[3, 130]] = True
    >>> view = SummarizedBitmap(bits)
    >>> view.summary.tolist(), view[np.array([3, 4, 70, 130])].tolist()
    ([True, False, True, False], [True, False, False, True])
    """

    def __init__(self, bitmap: np.ndarray):
        self.bitmap = bitmap
        words = -(-bitmap.size // SUMMARY_WORD)
        padded = np.zeros(words * SUMMARY_WORD, dtype=bool)
        padded[: bitmap.size] = bitmap
        self.summary = padded.reshape(words, SUMMARY_WORD).any(axis=1)

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        """Membership of ``index``: the summary first, ``in_queue`` where it is set."""
        hit = self.summary[index // SUMMARY_WORD]
        where = np.flatnonzero(hit)
        hit[where] = self.bitmap[index[where]]
        return hit


def bfs_replicated_csr_summary(
    comm,
    graph,
    root: int,
    pred: np.ndarray,
    profile: LevelProfile,
    *,
    direction_optimizing: bool = True,
):
    """``replicated-csr`` whose bottom-up checks read an in-queue summary first.

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
    """
    nvertices = graph.partition.nvertices
    lo, hi = graph.lo, graph.hi
    row_length = np.diff(graph.indptr)
    mark = np.zeros(hi - lo, dtype=bool)
    visited = np.zeros(hi - lo, dtype=bool)
    open_vertices = np.flatnonzero(row_length)
    unexplored = float(row_length.sum())
    frontier = np.empty(0, dtype=np.int64)
    if lo <= root < hi:
        pred[root - lo] = root
        visited[root - lo] = True
        frontier = np.array([root - lo], dtype=np.int64)
        open_vertices = open_vertices[open_vertices != root - lo]
    totals = level_totals(
        comm, frontier.size, float(row_length[frontier].sum()), unexplored
    )
    bottom_up, previous = not direction_optimizing, 0.0
    profile.begin()
    while totals[0]:
        if direction_optimizing:
            bottom_up = goes_bottom_up(
                bottom_up,
                totals[0],
                previous,
                totals[1],
                totals[2],
                turn_back=totals[0] < min(nvertices / BETA, previous),
            )
        if bottom_up:
            mark[frontier] = True
            in_queue = SummarizedBitmap(_global_bitmap(comm, mark, nvertices))
            open_vertices = open_vertices[~visited[open_vertices]]
            newly, open_vertices = bottom_up_step(
                graph, open_vertices, row_length, in_queue, pred, visited
            )
            mark[frontier] = False
        else:
            newly = expand_top_down(comm, graph, frontier, pred, visited)
        edges = float(row_length[newly].sum())
        unexplored -= edges
        profile.end_level(totals[0], bottom_up)
        previous = totals[0]
        totals = level_totals(comm, newly.size, edges, unexplored)
        frontier = newly


def grouped_columns(graph):
    """The compact CSC of one rank's rows: group pointers and packed row entries.

    Parameters
    ----------
    graph : Graph1D
        This rank's share of the graph (its rows; the graph is undirected, so the
        transposed block is the rows' adjacency read by column).

    Returns
    -------
    group_ptr : numpy.ndarray of int64
        ``ceil(nvertices / 32) + 1`` pointers into ``entries``.
    entries : numpy.ndarray of int64
        ``local row << 5 | column mod 32``, sorted by column.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> part = SimpleNamespace(nvertices=64)
    >>> g = SimpleNamespace(partition=part, indptr=np.array([0, 2, 3]),
    ...                     indices=np.array([5, 40, 5]))
    >>> ptr, entries = grouped_columns(g)
    >>> ptr.tolist(), [(e >> 5, e & 31) for e in entries.tolist()]
    ([0, 2, 3], [(0, 5), (1, 5), (0, 8)])
    """
    cached = getattr(graph, "grouped_csc", None)
    if cached is not None:
        return cached
    import scipy.sparse

    nvertices = graph.partition.nvertices
    nrows = graph.indptr.size - 1
    data = np.ones(graph.indices.size, dtype=bool)
    block = scipy.sparse.csr_matrix(
        (data, graph.indices, graph.indptr), shape=(nrows, nvertices)
    ).tocsc()
    block.sort_indices()
    columns = np.repeat(np.arange(nvertices, dtype=np.int64), np.diff(block.indptr))
    entries = (block.indices.astype(np.int64) << 5) | (columns % COLUMN_GROUP)
    cuts = np.append(np.arange(0, nvertices, COLUMN_GROUP), nvertices)
    group_ptr = block.indptr[cuts].astype(np.int64)
    graph.grouped_csc = (group_ptr, entries)  # kept for the next searches
    return group_ptr, entries


def bfs_replicated_csc_grouped(
    comm, graph, root: int, pred: np.ndarray, profile: LevelProfile
):
    """``replicated-csc`` over 32-column groups (``replicated-csc-grouped``).

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
    """
    group_ptr, entries = grouped_columns(graph)
    nvertices = graph.partition.nvertices
    lo, hi = graph.lo, graph.hi
    mark = np.zeros(hi - lo, dtype=bool)
    visited = np.zeros(hi - lo, dtype=bool)
    if lo <= root < hi:
        pred[root - lo] = root
        visited[root - lo] = True
    in_queue = np.zeros(nvertices, dtype=bool)
    in_queue[root] = True
    frontier_size = 1
    profile.begin()
    while frontier_size:
        groups = np.flatnonzero(
            np.add.reduceat(in_queue, np.arange(0, nvertices, COLUMN_GROUP))
        )
        found = []
        for piece in row_chunks(group_ptr, groups):
            packed, position = gather_rows(group_ptr, entries, piece)
            column = piece[position] * COLUMN_GROUP + (packed % COLUMN_GROUP)
            keep = in_queue[column]
            found.append(settle(pred, visited, packed[keep] >> 5, column[keep]))
        newly = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
        mark[newly] = True
        in_queue = _global_bitmap(comm, mark, nvertices)
        if in_queue is mark:  # one rank: the bitmap is the mask cleared below
            in_queue = mark.copy()
        mark[newly] = False
        profile.end_level(frontier_size)
        frontier_size = int(np.count_nonzero(in_queue))


def _search_summary(comm, config, graph, root, pred, profile):
    bfs_replicated_csr_summary(
        comm,
        graph,
        root,
        pred,
        profile,
        direction_optimizing=config.direction_optimizing,
    )


def _search_isend(comm, config, graph, root, pred, profile):
    bfs_simple_isend(comm, graph, root, pred, profile)


def _search_grouped(comm, config, graph, root, pred, profile):
    bfs_replicated_csc_grouped(comm, graph, root, pred, profile)


#: Variant name to search function ``(comm, config, graph, root, pred, profile)``;
#: all build the plain 1D graph.
DEPARTURES = {
    "simple-isend": _search_isend,
    "replicated-csr-summary": _search_summary,
    "replicated-csc-grouped": _search_grouped,
}
