"""Deterministic BFS roots among the non-isolated vertices."""

from __future__ import annotations

import numpy as np

from ._exchange import allgatherv_array
from .generator import derive_key, mix64

__all__ = ["connected_mask", "select_roots"]

_STREAM_ROOTS = 3


def connected_mask(comm, degree: np.ndarray, nvertices: int) -> np.ndarray:
    """Collective: bool array over all vertices, True where the degree is non-zero.

    Every rank passes the degrees of the vertices it owns, in rank order of the
    vertex blocks (blocks are multiples of 64 vertices, so packed bits concatenate).
    """
    packed = np.packbits(degree > 0)
    full = allgatherv_array(comm, packed)
    return np.unpackbits(full, count=nvertices).astype(bool)


def select_roots(non_isolated: np.ndarray, nbfs: int, seed: int) -> np.ndarray:
    """Draw ``nbfs`` distinct roots among the True entries of ``non_isolated``.

    Candidates are ``mix64(key, k) mod nvertices`` for k = 0, 1, ...; isolated and
    repeated candidates are skipped, as in the reference. After ``2 * nvertices``
    candidates the search stops, so a tiny graph may yield fewer roots.

    Parameters
    ----------
    non_isolated : numpy.ndarray of bool
        Which vertices have at least one edge (the same on every rank).
    nbfs : int
        Number of roots wanted.
    seed : int
        The run's seed.

    Returns
    -------
    numpy.ndarray of int64
        The roots, in drawing order.

    Examples
    --------
    >>> mask = np.zeros(100, dtype=bool); mask[[3, 50, 70]] = True
    >>> sorted(select_roots(mask, 5, seed=1).tolist())
    [3, 50, 70]
    """
    nvertices = non_isolated.size
    key = derive_key(seed, _STREAM_ROOTS)
    roots: list[int] = []
    seen: set[int] = set()
    drawn = 0
    batch = max(64, 4 * nbfs)
    while len(roots) < nbfs and drawn < 2 * nvertices:
        counters = np.arange(drawn, drawn + batch, dtype=np.uint64)
        candidates = (mix64(key, counters) % np.uint64(nvertices)).astype(np.int64)
        drawn += batch
        for vertex in candidates[non_isolated[candidates]].tolist():
            if vertex not in seen:
                seen.add(vertex)
                roots.append(vertex)
                if len(roots) == nbfs:
                    break
    return np.array(roots, dtype=np.int64)
