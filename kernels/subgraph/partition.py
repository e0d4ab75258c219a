"""Random vertex partition of a graph over processes, and neighbour-list tasks.

Every process holds the whole edge list (graphs are generated or read identically on
all ranks) and keeps the rows of the vertices it owns. The neighbours of an owned vertex
owned by process ``q`` are *ghosts* from ``q``: their count tables arrive from ``q``
before the neighbour sum. Both sides know the ghost lists without communicating, since
the graph is symmetric: what ``p`` needs from ``q`` is ``q``'s vertices adjacent to
``p``'s, sorted by global id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["LocalGraph", "NeighbourOperator", "partition_vertices"]


def partition_vertices(n_vertices: int, parts: int, seed: int) -> np.ndarray:
    """Random balanced owner of every vertex (same on every process for a seed).

    Parameters
    ----------
    n_vertices, parts, seed : int

    Returns
    -------
    numpy.ndarray of int64, shape (n_vertices,)
    """
    rng = np.random.default_rng([int(seed), 0x5EED])
    owner = np.empty(n_vertices, dtype=np.int64)
    owner[rng.permutation(n_vertices)] = np.arange(n_vertices) % parts
    return owner


class NeighbourOperator:
    """Sums tables over neighbours: ``apply(X)[v] = sum_{u in N(v)} X[u]``.

    With a task size ``s`` (Algorithm 4 of Chen et al. 2018) every neighbour list longer
    than ``s`` is cut into tasks of at most ``s`` neighbours; the task list is shuffled,
    the tasks are summed independently and then added into their vertex (the reduction
    that threads would do with atomic adds).

    **Threads.** Given a :class:`~scaleprobe.kernels.comm.threads.ThreadTeam`, the
    rows (vertices, or tasks) are cut into one consecutive piece per thread holding
    about the same number of neighbour entries (:meth:`pieces`), so that every
    thread sums as many products. A piece of vertices writes its own rows; pieces of
    tasks are reduced into their vertices and the per-thread partial tables added up
    (exact for integer counts in float64, so the sums do not depend on the threads).

    Parameters
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_rows, n_columns)
    task_size : int, optional
    seed : int, default=0
        Seeds the task shuffle.
    """

    # Columns of the dense operand multiplied at once: keeps it in cache.
    chunk = 16

    def __init__(
        self, matrix: sp.csr_matrix, task_size: int | None = None, seed: int = 0
    ):
        self.shape = matrix.shape
        self.matrix = matrix
        self.reduce = None
        self._pieces: dict = {}
        degrees = np.diff(matrix.indptr)
        self.max_task = int(degrees.max()) if len(degrees) else 0
        self.n_tasks = int(np.count_nonzero(degrees))
        if task_size is not None and matrix.nnz:
            pieces = np.maximum(1, -(-degrees // task_size))
            owner = np.repeat(np.arange(len(degrees)), pieces)
            first = np.repeat(matrix.indptr[:-1], pieces)
            offset = np.arange(len(owner)) - np.repeat(
                np.cumsum(pieces) - pieces, pieces
            )
            starts = first + offset * task_size
            stops = np.minimum(starts + task_size, np.repeat(matrix.indptr[1:], pieces))
            order = np.random.default_rng([int(seed), 4]).permutation(len(owner))
            starts, stops, owner = starts[order], stops[order], owner[order]
            lengths = stops - starts
            take = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
            take = take + np.arange(lengths.sum())
            indptr = np.concatenate([[0], np.cumsum(lengths)])
            self.matrix = sp.csr_matrix(
                (matrix.data[take], matrix.indices[take], indptr),
                shape=(len(owner), matrix.shape[1]),
            )
            self.reduce = sp.csr_matrix(
                (
                    np.ones(len(owner), dtype=matrix.dtype),
                    (owner, np.arange(len(owner))),
                ),
                shape=(matrix.shape[0], len(owner)),
            )
            self.max_task = int(lengths.max()) if len(lengths) else 0
            self.n_tasks = int(np.count_nonzero(lengths))

    def pieces(self, parts: int) -> list:
        """The rows cut into ``parts`` pieces of balanced neighbour entries.

        Parameters
        ----------
        parts : int

        Returns
        -------
        list of tuple
            ``(lo, hi, rows, reduce)``: the operator's rows ``lo:hi`` and, with
            tasks, the columns ``lo:hi`` of the task-to-vertex reduction (else
            None); empty pieces are left out. Cached per ``parts``.
        """
        cached = self._pieces
        if parts not in cached:
            from scaleprobe.kernels.comm.threads import balanced_cuts

            cuts = balanced_cuts(np.diff(self.matrix.indptr), parts)
            pieces = []
            for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
                if hi > lo:
                    reduce = None
                    if self.reduce is not None:
                        reduce = self.reduce[:, lo:hi].tocsr()
                    pieces.append((lo, hi, self.matrix[lo:hi], reduce))
            cached[parts] = pieces
        return cached[parts]

    def _threaded(self, vertex_major: np.ndarray, team, out=None, during=None):
        """Neighbour sums of a ``(n_columns, c)`` table over the team's threads:
        ``(n_rows, c)``, or added into the row-major ``out`` when given; ``during``
        runs on the calling thread meanwhile."""
        pieces = self.pieces(team.threads)

        def piece(item):
            lo, hi, rows, reduce = item
            part = rows @ vertex_major
            if reduce is not None:
                return reduce @ part
            if out is None:
                return part
            out[:, lo:hi] += part.T  # rows of its own: no other thread writes them
            return None

        parts = team.map(piece, pieces, during=during)
        if self.reduce is None:
            if out is None:
                return np.concatenate(parts, axis=0) if parts else None
            return out
        total = parts[0]
        for part in parts[1:]:
            total += part
        if out is None:
            return total
        out += total.T
        return out

    def apply(self, vertex_major: np.ndarray) -> np.ndarray:
        """Neighbour sums of a ``(n_columns, c)`` table; returns ``(n_rows, c)``."""
        columns = vertex_major.shape[1]
        out = np.empty((self.matrix.shape[0], columns), dtype=vertex_major.dtype)
        for lo in range(0, columns, self.chunk):
            hi = min(columns, lo + self.chunk)
            out[:, lo:hi] = self.matrix @ np.ascontiguousarray(vertex_major[:, lo:hi])
        if self.reduce is not None:
            out = self.reduce @ out
        return out

    def add_to(
        self, out: np.ndarray, vertex_major: np.ndarray, team=None, during=None
    ) -> None:
        """Add the neighbour sums of a ``(n_columns, c)`` table into a row-major
        ``(c, n_rows)`` table, chunk by chunk (no full-size temporary), or by
        pieces over the ``team``'s threads while the calling thread runs
        ``during`` (the next transfer of a pipeline)."""
        if team is not None and team.threads > 1 and self.matrix.nnz:
            wide = vertex_major.astype(out.dtype, order="C")
            self._threaded(wide, team, out, during)
            return
        columns = vertex_major.shape[1]
        for lo in range(0, columns, self.chunk):
            hi = min(columns, lo + self.chunk)
            # Tables may arrive as small integers: widen to the table's type.
            chunk = vertex_major[:, lo:hi].astype(out.dtype, order="C")
            part = self.matrix @ chunk
            if self.reduce is not None:
                part = self.reduce @ part
            out[lo:hi] += part.T
        if during is not None:
            during()

    def apply_rows(self, table: np.ndarray, team=None) -> np.ndarray:
        """Neighbour sums of a row-major ``(c, n_columns)`` table; returns
        ``(c, n_rows)`` (by pieces over the ``team``'s threads when given)."""
        if team is not None and team.threads > 1 and self.matrix.nnz:
            summed = self._threaded(np.ascontiguousarray(table.T), team)
            return np.ascontiguousarray(summed.T)
        rows = table.shape[0]
        out = np.empty((rows, self.shape[0]), dtype=table.dtype)
        for lo in range(0, rows, self.chunk):
            hi = min(rows, lo + self.chunk)
            part = self.matrix @ np.ascontiguousarray(table[lo:hi].T)
            if self.reduce is not None:
                part = self.reduce @ part
            out[lo:hi] = part.T
        return out


@dataclass
class LocalGraph:
    """One process's part of a randomly partitioned graph.

    Attributes
    ----------
    vertices : numpy.ndarray
        Global ids of the owned vertices, sorted.
    local : NeighbourOperator
        Sums over owned neighbours (columns: owned vertices).
    ghosts : dict of int to NeighbourOperator
        Per source process, sums over its vertices (columns: its ghost list).
    send_index : dict of int to numpy.ndarray
        Per destination process, local indices of the vertices it needs, in order.
    recv_count : dict of int to int
        Per source process, the length of its ghost list.
    """

    vertices: np.ndarray
    local: NeighbourOperator
    ghosts: dict = field(default_factory=dict)
    send_index: dict = field(default_factory=dict)
    recv_count: dict = field(default_factory=dict)
    all_ghosts: NeighbourOperator | None = None

    @classmethod
    def build(
        cls,
        graph,
        owner: np.ndarray,
        rank: int,
        size: int,
        dtype=np.float64,
        task_size: int | None = None,
        seed: int = 0,
    ) -> LocalGraph:
        """Cut the rows of ``rank``'s vertices out of the whole graph.

        Parameters
        ----------
        graph : Graph
        owner : numpy.ndarray
            From :func:`partition_vertices`.
        rank, size : int
        dtype : numpy dtype, default=numpy.float64
        task_size : int, optional
            Neighbour-list task size (Algorithm 4).
        seed : int, default=0

        Returns
        -------
        LocalGraph
        """
        adjacency = graph.adjacency(dtype)
        vertices = np.flatnonzero(owner == rank)
        rows = adjacency[vertices]
        n_local = len(vertices)
        row_of = np.repeat(np.arange(n_local), np.diff(rows.indptr))
        cols = rows.indices
        col_owner = owner[cols]
        position = np.searchsorted(vertices, cols)
        mine = col_owner == rank
        local = sp.csr_matrix(
            (rows.data[mine], (row_of[mine], position[mine])), shape=(n_local, n_local)
        )
        result = cls(vertices, NeighbourOperator(local, task_size, seed))
        blocks = []
        for q in range(size):
            if q == rank:
                continue
            mask = col_owner == q
            needed = np.unique(cols[mask])
            columns = np.searchsorted(needed, cols[mask])
            block = sp.csr_matrix(
                (rows.data[mask], (row_of[mask], columns)), shape=(n_local, len(needed))
            )
            blocks.append(block)
            result.ghosts[q] = NeighbourOperator(block, task_size, seed + q)
            result.recv_count[q] = len(needed)
            result.send_index[q] = np.unique(row_of[mask])
        if blocks:
            result.all_ghosts = NeighbourOperator(
                sp.hstack(blocks, format="csr"), task_size, seed + size
            )
        return result
