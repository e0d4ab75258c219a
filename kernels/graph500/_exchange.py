"""Personalized all-to-all exchange of parallel arrays keyed by destination rank."""

from __future__ import annotations

import numpy as np


def group_by_destination(
    destination: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """A stable order that groups items by destination, and the per-rank counts."""
    # Small integer keys sort by radix (linear time) with a stable sort.
    key = destination.astype(np.uint16 if size <= 1 << 16 else np.int64, copy=False)
    order = np.argsort(key, kind="stable")
    counts = np.bincount(destination, minlength=size)
    return order, counts


def alltoallv_arrays(
    comm, destination: np.ndarray, *arrays: np.ndarray
) -> list[np.ndarray]:
    """Send ``arrays[k][i]`` to rank ``destination[i]``; return what this rank received.

    One ``Alltoall`` of the counts, then one ``Alltoallv`` per array. With one rank the
    arrays come back unchanged and nothing is communicated.

    Parameters
    ----------
    comm : InstrumentedComm
        The communicator (or a row/column communicator from ``Split``).
    destination : numpy.ndarray of int
        The destination rank of each item.
    *arrays : numpy.ndarray
        Parallel arrays of the same length.

    Returns
    -------
    list of numpy.ndarray
        The received arrays, grouped by source rank in rank order.
    """
    size = comm.size
    if size == 1:
        return list(arrays)
    order, send_counts = group_by_destination(destination, size)
    send_counts = send_counts.astype(np.int64)
    recv_counts = np.empty(size, dtype=np.int64)
    comm.Alltoall(send_counts, recv_counts)
    send_displs = np.concatenate(([0], np.cumsum(send_counts)[:-1]))
    recv_displs = np.concatenate(([0], np.cumsum(recv_counts)[:-1]))
    total = int(recv_counts.sum())
    received = []
    for array in arrays:
        sendbuf = np.ascontiguousarray(array[order])
        recvbuf = np.empty(total, dtype=array.dtype)
        comm.Alltoallv(
            [sendbuf, (send_counts.tolist(), send_displs.tolist())],
            [recvbuf, (recv_counts.tolist(), recv_displs.tolist())],
        )
        received.append(recvbuf)
    return received


def allgatherv_array(comm, array: np.ndarray) -> np.ndarray:
    """Concatenate every rank's ``array`` in rank order on all ranks."""
    if comm.size == 1:
        return array
    counts = np.empty(comm.size, dtype=np.int64)
    comm.Allgather(np.array([array.size], dtype=np.int64), counts)
    displs = np.concatenate(([0], np.cumsum(counts)[:-1]))
    out = np.empty(int(counts.sum()), dtype=array.dtype)
    comm.Allgatherv(
        np.ascontiguousarray(array), [out, (counts.tolist(), displs.tolist())]
    )
    return out
