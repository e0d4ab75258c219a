"""Vectorized frontier operations and the per-level profile of the BFS variants."""

from __future__ import annotations

import numpy as np

# Largest number of adjacency entries expanded in one vectorized step: bounds the
# temporaries (about 30 bytes per entry) and keeps them cache friendly.
CHUNK_EDGES = 1 << 21
#: A level's expansion is cut into about this many pieces (none smaller than
#: :data:`MIN_PIECE_EDGES` entries), whatever the threads: the pieces run on a
#: rank's threads and are settled in order, so the tree is the same for any count.
PIECES = 16
MIN_PIECE_EDGES = 1 << 15


def piece_budget(indptr: np.ndarray, rows: np.ndarray) -> int:
    """Entries per piece of a level that expands ``rows`` (see :data:`PIECES`)."""
    total = int((indptr[rows + 1] - indptr[rows]).sum()) if rows.size else 0
    return int(min(CHUNK_EDGES, max(MIN_PIECE_EDGES, -(-total // PIECES))))


def row_chunks(indptr: np.ndarray, rows: np.ndarray, budget: int = CHUNK_EDGES):
    """Split ``rows`` into consecutive pieces of at most ``budget`` adjacency entries.

    A single row longer than the budget forms its own piece.
    """
    if rows.size == 0:
        return
    lengths = indptr[rows + 1] - indptr[rows]
    total = int(lengths.sum())
    if total <= budget:
        yield rows
        return
    ends = np.cumsum(lengths)
    cuts = np.searchsorted(ends, np.arange(budget, total, budget), side="right")
    for piece in np.split(rows, np.unique(cuts)):
        if piece.size:
            yield piece


def gather_rows(indptr, indices, rows, skip: int = 0, labels=None):
    """Neighbours of ``rows`` (from the ``skip``-th on) and each one's row position.

    Parameters
    ----------
    indptr, indices : numpy.ndarray
        A CSR adjacency.
    rows : numpy.ndarray of int
        The rows to expand.
    skip : int, default=0
        Entries to skip at the start of every row.
    labels : numpy.ndarray, optional
        One value per row to repeat instead of the row's position (for example the
        rows themselves, as parents).

    Returns
    -------
    neighbours : numpy.ndarray
        The concatenated adjacency entries.
    position : numpy.ndarray of int
        For each entry, the index in ``rows`` of the row it came from (or its label).

    Examples
    --------
    >>> indptr = np.array([0, 2, 3, 6]); indices = np.array([5, 6, 7, 8, 9, 4])
    >>> neighbours, position = gather_rows(indptr, indices, np.array([2, 0]))
    >>> neighbours.tolist(), position.tolist()
    ([8, 9, 4, 5, 6], [0, 0, 0, 1, 1])
    """
    starts = indptr[rows] + skip
    lengths = np.maximum(indptr[rows + 1] - starts, 0)
    total = int(lengths.sum())
    # 32-bit positions halve the memory traffic of the passes below when they fit
    small = int(indptr[-1]) < 2**31 - 1 and rows.size < 2**31 - 1
    index_type = np.int32 if small else np.int64
    if labels is None:
        labels = np.arange(rows.size, dtype=index_type)
    position = np.repeat(labels, lengths)
    if total == 0:
        return indices[:0], position
    # entry k of row r sits at starts[r] + (k - entries emitted before row r)
    emitted = np.cumsum(lengths) - lengths
    entry = np.repeat((starts - emitted).astype(index_type), lengths)
    entry += np.arange(total, dtype=index_type)
    return indices[entry], position


def csr_view(indptr, indices, ncols: int):
    """A scipy CSR matrix sharing ``indices`` (bool data), for fast row gathers.

    ``indptr`` is narrowed to the index type of ``indices`` so that scipy keeps both
    arrays as they are instead of widening ``indices`` to 64 bits.
    """
    import scipy.sparse

    index_type = indices.dtype
    nrows = indptr.size - 1
    matrix = scipy.sparse.csr_matrix((nrows, max(int(ncols), 1)), dtype=bool)
    matrix.indptr = indptr.astype(index_type)
    matrix.indices = indices
    matrix.data = np.ones(indices.size, dtype=bool)
    return matrix


def expand_rows(view, rows, labels):
    """Neighbours of ``rows`` and, for each, the label of its row.

    Same result as ``gather_rows(..., labels=labels)`` with ``skip=0``, but the row
    gather runs in scipy's compiled row indexing (one pass instead of four).
    """
    sub = view[rows]
    return sub.indices, np.repeat(labels, np.diff(sub.indptr))


def first_in_segment(position: np.ndarray) -> np.ndarray:
    """Mask of the first item of each run of equal, sorted ``position`` values."""
    first = np.empty(position.size, dtype=bool)
    first[:1] = True
    np.not_equal(position[1:], position[:-1], out=first[1:])
    return first


class LevelProfile:
    """Per-level counters of one BFS, aggregated over ranks after the search.

    Call :meth:`begin` before the first level and :meth:`end_level` right after each
    level's last collective, so that every level's counter delta holds its own
    computation and communication.
    """

    FIELDS = ("comp_time", "comm_time", "bytes_sent", "messages")

    def __init__(self, comm):
        self.comm = comm
        self.frontier: list[int] = []
        self.bottom_up: list[int] = []
        self._rows: list[list[float]] = []
        self._snapshot = None

    def begin(self) -> None:
        """Take the starting snapshot."""
        self._snapshot = self.comm.counters()

    def end_level(self, frontier: int, bottom_up: bool = False) -> None:
        """Close one level that expanded ``frontier`` vertices."""
        now = self.comm.counters()
        self._rows.append(
            [float(now[k]) - float(self._snapshot[k]) for k in self.FIELDS]
        )
        self._snapshot = now
        self.frontier.append(int(frontier))
        self.bottom_up.append(int(bottom_up))

    def result(self) -> dict:
        """Collective: per-level arrays; times are means over ranks, volumes sums."""
        local = np.asarray(self._rows, dtype=np.float64).reshape(-1, len(self.FIELDS))
        total = np.empty_like(local)
        if self.comm.size > 1:
            self.comm.Allreduce(local, total)
        else:
            total = local
        size = self.comm.size
        return {
            "frontier": list(self.frontier),
            "comp_time": (total[:, 0] / size).tolist(),
            "comm_time": (total[:, 1] / size).tolist(),
            "bytes_sent": total[:, 2].astype(np.int64).tolist(),
            "messages": total[:, 3].astype(np.int64).tolist(),
            "bottom_up": list(self.bottom_up),
        }
