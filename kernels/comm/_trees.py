"""Rooted and dissemination schedules: barrier, bcast, reduce, scatter(v), gather(v)."""

from __future__ import annotations

import numpy as np

from ._schedule import Schedule, build

__all__ = [
    "barrier_schedule",
    "bcast_schedule",
    "gather_schedule",
    "reduce_schedule",
    "scatter_schedule",
]


def barrier_schedule(size: int) -> Schedule:
    """Dissemination barrier: round ``k`` sends an empty message to ``rank + 2**k``.

    Parameters
    ----------
    size : int
        Ranks in the communicator.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> barrier_schedule(4).step.tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    rows, k, distance = [], 0, 1
    while distance < size:
        rows += [(k, i, (i + distance) % size, 0) for i in range(size)]
        k, distance = k + 1, distance * 2
    return build(rows)


def bcast_schedule(size: int, nbytes: float, root: int = 0) -> Schedule:
    """Binomial-tree broadcast of ``nbytes`` from ``root``.

    Parameters
    ----------
    size : int
        Ranks in the communicator.
    nbytes : float
        Message size.
    root : int, default=0
        Broadcasting rank.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> s = bcast_schedule(4, 10)
    >>> list(zip(s.step.tolist(), s.src.tolist(), s.dst.tolist()))
    [(0, 0, 1), (1, 0, 2), (1, 1, 3)]
    """
    rows, k, mask = [], 0, 1
    while mask < size:
        for rel in range(min(mask, size - mask)):
            rows.append((k, (rel + root) % size, (rel + mask + root) % size, nbytes))
        k, mask = k + 1, mask * 2
    return build(rows)


def reduce_schedule(size: int, nbytes: float, root: int = 0) -> Schedule:
    """Binomial-tree reduction of ``nbytes`` per rank to ``root``.

    Parameters
    ----------
    size : int
        Ranks in the communicator.
    nbytes : float
        Message size.
    root : int, default=0
        Receiving rank.

    Returns
    -------
    Schedule
    """
    rows, k, mask = [], 0, 1
    while mask < size:
        for rel in range(mask, size, 2 * mask):
            rows.append((k, (rel + root) % size, (rel - mask + root) % size, nbytes))
        k, mask = k + 1, mask * 2
    return build(rows)


def _block_bytes(counts: np.ndarray, first: int, stop: int, root: int) -> float:
    """Bytes of the blocks of relative ranks ``first .. stop-1``."""
    size = len(counts)
    return float(sum(counts[(rel + root) % size] for rel in range(first, stop)))


def scatter_schedule(counts, root: int = 0) -> Schedule:
    """Binomial-tree scatter; ``counts[r]`` bytes end up on rank ``r``.

    Parameters
    ----------
    counts : array-like of float
        Bytes each rank receives (uniform for Scatter).
    root : int, default=0
        Scattering rank.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> scatter_schedule([1, 1, 1, 1]).nbytes.tolist()
    [2.0, 1.0, 1.0]
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = len(counts)
    masks = []
    mask = 1
    while mask < size:
        masks.append(mask)
        mask *= 2
    rows = []
    for k, mask in enumerate(reversed(masks)):
        for rel in range(0, size, 2 * mask):
            if rel + mask < size:
                sent = _block_bytes(counts, rel + mask, min(rel + 2 * mask, size), root)
                rows.append((k, (rel + root) % size, (rel + mask + root) % size, sent))
    return build(rows)


def gather_schedule(counts, root: int = 0) -> Schedule:
    """Binomial-tree gather; rank ``r`` contributes ``counts[r]`` bytes.

    Parameters
    ----------
    counts : array-like of float
        Bytes each rank sends (uniform for Gather).
    root : int, default=0
        Gathering rank.

    Returns
    -------
    Schedule
    """
    counts = np.asarray(counts, dtype=np.float64)
    size = len(counts)
    rows, k, mask = [], 0, 1
    while mask < size:
        for rel in range(mask, size, 2 * mask):
            sent = _block_bytes(counts, rel, min(rel + mask, size), root)
            rows.append((k, (rel + root) % size, (rel - mask + root) % size, sent))
        k, mask = k + 1, mask * 2
    return build(rows)
