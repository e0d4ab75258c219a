"""The Graph500 Kronecker edge generator, counter-based and rank-count independent.

Edge ``i`` of a graph is drawn from random numbers that depend only on ``(seed, i)``:
for each of the ``scale`` recursion levels, 16 bits of ``mix64`` pick one quadrant of
the initiator matrix ``[[A, B], [C, D]]`` (A=0.57, B=0.19, C=0.19, D=0.05 by default;
quantized to 1/65536), which fixes one bit of the source and one bit of the
destination. The vertex ids are then relabelled by a seeded bijection of
``[0, 2**scale)`` (three rounds of odd multiply + add + xor-shift modulo ``2**scale``)
so that ids carry no locality, as the reference's vertex permutation does.

Because nothing depends on what came before, any rank produces any slice
``[start, stop)`` of the ``edgefactor * 2**scale`` edges, and the union over ranks is
the same graph for every rank count. Self-loops and duplicate edges stay in the list,
as in the reference; kernel 1 drops self-loops.

Every random number is ``mix64(key, i)`` for a counter ``i`` (the root selection
draws its own the same way), so that any rank can produce any slice of the stream
without generating what comes before it. The mixer is the SplitMix64 finalizer, which
passes the usual statistical test batteries for consecutive counters.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "INITIATOR",
    "derive_key",
    "edge_range",
    "kronecker_edges",
    "mix64",
    "relabel",
    "vertex_dtype",
]


_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_MASK64 = (1 << 64) - 1


def mix64_int(value: int) -> int:
    """Mix one Python integer to a 64-bit integer (scalar twin of :func:`mix64`)."""
    z = (value * _GOLDEN + _GOLDEN) & _MASK64
    z = ((z ^ (z >> 30)) * _M1) & _MASK64
    z = ((z ^ (z >> 27)) * _M2) & _MASK64
    return z ^ (z >> 31)


def derive_key(seed: int, stream: int) -> int:
    """A 64-bit key for one named random stream of a seed."""
    return mix64_int(mix64_int(int(seed) & _MASK64) ^ (int(stream) & _MASK64))


def mix64(key: int, counters: np.ndarray) -> np.ndarray:
    """Hash ``counters`` (uint64 array) under ``key`` to uniform uint64 values.

    Parameters
    ----------
    key : int
        A 64-bit stream key, see :func:`derive_key`.
    counters : numpy.ndarray of uint64
        The counters; consumed (overwritten) to save memory.

    Returns
    -------
    numpy.ndarray of uint64
        One uniformly distributed 64-bit value per counter.
    """
    z = counters
    # Array arithmetic on uint64 wraps modulo 2**64 silently, which is what we want.
    z *= np.uint64(_GOLDEN)
    z += np.uint64(key)
    z ^= z >> np.uint64(30)
    z *= np.uint64(_M1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_M2)
    z ^= z >> np.uint64(31)
    return z


INITIATOR = (0.57, 0.19, 0.19, 0.05)
_STREAM_EDGES = 1
_STREAM_RELABEL = 2
_BITS_PER_LEVEL = 16


def vertex_dtype(scale: int) -> np.dtype:
    """The narrowest signed integer type that holds every vertex id of ``scale``."""
    return np.dtype(np.int32) if scale <= 30 else np.dtype(np.int64)


def edge_range(rank: int, size: int, nedges: int) -> tuple[int, int]:
    """The slice ``[start, stop)`` of the edge list that ``rank`` of ``size`` generates.

    Examples
    --------
    >>> edge_range(1, 4, 10)
    (2, 5)
    """
    return rank * nedges // size, (rank + 1) * nedges // size


def _check_scale(scale: int, edgefactor: int) -> None:
    if not 1 <= int(scale) <= 40:
        raise ValueError(f"scale must be an integer in [1, 40], got {scale!r}")
    if int(edgefactor) < 1:
        raise ValueError(f"edgefactor must be a positive integer, got {edgefactor!r}")


def relabel(vertices: np.ndarray, scale: int, seed: int) -> np.ndarray:
    """Apply the seeded vertex bijection of ``[0, 2**scale)``.

    Parameters
    ----------
    vertices : numpy.ndarray of uint64
        Vertex ids below ``2**scale``; overwritten.
    scale : int
        log2 of the number of vertices.
    seed : int
        The graph seed.

    Returns
    -------
    numpy.ndarray of uint64
        The relabelled ids (a permutation of the input range).

    Examples
    --------
    >>> v = np.arange(16, dtype=np.uint64)
    >>> sorted(relabel(v.copy(), 4, seed=1).tolist()) == list(range(16))
    True
    """
    mask = np.uint64((1 << scale) - 1)
    shift = np.uint64(scale // 2 + 1)
    v = vertices
    for round_index in range(3):
        multiplier = derive_key(seed, _STREAM_RELABEL + 16 * round_index) | 1
        offset = derive_key(seed, _STREAM_RELABEL + 16 * round_index + 1)
        v *= np.uint64(multiplier)
        v += np.uint64(offset)
        v &= mask
        v ^= v >> shift
    return v


def _bits_to_ids(bits: np.ndarray) -> np.ndarray:
    """Rows of little-endian bits (n, k<=64) to uint64 ids."""
    packed = np.packbits(bits, axis=1, bitorder="little")
    wide = np.zeros((bits.shape[0], 8), dtype=np.uint8)
    wide[:, : packed.shape[1]] = packed
    return wide.view("<u8").ravel()


def kronecker_edges(
    scale: int,
    edgefactor: int = 16,
    seed: int = 1,
    start: int = 0,
    stop: int | None = None,
    *,
    initiator: tuple[float, float, float, float] = INITIATOR,
    chunk: int = 1 << 16,
) -> tuple[np.ndarray, np.ndarray]:
    """Generate edges ``[start, stop)`` of a Kronecker graph.

    Parameters
    ----------
    scale : int
        log2 of the number of vertices.
    edgefactor : int, default=16
        Edges per vertex; the graph has ``edgefactor * 2**scale`` edges.
    seed : int, default=1
        The graph seed; the same seed gives the same graph for any slicing.
    start, stop : int, optional
        The slice of the edge list to generate; all edges by default.
    initiator : tuple of 4 float, default=(0.57, 0.19, 0.19, 0.05)
        The Kronecker initiator A, B, C, D (must sum to 1).
    chunk : int, default=65536
        Edges generated per vectorized step (bounds temporary memory).

    Returns
    -------
    source, target : numpy.ndarray
        Vertex ids, of :func:`vertex_dtype` type.

    Examples
    --------
    >>> s, t = kronecker_edges(4, 16, seed=7)
    >>> s.shape, int(max(s.max(), t.max())) < 16
    ((256,), True)
    >>> s2, t2 = kronecker_edges(4, 16, seed=7, start=100, stop=120)
    >>> bool((s2 == s[100:120]).all() and (t2 == t[100:120]).all())
    True
    """
    _check_scale(scale, edgefactor)
    nedges = int(edgefactor) << int(scale)
    stop = nedges if stop is None else int(stop)
    if not 0 <= start <= stop <= nedges:
        raise ValueError(
            f"edge slice [{start}, {stop}) is outside the graph's [0, {nedges})"
        )
    a, b, c, d = (float(x) for x in initiator)
    if min(a, b, c, d) < 0 or abs(a + b + c + d - 1.0) > 1e-9:
        raise ValueError(
            f"initiator must be 4 non-negative numbers summing to 1, got {initiator!r}"
        )
    full = 1 << _BITS_PER_LEVEL
    # u < t_a: quadrant A (0,0); < t_ab: B (0,1); < t_abc: C (1,0); else D (1,1).
    t_a, t_ab, t_abc = (min(round(x * full), full) for x in (a, a + b, a + b + c))
    words_per_hash = 64 // _BITS_PER_LEVEL
    hashes = -(-scale // words_per_hash)
    key = derive_key(seed, _STREAM_EDGES)
    dtype = vertex_dtype(scale)
    source = np.empty(stop - start, dtype=dtype)
    target = np.empty(stop - start, dtype=dtype)
    level_offsets = np.arange(hashes, dtype=np.uint64)
    for lo in range(start, stop, chunk):
        hi = min(lo + chunk, stop)
        n = hi - lo
        counters = np.arange(lo, hi, dtype=np.uint64)[:, None] * np.uint64(hashes)
        counters = (counters + level_offsets).ravel()
        words = mix64(key, counters).view(np.uint16).reshape(n, hashes * words_per_hash)
        words = words[:, :scale]
        row_bit = words >= t_ab
        col_bit = (words >= t_a) ^ row_bit ^ (words >= t_abc)
        src = relabel(_bits_to_ids(row_bit), scale, seed)
        dst = relabel(_bits_to_ids(col_bit), scale, seed)
        source[lo - start : hi - start] = src
        target[lo - start : hi - start] = dst
    return source, target
