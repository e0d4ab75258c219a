"""NPB's linear congruential generator, scalar and vectorised.

Every NAS Parallel Benchmark draws its data from ``x_{k+1} = a x_k mod 2**46`` with
``a = 5**13`` and returns ``r_k = x_k / 2**46`` (``randlc``). The ``k``-th number
after a seed ``s`` is ``a**k s mod 2**46``, so any slice of the stream can be made
directly; :func:`stream` does it with numpy in unsigned 64-bit integers, whose
products wrap modulo ``2**64`` and so keep the low 46 bits exact.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["MULTIPLIER", "randlc", "skip", "stream"]

#: ``a = 5**13`` of every NPB kernel.
MULTIPLIER = 1220703125
_BITS = 46
_MODULUS = 1 << _BITS
_MASK46 = np.uint64(_MODULUS - 1)
_SCALE = 2.0**-_BITS


def randlc(seed: int, multiplier: int = MULTIPLIER) -> tuple[int, float]:
    """One step of the generator.

    Parameters
    ----------
    seed : int
        Current state ``x`` (below ``2**46``).
    multiplier : int, default=MULTIPLIER

    Returns
    -------
    tuple of (int, float)
        The new state and the number ``x / 2**46`` in (0, 1).

    Examples
    --------
    >>> state, r = randlc(314159265)
    >>> state == 314159265 * 5**13 % 2**46, 0 < r < 1
    (True, True)
    """
    state = (multiplier * seed) % _MODULUS
    return state, state * _SCALE


def skip(seed: int, count: int, multiplier: int = MULTIPLIER) -> int:
    """State after ``count`` steps from ``seed``: ``a**count * seed mod 2**46``.

    Examples
    --------
    >>> skip(7, 3) == randlc(randlc(randlc(7)[0])[0])[0]
    True
    """
    return pow(multiplier, count, _MODULUS) * seed % _MODULUS


def _mulmod(u, v, out=None):
    """``u * v mod 2**46`` elementwise for uint64 arrays (into ``out`` if given).

    numpy's uint64 product wraps modulo ``2**64``, and ``2**46`` divides ``2**64``, so
    the low 46 bits of the wrapped product are exact.
    """
    product = np.multiply(u, v, out=out)
    return np.bitwise_and(product, _MASK46, out=product)


@functools.lru_cache(maxsize=8)
def _powers(count: int, multiplier: int) -> np.ndarray:
    """``a**1 .. a**count mod 2**46`` (read-only, cached)."""
    powers = np.array([multiplier % _MODULUS], dtype=np.uint64)
    while powers.size < count:
        step = np.uint64(pow(multiplier, powers.size, _MODULUS))
        powers = np.concatenate([powers, _mulmod(powers, step)])
    powers = powers[:count]
    powers.flags.writeable = False
    return powers


def _scratch(work, size):
    """``work`` checked to hold ``size`` uint64 integers, or a new array."""
    if work is None:
        return np.empty(size, dtype=np.uint64)
    if work.dtype != np.uint64 or work.ndim != 1 or work.size < size:
        raise ValueError(
            f"work must be a 1-d uint64 array of at least {size} integers, got "
            f"{work.dtype} of shape {work.shape}"
        )
    return work


def stream(
    seed: int,
    count: int,
    multiplier: int = MULTIPLIER,
    *,
    block: int = 1 << 20,
    out: np.ndarray | None = None,
    work: np.ndarray | None = None,
) -> np.ndarray:
    """The next ``count`` numbers of the generator after ``seed``.

    Parameters
    ----------
    seed : int
        State before the first number.
    count : int
        How many numbers.
    multiplier : int, default=MULTIPLIER
    block : int, default=2**20
        Numbers made per vectorised step (memory of the cached powers).
    out : numpy.ndarray of float64, optional
        Where to write the numbers (its first ``count`` entries; it must hold at
        least ``count``). A kernel that draws in a loop passes the same buffer every
        time, so that its timed region does not make the operating system map and
        zero fresh pages for every draw.
    work : numpy.ndarray of uint64, optional
        Scratch of at least ``min(count, block)`` integers, reused the same way
        (allocated per call when omitted).

    Returns
    -------
    numpy.ndarray of float64
        ``r_1 .. r_count``, each exactly ``x_k / 2**46`` (a view of ``out`` when
        given).

    Examples
    --------
    >>> r = stream(271828183, 3)
    >>> state = 271828183
    >>> expected = []
    >>> for _ in range(3):
    ...     state, value = randlc(state)
    ...     expected.append(value)
    >>> r.tolist() == expected
    True
    """
    if out is None:
        out = np.empty(count, dtype=np.float64)
    elif out.dtype != np.float64 or out.ndim != 1 or out.size < count:
        raise ValueError(
            f"out must be a 1-d float64 array of at least {count} numbers, got "
            f"{out.dtype} of shape {out.shape}"
        )
    out = out[:count]
    powers = _powers(min(count, block) if count else 1, multiplier)
    values = _scratch(work, powers.size)
    state = seed % _MODULUS
    for start in range(0, count, powers.size):
        size = min(powers.size, count - start)
        _mulmod(powers[:size], np.uint64(state), out=values[:size])
        np.multiply(values[:size], _SCALE, out=out[start : start + size])
        state = int(values[size - 1])
    return out
