"""Make the resident size of a run follow its live data.

glibc raises its mmap threshold dynamically (up to 32 MiB) once large blocks are
freed, after which blocks of a few megabytes come from the heap and stay resident
after ``free`` when the heap is fragmented. The peak resident size then depends on the
allocation history rather than on how much data was alive at once, which is what the
kernel's ``peak_rss`` is meant to compare between exchange modes. Fixing the threshold
serves every large block with ``mmap`` and returns it on ``free``.
"""

from __future__ import annotations

import ctypes
import ctypes.util

_M_MMAP_THRESHOLD = -3


def map_large_blocks(threshold: int = 1 << 20) -> bool:
    """Serve blocks of at least ``threshold`` bytes by ``mmap`` (glibc only).

    Process-wide; the kernel calls it once at start.

    Parameters
    ----------
    threshold : int, default=2**20

    Returns
    -------
    bool
        Whether the allocator accepted the setting (False off glibc).
    """
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, int(threshold)) == 1
