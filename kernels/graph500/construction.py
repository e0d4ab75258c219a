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
  vertex block ``i*C + j`` and stores the directed edges ``u -> v`` whose source is
  owned by a rank of grid column j and whose target is owned by a rank of grid row i.

Vertex ownership (1D blocks, :class:`VertexPartition`) and the 2D rank grid
(:func:`grid_shape`) are shared by all BFS variants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._exchange import alltoallv_arrays
from ._frontier import csr_view

__all__ = [
    "Graph1D",
    "Graph2D",
    "VertexPartition",
    "build_1d",
    "build_2d",
    "grid_shape",
]


_ALIGN = 64  # blocks are whole 64-bit words of a bitmap, so packed bitmaps concatenate


@dataclass(frozen=True)
class VertexPartition:
    """Contiguous blocks of vertices, one per rank, each a multiple of 64 vertices.

    Rank ``r`` owns ``[r * block, min((r + 1) * block, nvertices))``; the last ranks
    may own fewer (or no) vertices. Every variant, the validation and the root
    selection use this ownership, so parent arrays are comparable across variants.

    Examples
    --------
    >>> part = VertexPartition.create(1000, 3)
    >>> part.block, part.bounds(2)
    (384, (768, 1000))
    """

    nvertices: int
    size: int
    block: int

    @classmethod
    def create(cls, nvertices: int, size: int) -> VertexPartition:
        """Partition ``nvertices`` over ``size`` ranks."""
        per_rank = -(-nvertices // size)
        block = max(_ALIGN, -(-per_rank // _ALIGN) * _ALIGN)
        return cls(int(nvertices), int(size), int(block))

    def bounds(self, rank: int) -> tuple[int, int]:
        """The owned range ``[lo, hi)`` of ``rank``."""
        lo = min(rank * self.block, self.nvertices)
        return lo, min(lo + self.block, self.nvertices)

    def owner(self, vertices: np.ndarray) -> np.ndarray:
        """The owning rank of each vertex."""
        return vertices // self.block

    def counts(self) -> np.ndarray:
        """Number of vertices owned by each rank."""
        return np.array([hi - lo for lo, hi in map(self.bounds, range(self.size))])


def grid_shape(size: int) -> tuple[int, int]:
    """The R x C processor grid of the 2D algorithm for ``size`` ranks.

    ``square`` rank counts (``q**2``) give ``q x q``; ``two_p_squared`` counts
    (``2 q**2``, the IBM code's rule) give ``2q x q`` (R = 2C). Any other count gets the
    most nearly square factorization with R >= C (a prime count degenerates to a
    column of ranks, which is still correct).

    Examples
    --------
    >>> grid_shape(16), grid_shape(8), grid_shape(18), grid_shape(6)
    ((4, 4), (4, 2), (6, 3), (3, 2))
    """
    if size < 1:
        raise ValueError(f"the rank count must be positive, got {size}")
    root = math.isqrt(size)
    if root * root == size:
        return root, root
    half = size // 2
    root = math.isqrt(half)
    if size % 2 == 0 and root * root == half:
        return 2 * root, root
    cols = max(c for c in range(1, math.isqrt(size) + 1) if size % c == 0)
    return size // cols, cols


_SLAB = 1 << 22  # keys deduplicated per step: bounds the temporaries


def _packed_pairs(source, target, shift):
    """int64 keys ``u << shift | v`` of both directions of every non-loop edge."""
    keep = source != target
    heads, tails = source[keep], target[keep]
    n = heads.size
    key = np.empty(2 * n, dtype=np.int64)
    for part, (u, v) in ((key[:n], (heads, tails)), (key[n:], (tails, heads))):
        part[:] = u
        part <<= shift
        part |= v
    return key


def _compress(key, row_lo, nrows, shift, ncols):
    """CSR of packed ``row << shift | col`` keys (sorted in place).

    numpy sorts 64-bit integers with a vectorized quicksort, far faster than an
    argsort of the rows; duplicates are then merged in slabs (so no second full-size
    key array is ever held) but counted in the returned degree.

    Returns
    -------
    indptr : numpy.ndarray of int64
    indices : numpy.ndarray of int32 (int64 for more than 2**31 columns)
    degree : numpy.ndarray of int64
        Entries per row before merging duplicates.
    """
    key.sort()
    row_starts = (np.arange(nrows + 1, dtype=np.int64) + row_lo) << shift
    degree = np.diff(np.searchsorted(key, row_starts))
    mask = (1 << shift) - 1
    slabs = [(lo, min(lo + _SLAB, key.size)) for lo in range(0, key.size, _SLAB)]

    def firsts(lo, hi):
        previous = key[lo - 1 : hi - 1] if lo else np.concatenate(([-1], key[: hi - 1]))
        return key[lo:hi] != previous

    total = sum(int(np.count_nonzero(firsts(lo, hi))) for lo, hi in slabs)
    indices = np.empty(total, dtype=np.int32 if ncols < 2**31 - 1 else np.int64)
    counts = np.zeros(nrows, dtype=np.int64)
    filled = 0
    for lo, hi in slabs:
        unique = key[lo:hi][firsts(lo, hi)]
        indices[filled : filled + unique.size] = unique & mask
        filled += unique.size
        counts += np.bincount((unique >> shift) - row_lo, minlength=nrows)
    indptr = np.zeros(nrows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, indices, degree


def _array_bytes(arrays) -> int:
    """Bytes of the distinct arrays (a symmetric graph may share its transpose)."""
    return sum(a.nbytes for a in {id(a): a for a in arrays if a is not None}.values())


def _view_bytes(views: dict) -> int:
    """Bytes the cached scipy views add (their bool data and narrowed indptr)."""
    return sum(v.data.nbytes + v.indptr.nbytes for v in views.values())


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
    _views: dict = field(default_factory=dict, repr=False)

    def row_view(self):
        """Cached scipy view of the owned rows (for compiled row gathers)."""
        if "rows" not in self._views:
            self._views["rows"] = csr_view(
                self.indptr, self.indices, self.partition.nvertices
            )
        return self._views["rows"]

    def column_view(self):
        """Cached scipy view of the transposed adjacency (global vertex -> owned)."""
        if "columns" not in self._views:
            self._views["columns"] = csr_view(
                self.csc_indptr, self.csc_indices, self.nlocal
            )
        return self._views["columns"]

    @property
    def nlocal(self) -> int:
        """Number of owned vertices."""
        return self.hi - self.lo

    @property
    def nbytes(self) -> int:
        """Bytes held by the adjacency arrays."""
        arrays = (
            self.indptr,
            self.indices,
            self.degree,
            self.csc_indptr,
            self.csc_indices,
        )
        return _array_bytes(arrays) + _view_bytes(self._views)


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
    shift = max(scale, 1)
    key = _packed_pairs(source, target, shift)
    if comm.size > 1:
        (key,) = alltoallv_arrays(comm, (key >> shift) // partition.block, key)
    indptr, indices, degree = _compress(key, lo, hi - lo, shift, nvertices)
    del key
    graph = Graph1D(partition, lo, hi, indptr, indices, degree)
    if transpose:
        if comm.size == 1:  # the adjacency of an undirected graph is symmetric
            graph.csc_indptr, graph.csc_indices = indptr, indices
        else:
            row_shift = max(int(hi - lo - 1).bit_length(), 1)
            key = indices.astype(np.int64) << row_shift
            key |= np.repeat(np.arange(hi - lo, dtype=np.int64), np.diff(indptr))
            graph.csc_indptr, graph.csc_indices, _ = _compress(
                key, 0, nvertices, row_shift, hi - lo
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
    t_indptr, t_indices : numpy.ndarray or None
        The block's transpose: rows are targets relative to ``row_lo``, indices
        column-local sources.
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
    t_indptr: np.ndarray | None = None
    t_indices: np.ndarray | None = None
    _views: dict = field(default_factory=dict, repr=False)

    def row_view(self):
        """Cached scipy view of the local block (for compiled row gathers)."""
        if "rows" not in self._views:
            self._views["rows"] = csr_view(
                self.indptr, self.indices, max(self.row_hi - self.row_lo, 1)
            )
        return self._views["rows"]

    @property
    def nbytes(self) -> int:
        """Bytes held by the adjacency arrays."""
        arrays = (self.indptr, self.indices, self.degree, self.t_indptr, self.t_indices)
        return _array_bytes(arrays) + _view_bytes(self._views)

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


def build_2d(comm, source, target, scale: int, *, transpose: bool = False) -> Graph2D:
    """Build the 2D edge-partitioned graph of Buluç and Madduri 2011 on a grid.

    The grid is :func:`grid_shape`'s.

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    source, target : numpy.ndarray
        This rank's generated edges.
    scale : int
        log2 of the number of vertices.
    transpose : bool, default=False
        Also build the block's transpose (target -> sources), which bottom-up levels
        scan.

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
    shift = max(scale, 1)
    key = _edges_to_blocks(comm, _packed_pairs(source, target, shift), shift, block)
    row_lo = min(row * ncols * block, nvertices)
    row_hi = min(row_lo + ncols * block, nvertices)
    tail_shift = max(int(max(row_hi - row_lo, 1) - 1).bit_length(), 1)
    # global (u, v) -> (column-local u, row-local v); the identity on a 1 x 1 grid
    if comm.size > 1 or tail_shift != shift:
        _relabel(key, shift, tail_shift, block, ncols, row_lo)
    indptr, indices, column_degree = _compress(
        key, 0, nrows * block, tail_shift, max(row_hi - row_lo, 1)
    )
    del key
    # Degrees of the grid column's vertices are split over its R ranks: sum them.
    if nrows > 1:
        total = np.empty_like(column_degree)
        col_comm.Allreduce(column_degree, total)
        column_degree = total
    lo, hi = partition.bounds(comm.rank)
    degree = column_degree[row * block : row * block + (hi - lo)].copy()
    graph = Graph2D(
        partition,
        (nrows, ncols),
        row,
        col,
        row_lo,
        row_hi,
        indptr,
        indices,
        degree,
        row_comm,
        col_comm,
    )
    if transpose:
        _add_transpose(graph, comm.size, nrows * block)
    return graph


def _edges_to_blocks(comm, key, shift: int, block: int):
    """Send every packed edge ``(u << shift) | v`` to the rank of its block."""
    if comm.size == 1:
        return key
    mask = (1 << shift) - 1
    ncols = grid_shape(comm.size)[1]
    destination = np.empty(key.size, dtype=np.int32)
    for lo in range(0, key.size, _SLAB):
        part = key[lo : lo + _SLAB]
        head_owner = (part >> shift) // block
        tail_owner = (part & mask) // block
        destination[lo : lo + _SLAB] = (
            tail_owner // ncols
        ) * ncols + head_owner % ncols
    (key,) = alltoallv_arrays(comm, destination, key)
    return key


def _relabel(key, shift, tail_shift, block, ncols, row_lo) -> None:
    """Rewrite packed global ``(u, v)`` in place as (column-local u, row-local v)."""
    mask = (1 << shift) - 1
    for lo in range(0, key.size, _SLAB):
        part = key[lo : lo + _SLAB]
        heads, tails = part >> shift, part & mask
        owner = heads // block
        heads += (owner // ncols) * block - owner * block
        part[:] = heads << tail_shift
        part |= tails - row_lo


def _add_transpose(graph, size: int, column_vertices: int) -> None:
    """The block's transpose (target -> sources), which bottom-up levels scan."""
    if size == 1:  # the single block is the whole symmetric adjacency
        graph.t_indptr, graph.t_indices = graph.indptr, graph.indices
        return
    head_shift = max(int(column_vertices - 1).bit_length(), 1)
    key = graph.indices.astype(np.int64) << head_shift
    key |= np.repeat(np.arange(column_vertices, dtype=np.int64), np.diff(graph.indptr))
    graph.t_indptr, graph.t_indices, _ = _compress(
        key, 0, max(graph.row_hi - graph.row_lo, 0), head_shift, column_vertices
    )
