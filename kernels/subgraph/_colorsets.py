"""Index tables over colour sets in the combinatorial number system.

A colour set ``S`` of size ``s`` drawn from ``k`` colours, written with sorted elements
``c_0 < c_1 < ... < c_{s-1}``, has rank ``sum_i C(c_i, i + 1)`` (colex order); ranks of
size-``s`` sets run over ``0 .. C(k, s) - 1``. The tables are computed once per
``(k, s, a)`` and cached.
"""

from __future__ import annotations

import itertools
import math
from functools import cache

import numpy as np


@cache
def _binomials(k: int) -> np.ndarray:
    table = np.zeros((k + 1, k + 2), dtype=np.int64)
    for n in range(k + 1):
        for r in range(k + 2):
            table[n, r] = math.comb(n, r)
    return table


def colorset_ranks(sets: np.ndarray, k: int) -> np.ndarray:
    """Colex ranks of sorted colour sets given along the last axis."""
    sets = np.asarray(sets, dtype=np.int64)
    if sets.shape[-1] == 0:
        return np.zeros(sets.shape[:-1], dtype=np.int64)
    positions = np.arange(1, sets.shape[-1] + 1)
    return _binomials(k)[sets, positions].sum(axis=-1)


@cache
def colorsets(k: int, size: int) -> np.ndarray:
    """All colour sets of ``size`` colours, one sorted row per set, in rank order.

    Returns
    -------
    numpy.ndarray of shape (C(k, size), size)
    """
    rows = np.array(list(itertools.combinations(range(k), size)), dtype=np.int64)
    rows = rows.reshape(-1, size)
    order = np.argsort(colorset_ranks(rows, k), kind="stable")
    rows = rows[order]
    rows.setflags(write=False)
    return rows


@cache
def split_tables(k: int, size: int, active: int) -> tuple[np.ndarray, np.ndarray]:
    """For every colour set ``S`` of ``size`` colours, its splits into ``S_a`` and
    ``S_p = S \\ S_a`` with ``|S_a| = active``.

    Returns
    -------
    active_ranks, passive_ranks : numpy.ndarray of shape (C(k, size), C(size, active))
        Rank of ``S_a`` among sets of ``active`` colours and of ``S_p`` among sets of
        ``size - active`` colours.
    """
    sets = colorsets(k, size)
    picks = np.array(list(itertools.combinations(range(size), active)), dtype=np.int64)
    picks = picks.reshape(-1, active)
    mask = np.ones((len(picks), size), dtype=bool)
    np.put_along_axis(mask, picks, False, axis=1)
    rest = np.nonzero(mask)[1].reshape(len(picks), size - active)
    active_ranks = colorset_ranks(sets[:, picks], k)
    passive_ranks = colorset_ranks(sets[:, rest], k)
    for table in (active_ranks, passive_ranks):
        table.setflags(write=False)
    return active_ranks, passive_ranks
