"""Read sizes out of mpi4py-style buffer arguments (no MPI import needed)."""

from __future__ import annotations

import numpy as np

__all__ = ["byte_view", "message_bytes", "vector_bytes"]


def _is_datatype(value) -> bool:
    return hasattr(value, "Get_size") and hasattr(value, "Get_extent")


def _array(buf):
    array = buf[0] if isinstance(buf, (list, tuple)) else buf
    if isinstance(array, (bytes, bytearray, memoryview)):
        return np.frombuffer(array, dtype=np.uint8)
    if not isinstance(array, np.ndarray):
        raise TypeError(
            f"buffers must be numpy arrays or [array, ...] lists, got "
            f"{type(array).__name__}"
        )
    return array


def message_bytes(buf) -> int:
    """Bytes held by a buffer: ``array``, ``[array, type]`` or ``[array, n, type]``.

    Parameters
    ----------
    buf : numpy.ndarray or list
        An mpi4py buffer specification.

    Returns
    -------
    int
    """
    array = _array(buf)
    if isinstance(buf, (list, tuple)) and len(buf) >= 2:
        count = buf[1]
        if isinstance(count, (int, np.integer)) and not isinstance(count, bool):
            itemsize = (
                buf[2].Get_size()
                if len(buf) > 2 and _is_datatype(buf[2])
                else (array.itemsize)
            )
            return int(count) * int(itemsize)
    return int(array.nbytes)


def byte_view(buf) -> np.ndarray:
    """The bytes of a contiguous buffer argument as a writable uint8 view.

    Parameters
    ----------
    buf : numpy.ndarray or list
        An mpi4py buffer specification over a C-contiguous array.

    Returns
    -------
    numpy.ndarray
        uint8 view of the first :func:`message_bytes` bytes.
    """
    array = _array(buf)
    if not array.flags.c_contiguous:
        raise ValueError("point-to-point buffers must be C-contiguous numpy arrays")
    return array.reshape(-1).view(np.uint8)[: message_bytes(buf)]


def vector_bytes(buf, size: int) -> np.ndarray:
    """Per-rank byte counts of a v-variant buffer argument.

    Parameters
    ----------
    buf : list
        ``[array, counts]``, ``[array, counts, displs]``, ``[array, (counts, displs)]``,
        optionally followed by an MPI datatype. ``counts`` may be None (equal split).
    size : int
        Ranks in the communicator.

    Returns
    -------
    numpy.ndarray of float, shape (size,)
    """
    array = _array(buf)
    if not isinstance(buf, (list, tuple)) or len(buf) < 2:
        return np.full(size, array.nbytes / size)
    rest = list(buf[1:])
    itemsize = array.itemsize
    if rest and _is_datatype(rest[-1]):
        itemsize = rest.pop().Get_size()
    counts = rest[0] if rest else None
    if isinstance(counts, tuple) and len(counts) == 2 and not np.isscalar(counts[0]):
        counts = counts[0]
    if counts is None:
        return np.full(size, (array.size // size) * itemsize, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.shape != (size,):
        raise ValueError(
            f"expected {size} counts in a v-buffer, got shape {counts.shape}"
        )
    return counts * itemsize
