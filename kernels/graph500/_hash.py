"""Counter-based random numbers: a stateless 64-bit mixer over numpy arrays.

The generator and the root selection draw every random number as ``mix64(key, i)``
for a counter ``i``, so that any rank can produce any slice of the stream without
generating what comes before it. The mixer is the SplitMix64 finalizer, which passes
the usual statistical test batteries for consecutive counters.
"""

from __future__ import annotations

import numpy as np

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
