"""The color-coding dynamic programme over sub-templates and colour sets, vectorized.

A count table of a sub-template of ``s`` vertices has shape ``(C(k, s), n)``: one row
per colour set (in colex rank order), one column per vertex; entry ``[S, v]`` is the
number of colourful maps of the rooted sub-template into the graph with the root on
``v`` using exactly the colours ``S``. Rows are contiguous so that picking the rows of
the colour sets of one split is a block copy.

Colour sets are indexed in the combinatorial number system: a set ``S`` of size ``s``
drawn from ``k`` colours, written with sorted elements ``c_0 < c_1 < ... < c_{s-1}``,
has rank ``sum_i C(c_i, i + 1)`` (colex order); ranks of size-``s`` sets run over
``0 .. C(k, s) - 1``. The index tables are computed once per ``(k, s, a)`` and cached.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
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


# Size of one working buffer of the combination step; small enough that the handful
# of buffers of one vertex block stay in a core's L2 cache.
_BLOCK_BYTES = 256 * 1024


def leaf_table(colors: np.ndarray, k: int, dtype) -> np.ndarray:
    """The single-vertex table: ``[c, v] = 1`` if vertex ``v`` has colour ``c``."""
    table = np.zeros((k, len(colors)), dtype=dtype)
    table[colors, np.arange(len(colors))] = 1
    return table


def vertex_ranges(n: int, team) -> list[tuple[int, int]]:
    """``team.threads`` consecutive ranges of about ``n / threads`` vertices."""
    threads = 1 if team is None else team.threads
    cuts = np.linspace(0, n, threads + 1).astype(np.int64)
    return [(int(a), int(b)) for a, b in itertools.pairwise(cuts) if b > a]


def over_vertices(function, n: int, team) -> np.ndarray:
    """``function(lo, hi)`` (a table over vertices ``lo:hi``) over the team's
    threads, one range each, joined along the vertex axis."""
    ranges = vertex_ranges(n, team)
    if team is None or len(ranges) < 2:
        return function(0, n)
    return np.concatenate(team.map(lambda r: function(*r), ranges), axis=1)


def combine(
    active: np.ndarray,
    neighbours: np.ndarray,
    k: int,
    size: int,
    active_size: int,
    team=None,
) -> np.ndarray:
    """Counts of a split sub-template from its active table and the neighbour sums of
    its passive table: ``out[S] = sum over S = S_a + S_p of active[S_a] * nb[S_p]``.

    The vertices are processed in blocks so that the gathered rows stay in cache;
    with a ``team`` (:class:`~scaleprobe.kernels.comm.threads.ThreadTeam`) each of
    its threads takes one range of vertices (every vertex's sum is its own, so the
    counts do not depend on the threads).
    """
    if team is not None and team.threads > 1:
        return over_vertices(
            lambda lo, hi: combine(
                active[:, lo:hi], neighbours[:, lo:hi], k, size, active_size
            ),
            active.shape[1],
            team,
        )
    active_ranks, passive_ranks = split_tables(k, size, active_size)
    n_sets, n_splits = active_ranks.shape
    n = active.shape[1]
    dtype = active.dtype
    out = np.empty((n_sets, n), dtype=dtype)
    block = max(32, _BLOCK_BYTES // (n_sets * dtype.itemsize) // 16 * 16)
    block = min(block, max(n, 1))
    acc_buf = np.empty((n_sets, block), dtype=dtype)
    tmp_buf = np.empty_like(acc_buf)
    tmp2_buf = np.empty_like(acc_buf)
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        width = hi - lo
        act = np.ascontiguousarray(active[:, lo:hi])
        nbr = np.ascontiguousarray(neighbours[:, lo:hi])
        if width == block:
            acc, tmp, tmp2 = acc_buf, tmp_buf, tmp2_buf
        else:
            acc, tmp, tmp2 = (np.empty((n_sets, width), dtype=dtype) for _ in range(3))
        np.take(act, active_ranks[:, 0], axis=0, out=acc)
        np.take(nbr, passive_ranks[:, 0], axis=0, out=tmp2)
        acc *= tmp2
        for split in range(1, n_splits):
            np.take(act, active_ranks[:, split], axis=0, out=tmp)
            np.take(nbr, passive_ranks[:, split], axis=0, out=tmp2)
            np.multiply(tmp, tmp2, out=tmp)
            acc += tmp
        out[:, lo:hi] = acc
    return out


@cache
def _drop_color_ranks(k: int, size: int) -> np.ndarray:
    """``[S, c]``: rank of ``S - {c}`` among sets of ``size - 1`` colours if ``c`` is
    in ``S``, else ``C(k, size - 1)`` (a row of zeros appended to the table)."""
    sets = colorsets(k, size)
    lookup = np.full((len(sets), k), math.comb(k, size - 1), dtype=np.intp)
    for color in range(k):
        rows = np.flatnonzero((sets == color).any(axis=1))
        rest = sets[rows][sets[rows] != color].reshape(len(rows), size - 1)
        lookup[rows, color] = colorset_ranks(rest, k)
    lookup.setflags(write=False)
    return lookup


def combine_root(
    colors: np.ndarray, neighbours: np.ndarray, k: int, size: int, team=None
) -> np.ndarray:
    """:func:`combine` when the active part is the root alone: ``out[S, v]`` is
    ``nb[S - {colour(v)}, v]`` if ``colour(v)`` is in ``S``, else 0 — one gather per
    entry instead of ``size`` multiply-adds (over the ``team``'s threads, one range
    of vertices each).
    """
    if team is not None and team.threads > 1:
        return over_vertices(
            lambda lo, hi: combine_root(colors[lo:hi], neighbours[:, lo:hi], k, size),
            len(colors),
            team,
        )
    lookup = _drop_color_ranks(k, size)
    n = len(colors)
    out = np.empty((lookup.shape[0], n), dtype=neighbours.dtype)
    block = max(256, _BLOCK_BYTES // (lookup.shape[0] * 8) // 16 * 16)
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        extended = np.empty((neighbours.shape[0] + 1, hi - lo), dtype=neighbours.dtype)
        extended[:-1] = neighbours[:, lo:hi]
        extended[-1] = 0
        out[:, lo:hi] = np.take_along_axis(extended, lookup[:, colors[lo:hi]], axis=0)
    return out


def final_total(
    active: np.ndarray, passive: np.ndarray, k: int, active_size: int, segments: int = 1
) -> np.ndarray:
    """``sum_v sum_{S_a + S_p = all colours} active[S_a, v] * passive[S_p, v]`` in
    float64 (one of the two tables already summed over neighbours), per segment of
    ``n / segments`` consecutive vertices."""
    active_ranks, passive_ranks = split_tables(k, k, active_size)
    totals = np.zeros(segments)
    for a_rank, p_rank in zip(active_ranks[0], passive_ranks[0], strict=True):
        product = active[a_rank].astype(np.float64) * passive[p_rank]
        totals += product.reshape(segments, -1).sum(axis=1)
    return totals


def computed_subtemplates(template) -> list[int]:
    """Indices of the sub-templates whose tables are computed: the first of every
    rooted shape (equal shapes share one table), the whole template last."""
    subs = template.subtemplates
    first: dict[tuple, int] = {}
    for index, sub in enumerate(subs[:-1]):
        first.setdefault(sub.shape, index)
    return sorted(set(first.values()) | {len(subs) - 1})


NeighbourSum = Callable[[int, np.ndarray], np.ndarray]


def _lifetimes(template):
    """When each table and each neighbour sum is used last, and which part of the
    whole template is summed over neighbours.

    The table of a sub-template depends only on its rooted shape: each shape is
    computed once and dropped after its last use. Neighbour sums of a shape are
    reused by every sub-template with that passive part (and they cost the
    communication in the distributed kernel).
    """
    k, subs = template.k, template.subtemplates
    whole = len(subs) - 1
    computed = set(computed_subtemplates(template)) | {whole}
    last_use: dict[tuple, int] = {}
    for index in sorted(computed):
        sub = subs[index]
        if sub.active is not None:
            last_use[subs[sub.active].shape] = index
            last_use[subs[sub.passive].shape] = index
    root = subs[whole]
    root_active, root_passive = subs[root.active], subs[root.passive]
    # sum_v a(v) (A p)(v) == sum_u (A a)(u) p(u): the whole template sums the
    # neighbours of its smaller part.
    final_summed = (
        root_active
        if math.comb(k, root_active.size) < math.comb(k, root_passive.size)
        else root_passive
    )
    last_sum: dict[tuple, int] = {}
    for index in sorted(computed):
        sub = subs[index]
        if sub.active is not None and index != whole:
            last_sum[subs[sub.passive].shape] = index
    if final_summed.shape in last_sum:
        last_sum[final_summed.shape] = whole
    return computed, last_use, last_sum, final_summed


def _subtemplate_tables(
    template, colors, neighbour_sum, dtype, observer, lifetimes, team=None
):
    """The tables of the whole template's two parts, and the neighbour sums kept
    for it, computing every sub-template's table in order."""
    k, subs = template.k, template.subtemplates
    computed, last_use, last_sum, _ = lifetimes
    tables: dict[tuple, np.ndarray] = {}
    sums: dict[tuple, np.ndarray] = {}
    for index, sub in enumerate(subs[:-1]):
        if index not in computed:
            continue
        if sub.size == 1:
            tables[sub.shape] = leaf_table(colors, k, dtype)
            continue
        active, passive = subs[sub.active], subs[sub.passive]
        if observer is not None:
            observer.start(index)
        neighbours = sums.get(passive.shape)
        if neighbours is None:
            neighbours = neighbour_sum(index, tables[passive.shape])
            if last_sum[passive.shape] > index:
                sums[passive.shape] = neighbours
        elif last_sum[passive.shape] == index:
            del sums[passive.shape]
        if active.size == 1:
            tables[sub.shape] = combine_root(colors, neighbours, k, sub.size, team)
        else:
            tables[sub.shape] = combine(
                tables[active.shape], neighbours, k, sub.size, active.size, team
            )
        del neighbours
        if observer is not None:
            observer.stop(index)
        for part in (active.shape, passive.shape):
            if last_use[part] == index and part in tables:
                del tables[part]
    return tables, sums


def colorful_total(
    template,
    colors: np.ndarray,
    neighbour_sum: NeighbourSum,
    dtype=np.float64,
    segments: int = 1,
    observer=None,
    team=None,
):
    """Colourful maps of ``template`` rooted on the given vertices, summed.

    Parameters
    ----------
    template : Template
    colors : numpy.ndarray of int, shape (n,)
        Colours ``0 .. k - 1`` of the vertices this process owns.
    neighbour_sum : callable
        ``neighbour_sum(index, table)`` returns, for a table over the owned vertices,
        the table of sums over each owned vertex's neighbours (communicating if the
        neighbours live elsewhere). ``index`` names the sub-template being computed.
    dtype : numpy dtype, default=numpy.float64
    segments : int, default=1
        Return one total per segment of ``n / segments`` consecutive vertices (for
        several colourings counted on copies of a graph).
    observer : object, optional
        Its ``start(index)`` and ``stop(index)`` are called around the work of every
        computed sub-template (for per-sub-template timing).
    team : ThreadTeam, optional
        The rank's threads, over which every combination runs (one range of
        vertices each); the counts are the same for any number of threads.

    Returns
    -------
    float or numpy.ndarray
        This process's part of ``sum_v C(v, T, all colours)`` (per segment if
        ``segments > 1``).
    """
    k = template.k
    subs = template.subtemplates
    if k == 1:
        totals = np.full(segments, len(colors) / segments)
        return float(totals[0]) if segments == 1 else totals
    lifetimes = _lifetimes(template)
    tables, sums = _subtemplate_tables(
        template, colors, neighbour_sum, np.dtype(dtype), observer, lifetimes, team
    )
    whole, final_summed = len(subs) - 1, lifetimes[3]
    root_active, root_passive = subs[subs[whole].active], subs[subs[whole].passive]
    if observer is not None:
        observer.start(whole)
    active_table, passive_table = tables[root_active.shape], tables[root_passive.shape]
    summed = sums.pop(final_summed.shape, None)
    if summed is None:
        summed = neighbour_sum(whole, tables[final_summed.shape])
    if final_summed is root_active:
        active_table = summed
    else:
        passive_table = summed
    totals = final_total(active_table, passive_table, k, root_active.size, segments)
    if observer is not None:
        observer.stop(whole)
    return float(totals[0]) if segments == 1 else totals
