"""Shared helpers of the Graph500 tests: a one-rank communicator and small graphs."""

from __future__ import annotations

import numpy as np


def self_comm():
    """A real InstrumentedComm over MPI.COMM_SELF (one rank, mode none)."""
    from mpi4py import MPI
    from scaleprobe.kernels.comm import InstrumentedComm

    return InstrumentedComm(MPI.COMM_SELF)


def bfs_distances(source, target, nvertices, root):
    """Hop distances from ``root`` (-1 if unreachable) by scipy, as a known answer."""
    import scipy.sparse
    import scipy.sparse.csgraph

    keep = source != target
    matrix = scipy.sparse.coo_matrix(
        (np.ones(int(keep.sum())), (source[keep], target[keep])),
        shape=(nvertices, nvertices),
    ).tocsr()
    dist = scipy.sparse.csgraph.shortest_path(
        matrix, directed=False, unweighted=True, indices=root
    )
    return np.where(np.isinf(dist), -1, dist).astype(np.int64)
