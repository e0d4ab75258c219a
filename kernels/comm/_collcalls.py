"""Collective calls of :class:`InstrumentedComm`.

Each call runs the real MPI collective for the data, then (in emulated mode) one
extra real Allgather exchanges the ranks' arrival times and whatever sizes the model
needs; that exchange costs no virtual time. The call completes on every rank at the
latest arrival plus :func:`schedule_cost` of the algorithm's schedule, and each rank
counts the bytes and messages it sends in that schedule.
"""

from __future__ import annotations

import pickle

import numpy as np

from . import _collectives as algo
from ._buffers import message_bytes, vector_bytes

__all__ = ["CollectiveMixin"]

_CACHE_LIMIT = 4096


def _mpi():
    from mpi4py import MPI

    return MPI


def _pickled_size(obj) -> int:
    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


class CollectiveMixin:
    """Barrier, Bcast, Scatter(v), Gather(v), Allgather(v), Alltoall(v), Allreduce,
    Reduce, the lowercase object helpers and Split."""

    def _exchange(self, arrival: float, sizes, need_sizes: bool):
        """Latest arrival and every rank's ``sizes`` (1-D), via one real Allgather."""
        sizes = np.atleast_1d(np.asarray(sizes, dtype=np.float64))
        if not self._clock.emulated and not need_sizes:
            return None, None
        mine = np.concatenate(([arrival], sizes))
        table = np.empty((self.size, len(mine)), dtype=np.float64)
        self.mpi.Allgather(mine, table)
        return float(table[:, 0].max()), table[:, 1:]

    def _charge(self, key, build, latest):
        """Count this rank's traffic in a schedule and return the completion time."""
        cached = self._cache.get(key) if key is not None else None
        if cached is None:
            schedule = build()
            cached = (
                algo.schedule_cost(schedule, self._nodes, self.link),
                algo.rank_traffic(schedule, self.rank, self._nodes),
            )
            if key is not None:
                if len(self._cache) > _CACHE_LIMIT:
                    self._cache.clear()
                self._cache[key] = cached
        cost, traffic = cached
        self._clock.add_traffic(traffic)
        return None if latest is None else latest + cost

    def _uniform(self, kind, nbytes, call, root=0):
        """Run ``call`` and charge a collective whose size is the same everywhere."""
        arrival = self._clock.enter()
        done = None
        try:
            result = call()
            latest, _ = self._exchange(arrival, [], need_sizes=False)
            builders = {
                "barrier": lambda: algo.barrier_schedule(self.size),
                "bcast": lambda: algo.bcast_schedule(self.size, nbytes, root),
                "reduce": lambda: algo.reduce_schedule(self.size, nbytes, root),
                "allreduce": lambda: algo.allreduce_schedule(self.size, nbytes),
                "scatter": lambda: algo.scatter_schedule([nbytes] * self.size, root),
                "gather": lambda: algo.gather_schedule([nbytes] * self.size, root),
                "allgather": lambda: algo.allgather_schedule([nbytes] * self.size),
                "alltoall": lambda: algo.alltoall_schedule(
                    np.full((self.size, self.size), float(nbytes))
                ),
            }
            done = self._charge((kind, nbytes, root), builders[kind], latest)
            return result
        finally:
            self._clock.leave(done)

    def _varying(self, build, sizes, call):
        """Run ``call`` and charge a collective built from every rank's ``sizes``."""
        arrival = self._clock.enter()
        done = None
        try:
            result = call()
            latest, table = self._exchange(arrival, sizes, need_sizes=True)
            done = self._charge(None, lambda: build(table), latest)
            return result
        finally:
            self._clock.leave(done)

    def _own_bytes(self, sendbuf, recvbuf):
        if sendbuf is None or sendbuf is _mpi().IN_PLACE:
            return message_bytes(recvbuf)
        return message_bytes(sendbuf)

    # -- buffer collectives -------------------------------------------------------

    def Barrier(self) -> None:  # noqa: N802 - mpi4py naming
        """Dissemination barrier."""
        self._uniform("barrier", 0, self.mpi.Barrier)

    def Bcast(self, buf, root=0) -> None:  # noqa: N802 - mpi4py naming
        """Binomial-tree broadcast of ``buf`` from ``root``.

        Parameters
        ----------
        buf : numpy.ndarray or list
            Buffer (sent at the root, received elsewhere).
        root : int, default=0
            Broadcasting rank.
        """
        nbytes = message_bytes(buf)
        self._uniform("bcast", nbytes, lambda: self.mpi.Bcast(buf, root), root)

    def Scatter(self, sendbuf, recvbuf, root=0) -> None:  # noqa: N802
        """Binomial-tree scatter of equal blocks.

        Parameters
        ----------
        sendbuf : numpy.ndarray or list or None
            Blocks for every rank (significant at the root only).
        recvbuf : numpy.ndarray or list
            This rank's block.
        root : int, default=0
            Scattering rank.
        """
        nbytes = message_bytes(recvbuf) if recvbuf is not _mpi().IN_PLACE else (
            message_bytes(sendbuf) // self.size
        )
        self._uniform(
            "scatter", nbytes, lambda: self.mpi.Scatter(sendbuf, recvbuf, root), root
        )

    def Scatterv(self, sendbuf, recvbuf, root=0) -> None:  # noqa: N802
        """Binomial-tree scatter of blocks of varying size.

        Parameters
        ----------
        sendbuf : list or None
            ``[array, counts(, displs)(, datatype)]`` at the root.
        recvbuf : numpy.ndarray or list
            This rank's block.
        root : int, default=0
            Scattering rank.
        """
        mine = message_bytes(recvbuf)
        self._varying(
            lambda table: algo.scatter_schedule(table[:, 0], root),
            [mine],
            lambda: self.mpi.Scatterv(sendbuf, recvbuf, root),
        )

    def Gather(self, sendbuf, recvbuf, root=0) -> None:  # noqa: N802
        """Binomial-tree gather of equal blocks.

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            This rank's block (``MPI.IN_PLACE`` at the root is allowed).
        recvbuf : numpy.ndarray or list or None
            All blocks (significant at the root only).
        root : int, default=0
            Gathering rank.
        """
        if sendbuf is _mpi().IN_PLACE:
            nbytes = message_bytes(recvbuf) // self.size
        else:
            nbytes = message_bytes(sendbuf)
        self._uniform(
            "gather", nbytes, lambda: self.mpi.Gather(sendbuf, recvbuf, root), root
        )

    def Gatherv(self, sendbuf, recvbuf, root=0) -> None:  # noqa: N802
        """Binomial-tree gather of blocks of varying size.

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            This rank's block.
        recvbuf : list or None
            ``[array, counts(, displs)(, datatype)]`` at the root.
        root : int, default=0
            Gathering rank.
        """
        if sendbuf is _mpi().IN_PLACE:
            mine = vector_bytes(recvbuf, self.size)[self.rank]
        else:
            mine = message_bytes(sendbuf)
        self._varying(
            lambda table: algo.gather_schedule(table[:, 0], root),
            [mine],
            lambda: self.mpi.Gatherv(sendbuf, recvbuf, root),
        )

    def Allgather(self, sendbuf, recvbuf) -> None:  # noqa: N802 - mpi4py naming
        """Allgather of equal blocks (recursive doubling, Bruck or ring by size).

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            This rank's block, or ``MPI.IN_PLACE``.
        recvbuf : numpy.ndarray or list
            All blocks.
        """
        if sendbuf is _mpi().IN_PLACE:
            nbytes = message_bytes(recvbuf) // self.size
        else:
            nbytes = message_bytes(sendbuf)
        self._uniform("allgather", nbytes, lambda: self.mpi.Allgather(sendbuf, recvbuf))

    def Allgatherv(self, sendbuf, recvbuf) -> None:  # noqa: N802 - mpi4py naming
        """Allgather of blocks of varying size.

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            This rank's block, or ``MPI.IN_PLACE``.
        recvbuf : list
            ``[array, counts(, displs)(, datatype)]``.
        """
        counts = vector_bytes(recvbuf, self.size)
        self._varying(
            lambda table: algo.allgather_schedule(table[:, 0]),
            [counts[self.rank]],
            lambda: self.mpi.Allgatherv(sendbuf, recvbuf),
        )

    def Alltoall(self, sendbuf, recvbuf) -> None:  # noqa: N802 - mpi4py naming
        """Pairwise-exchange alltoall of equal blocks.

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            One block per destination, or ``MPI.IN_PLACE``.
        recvbuf : numpy.ndarray or list
            One block per source.
        """
        whole = self._own_bytes(sendbuf, recvbuf)
        self._uniform(
            "alltoall", whole // self.size, lambda: self.mpi.Alltoall(sendbuf, recvbuf)
        )

    def Alltoallv(self, sendbuf, recvbuf) -> None:  # noqa: N802 - mpi4py naming
        """Pairwise-exchange alltoall with the full count matrix (NIC contention).

        Parameters
        ----------
        sendbuf : list
            ``[array, counts(, displs)(, datatype)]``: what goes to each rank.
        recvbuf : list
            ``[array, counts(, displs)(, datatype)]``: what comes from each rank.
        """
        if sendbuf is _mpi().IN_PLACE:
            row = vector_bytes(recvbuf, self.size)
        else:
            row = vector_bytes(sendbuf, self.size)
        self._varying(
            algo.alltoall_schedule, row, lambda: self.mpi.Alltoallv(sendbuf, recvbuf)
        )

    def Allreduce(self, sendbuf, recvbuf, op=None) -> None:  # noqa: N802
        """Allreduce (recursive doubling below 2 KiB, ring above).

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            This rank's vector, or ``MPI.IN_PLACE``.
        recvbuf : numpy.ndarray or list
            The result.
        op : mpi4py.MPI.Op, default=MPI.SUM
            Reduction operation.
        """
        op = _mpi().SUM if op is None else op
        nbytes = self._own_bytes(sendbuf, recvbuf)
        self._uniform(
            "allreduce", nbytes, lambda: self.mpi.Allreduce(sendbuf, recvbuf, op)
        )

    def Reduce(self, sendbuf, recvbuf, op=None, root=0) -> None:  # noqa: N802
        """Binomial-tree reduction to ``root``.

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            This rank's vector (``MPI.IN_PLACE`` at the root).
        recvbuf : numpy.ndarray or list or None
            The result (significant at the root only).
        op : mpi4py.MPI.Op, default=MPI.SUM
            Reduction operation.
        root : int, default=0
            Receiving rank.
        """
        op = _mpi().SUM if op is None else op
        nbytes = self._own_bytes(sendbuf, recvbuf)
        self._uniform(
            "reduce", nbytes, lambda: self.mpi.Reduce(sendbuf, recvbuf, op, root), root
        )

    # -- pickle-based object helpers ----------------------------------------------

    def allreduce(self, obj, op=None):
        """Allreduce of a small Python object (modelled on its pickled size).

        Parameters
        ----------
        obj : object
            This rank's value.
        op : mpi4py.MPI.Op, default=MPI.SUM
            Reduction operation.

        Returns
        -------
        object
        """
        op = _mpi().SUM if op is None else op
        return self._uniform(
            "allreduce", _pickled_size(obj), lambda: self.mpi.allreduce(obj, op)
        )

    def bcast(self, obj=None, root=0):
        """Broadcast of a Python object (modelled on the root's pickled size).

        Parameters
        ----------
        obj : object
            The value at the root.
        root : int, default=0
            Broadcasting rank.

        Returns
        -------
        object
        """
        arrival = self._clock.enter()
        done = None
        try:
            result = self.mpi.bcast(obj, root)
            nbytes = _pickled_size(result)
            latest, _ = self._exchange(arrival, [], need_sizes=False)
            done = self._charge(
                ("bcast", nbytes, root),
                lambda: algo.bcast_schedule(self.size, nbytes, root),
                latest,
            )
            return result
        finally:
            self._clock.leave(done)

    def gather(self, obj, root=0):
        """Gather of Python objects to ``root`` (binomial tree on pickled sizes).

        Parameters
        ----------
        obj : object
            This rank's value.
        root : int, default=0
            Gathering rank.

        Returns
        -------
        list or None
            The values at the root, None elsewhere.
        """
        return self._varying(
            lambda table: algo.gather_schedule(table[:, 0], root),
            [_pickled_size(obj)],
            lambda: self.mpi.gather(obj, root),
        )

    def allgather(self, obj):
        """Allgather of Python objects (modelled on their pickled sizes).

        Parameters
        ----------
        obj : object
            This rank's value.

        Returns
        -------
        list
        """
        return self._varying(
            lambda table: algo.allgather_schedule(table[:, 0]),
            [_pickled_size(obj)],
            lambda: self.mpi.allgather(obj),
        )
