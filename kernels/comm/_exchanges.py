"""All-to-all style schedules: allgather(v), allreduce, alltoall(v)."""

from __future__ import annotations

import numpy as np

from ._schedule import Schedule, build, is_power_of_two

__all__ = [
    "ALLGATHER_LONG",
    "ALLREDUCE_SHORT",
    "allgather_schedule",
    "allreduce_schedule",
    "alltoall_schedule",
]

#: MPICH's ``MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE``: total bytes from which ring is used.
ALLGATHER_LONG = 524288
#: MPICH's ``MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE``: bytes below which recursive doubling.
ALLREDUCE_SHORT = 2048


def allgather_schedule(counts, algorithm: str = "auto") -> Schedule:
    """Allgather where rank ``r`` contributes ``counts[r]`` bytes.

    Parameters
    ----------
    counts : array-like of float
        Bytes contributed by each rank.
    algorithm : {"auto", "recursive_doubling", "bruck", "ring"}, default="auto"
        ``"auto"`` picks as described in the module docstring.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> allgather_schedule([8, 8, 8, 8]).nbytes.tolist()  # recursive doubling
    [8.0, 8.0, 8.0, 8.0, 16.0, 16.0, 16.0, 16.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = len(counts)
    if algorithm == "auto":
        if counts.sum() >= ALLGATHER_LONG:
            algorithm = "ring"
        elif is_power_of_two(size):
            algorithm = "recursive_doubling"
        else:
            algorithm = "bruck"
    rows = []
    if algorithm == "recursive_doubling":
        if not is_power_of_two(size):
            raise ValueError(
                f"recursive doubling needs a power of two, got {size} ranks"
            )
        k, mask = 0, 1
        while mask < size:
            for i in range(size):
                start = i & ~(mask - 1)
                rows.append((k, i, i ^ mask, counts[start : start + mask].sum()))
            k, mask = k + 1, mask * 2
    elif algorithm == "bruck":
        k, distance = 0, 1
        while distance < size:
            blocks = min(distance, size - distance)
            for i in range(size):
                held = counts[(i + np.arange(blocks)) % size].sum()
                rows.append((k, i, (i - distance) % size, held))
            k, distance = k + 1, distance * 2
    elif algorithm == "ring":
        for s in range(size - 1):
            rows += [
                (s, i, (i + 1) % size, counts[(i - s) % size]) for i in range(size)
            ]
    else:
        raise ValueError(
            f"allgather algorithm must be auto, recursive_doubling, bruck or ring, "
            f"got {algorithm!r}"
        )
    return build(rows)


def allreduce_schedule(size: int, nbytes: float, algorithm: str = "auto") -> Schedule:
    """Allreduce of ``nbytes`` per rank.

    Parameters
    ----------
    size : int
        Ranks in the communicator.
    nbytes : float
        Size of each rank's vector.
    algorithm : {"auto", "recursive_doubling", "ring"}, default="auto"
        ``"auto"``: recursive doubling below :data:`ALLREDUCE_SHORT` bytes, else ring.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> s = allreduce_schedule(3, 8)  # fold rank 0 into 1, exchange 1<->2, unfold
    >>> list(zip(s.step.tolist(), s.src.tolist(), s.dst.tolist()))
    [(0, 0, 1), (1, 1, 2), (1, 2, 1), (2, 1, 0)]
    """
    if algorithm == "auto":
        algorithm = "recursive_doubling" if nbytes < ALLREDUCE_SHORT else "ring"
    rows = []
    if size <= 1:
        return build(rows)
    if algorithm == "recursive_doubling":
        pof2 = 1 << (size.bit_length() - 1)
        rem = size - pof2
        k = 0
        if rem:
            rows += [(0, i, i + 1, nbytes) for i in range(0, 2 * rem, 2)]
            k = 1
        survivors = [i for i in range(size) if i >= 2 * rem or i % 2 == 1]
        mask = 1
        while mask < pof2:
            for j, rank in enumerate(survivors):
                rows.append((k, rank, survivors[j ^ mask], nbytes))
            k, mask = k + 1, mask * 2
        rows += [(k, i + 1, i, nbytes) for i in range(0, 2 * rem, 2)]
    elif algorithm == "ring":
        chunks = np.full(size, nbytes // size) + (np.arange(size) < nbytes % size)
        for s in range(2 * (size - 1)):
            offset = s if s < size - 1 else s - (size - 1) - 1
            rows += [
                (s, i, (i + 1) % size, chunks[(i - offset) % size]) for i in range(size)
            ]
    else:
        raise ValueError(
            f"allreduce algorithm must be auto, recursive_doubling or ring, "
            f"got {algorithm!r}"
        )
    return build(rows)


def alltoall_schedule(counts) -> Schedule:
    """Pairwise-exchange alltoall(v); ``counts[i, j]`` bytes go from ``i`` to ``j``.

    Parameters
    ----------
    counts : array-like of float, shape (p, p)
        The full send matrix (uniform for Alltoall). The diagonal is a local copy.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> alltoall_schedule([[0, 1], [2, 0]]).nbytes.tolist()
    [1.0, 2.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = counts.shape[0]
    if counts.shape != (size, size):
        raise ValueError(f"alltoall counts must be a square matrix, got {counts.shape}")
    src = np.tile(np.arange(size), size - 1)
    step = np.repeat(np.arange(size - 1), size)
    dst = (src + step + 1) % size
    nbytes = counts[src, dst]
    keep = nbytes > 0
    return Schedule(step[keep], src[keep], dst[keep], nbytes[keep])
