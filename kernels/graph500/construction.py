"""Kernel 1: distributed CSR graphs from the generated edge list (1D and 2D partitions).

Both directions of every edge are stored, self-loops are dropped, duplicate edges are
merged in the adjacency (a BFS gains nothing from scanning an edge twice) but counted in
``degree``, so the traversed-edge count of a BFS equals the number of input edges,
duplicates included and self-loops excluded, inside the BFS component.

- :func:`build_1d`: rank ``r`` owns a block of vertices (:class:`VertexPartition`) and
  the adjacency rows of those vertices (global neighbour ids); optionally also the
  transposed view (for each global vertex, its owned neighbours), which the
  ``replicated-csc`` BFS scans.
- :func:`build_2d`: ranks form an R x C grid (:func:`grid_shape`); rank (i, j) owns
  vertex block ``i*C + j`` and stores the directed edges ``u -> v`` whose source is owned
  by a rank of grid column j and whose target is owned by a rank of grid row i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._exchange import alltoallv_arrays
from ._partition import VertexPartition, grid_shape

__all__ = ["Graph1D", "Graph2D", "build_1d", "build_2d"]


def _compressed_rows(rows, cols, nrows, ncols):
    """CSR (indptr int64, sorted unique indices) of the pairs, and the row counts.

    One sort of the packed ``row << bits | col`` keys (numpy sorts 64-bit integers
    with a vectorized quicksort, far faster than an argsort) followed by a
    run-length pass; duplicates are merged in the pattern but counted in the degree.
    """
    degree = np.bincount(rows, minlength=nrows).astype(np.int64)
    shift = max(int(ncols - 1).bit_length(), 1)
    key = rows.astype(np.int64) << shift
    key |= cols
    key.sort()
    first = np.empty(key.size, dtype=bool)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    key = key[first]
    del first
    index_type = np.int32 if ncols < 2**31 - 1 else np.int64
    indices = (key & ((1 << shift) - 1)).astype(index_type)
    key >>= shift
    indptr = np.zeros(nrows + 1, dtype=np.int64)
    np.cumsum(np.bincount(key, minlength=nrows), out=indptr[1:])
    return indptr, indices, degree


def _directed_pairs(source, target):
    """Both directions of every non-loop edge."""
    keep = source != target
    source, target = source[keep], target[keep]
    return np.concatenate((source, target)), np.concatenate((target, source))


@dataclass
class Graph1D:
    """One rank's share of a 1D-partitioned graph.

    Attributes
    ----------
    partition : VertexPartition
        Vertex ownership.
    lo, hi : int
        The owned vertex range.
    indptr, indices : numpy.ndarray
        CSR rows of the owned vertices (local row ``v - lo``), global neighbour ids.
    degree : numpy.ndarray of int64
        Degree of each owned vertex, duplicates counted, self-loops not.
    csc_indptr, csc_indices : numpy.ndarray or None
        For each global vertex ``u``, the local indices of its owned neighbours.
    """

    partition: VertexPartition
    lo: int
    hi: int
    indptr: np.ndarray
    indices: np.ndarray
    degree: np.ndarray
    csc_indptr: np.ndarray | None = None
    csc_indices: np.ndarray | None = None

    @property
    def nlocal(self) -> int:
        """Number of owned vertices."""
        return self.hi - self.lo

    @property
    def nbytes(self) -> int:
        """Bytes held by the adjacency arrays."""
        arrays = (self.indptr, self.indices, self.degree, self.csc_indptr, self.csc_indices)
        return sum(a.nbytes for a in arrays if a is not None)


def build_1d(comm, source, target, scale: int, *, transpose: bool = False) -> Graph1D:
    """Build the 1D-partitioned CSR graph from this rank's slice of the edge list.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    source, target : numpy.ndarray
        This rank's generated edges.
    scale : int
        log2 of the number of vertices.
    transpose : bool, default=False
        Also build the column view used by the ``replicated-csc`` BFS.

    Returns
    -------
    Graph1D
    """
    nvertices = 1 << scale
    partition = VertexPartition.create(nvertices, comm.size)
    lo, hi = partition.bounds(comm.rank)
    rows, cols = _directed_pairs(source, target)
    rows, cols = alltoallv_arrays(comm, partition.owner(rows), rows, cols)
    local_rows = (rows - lo).astype(cols.dtype, copy=False)
    del rows
    indptr, indices, degree = _compressed_rows(local_rows, cols, hi - lo, nvertices)
    graph = Graph1D(partition, lo, hi, indptr, indices, degree)
    if transpose:
        if comm.size == 1:  # the adjacency of an undirected graph is symmetric
            graph.csc_indptr, graph.csc_indices = indptr, indices
        else:
            graph.csc_indptr, graph.csc_indices, _ = _compressed_rows(
                cols, local_rows, nvertices, hi - lo
            )
    return graph


@dataclass
class Graph2D:
    """One rank's block of a 2D-partitioned graph on an R x C grid.

    Rows of the local CSR are the sources of grid column ``col`` in column-local
    numbering (``grid_row_of_owner * block + offset``); indices are targets relative to
    ``row_lo``, the first vertex owned by grid row ``row``.

    Attributes
    ----------
    partition : VertexPartition
        Vertex ownership (rank ``i*C + j`` owns block ``i*C + j``).
    grid : tuple of int
        (R, C).
    row, col : int
        This rank's grid position.
    row_lo, row_hi : int
        Vertices owned by this grid row.
    indptr, indices : numpy.ndarray
        The local block of the adjacency.
    degree : numpy.ndarray of int64
        Degree of each owned vertex (duplicates counted, self-loops not).
    row_comm, col_comm : InstrumentedComm
        Ranks of this grid row (ordered by column) and of this grid column (by row).
    """

    partition: VertexPartition
    grid: tuple[int, int]
    row: int
    col: int
    row_lo: int
    row_hi: int
    indptr: np.ndarray
    indices: np.ndarray
    degree: np.ndarray
    row_comm: object
    col_comm: object

    @property
    def nbytes(self) -> int:
        """Bytes held by the adjacency arrays."""
        return self.indptr.nbytes + self.indices.nbytes + self.degree.nbytes

    def column_local(self, vertices: np.ndarray) -> np.ndarray:
        """Column-local row index of vertices owned by this grid column."""
        block = self.partition.block
        owner = vertices // block
        return (owner // self.grid[1]) * block + (vertices - owner * block)

    def column_global(self, local: np.ndarray) -> np.ndarray:
        """Global ids of column-local indices (inverse of :meth:`column_local`)."""
        block = self.partition.block
        grid_row, offset = np.divmod(local, block)
        return (grid_row * self.grid[1] + self.col) * block + offset


def build_2d(comm, source, target, scale: int) -> Graph2D:
    """Build the 2D edge-partitioned graph (Buluc & Madduri) on :func:`grid_shape`.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    source, target : numpy.ndarray
        This rank's generated edges.
    scale : int
        log2 of the number of vertices.

    Returns
    -------
    Graph2D
    """
    nvertices = 1 << scale
    nrows, ncols = grid_shape(comm.size)
    partition = VertexPartition.create(nvertices, comm.size)
    block = partition.block
    row, col = divmod(comm.rank, ncols)
    row_comm = comm.Split(row, col)
    col_comm = comm.Split(nrows + col, row)
    heads, tails = _directed_pairs(source, target)
    destination = (partition.owner(tails) // ncols) * ncols + partition.owner(heads) % ncols
    heads, tails = alltoallv_arrays(comm, destination, heads, tails)
    row_lo = min(row * ncols * block, nvertices)
    row_hi = min(row_lo + ncols * block, nvertices)
    owner = heads // block
    local_heads = ((owner // ncols) * block + (heads - owner * block)).astype(heads.dtype)
    local_tails = (tails - row_lo).astype(tails.dtype)
    del heads, tails, owner
    indptr, indices, column_degree = _compressed_rows(
        local_heads, local_tails, nrows * block, max(row_hi - row_lo, 1)
    )
    # Degrees of the grid column's vertices are split over its R ranks: sum them.
    if nrows > 1:
        total = np.empty_like(column_degree)
        col_comm.Allreduce(column_degree, total)
        column_degree = total
    lo, hi = partition.bounds(comm.rank)
    degree = column_degree[row * block : row * block + (hi - lo)].copy()
    return Graph2D(
        partition, (nrows, ncols), row, col, row_lo, row_hi,
        indptr, indices, degree, row_comm, col_comm,
    )
