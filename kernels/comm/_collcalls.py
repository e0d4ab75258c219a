"""Collective calls of :class:`InstrumentedComm`, on buffers and on Python objects.

Each call runs the real MPI collective for the data, then (in emulated mode) one
extra real Allgather exchanges the ranks' arrival times and whatever sizes the model
needs; that exchange costs no virtual time. The call completes on every rank at the
latest arrival plus :func:`schedule_cost` of the algorithm's schedule, and each rank
counts the bytes and messages it sends in that schedule. The lowercase (pickle-based)
collectives are modelled like their buffer counterparts on the pickled size of the
objects.
"""

from __future__ import annotations

import pickle

import numpy as np

from . import _collectives as algo
from ._buffers import message_bytes, vector_bytes

__all__ = ["CollectiveMixin", "ObjectCollectiveMixin"]


_CACHE_LIMIT = 4096


def _mpi():
    from mpi4py import MPI

    return MPI


class CollectiveMixin:
    """Barrier, Bcast, Scatter(v), Gather(v), Allgather(v), Alltoall(v), Allreduce
    and Reduce over numpy buffers."""

    def _exchange(self, sizes, need_sizes: bool):
        """Latest arrival (a stamp) and every rank's ``sizes``, via one Allgather.

        Each rank contributes its stamp (time and critical path, see
        :mod:`scaleprobe.kernels.comm._clock`); the latest one is returned, so the
        ranks leaving the collective inherit the path of the rank they waited for.
        """
        sizes = np.atleast_1d(np.asarray(sizes, dtype=np.float64))
        if not self._clock.emulated and not need_sizes:
            return None, None
        self._resolve()
        here = self._clock.stamp()
        mine = np.concatenate((here, sizes))
        table = np.empty((self.size, len(mine)), dtype=np.float64)
        self.mpi.Allgather(mine, table)
        width = here.size
        latest = table[int(np.argmax(table[:, 0])), :width].copy()
        return (latest if self._clock.emulated else None), table[:, width:]

    def _scaling(self, kind, total):
        """How the rounds of this call grow with the ranks (None on a split).

        The same choice of algorithm as the schedules make (see
        :mod:`~scaleprobe.kernels.comm._collectives`): pairwise alltoall and ring
        allgather/allreduce take ``p - 1`` (or ``2 (p - 1)``) rounds, everything else
        ``log2 p``. ``total`` is the allreduce vector or the allgather total, bytes.
        """
        if self.size < 2 or self.size != self._clock.world_size:
            return None
        base = kind[:-1] if kind.endswith("v") else kind
        if base == "alltoall":
            return "linear"
        if base == "allreduce":
            return "linear" if total >= algo.ALLREDUCE_SHORT else "tree"
        if base == "allgather":
            return "linear" if total >= algo.ALLGATHER_LONG else "tree"
        return "tree"

    def _charge(self, key, build, latest, kind, nbytes, total=None):
        """Count this rank's traffic in a schedule; return the completion stamp."""
        cached = self._cache.get(key) if key is not None else None
        if cached is None:
            schedule = build()
            latency, bandwidth, intra = algo.schedule_cost_parts(
                schedule, self._nodes, self.link, self.network
            )
            cached = (
                np.array([latency + bandwidth + intra, 0.0, latency, bandwidth, intra]),
                algo.rank_traffic(schedule, self.rank, self._nodes),
            )
            if key is not None:
                if len(self._cache) > _CACHE_LIMIT:
                    self._cache.clear()
                self._cache[key] = cached
        cost, traffic = cached
        self._clock.add_traffic(traffic)
        self._clock.add_collective(
            kind,
            nbytes,
            latency=float(cost[2]),
            scaling=self._scaling(kind, nbytes if total is None else total),
        )
        return None if latest is None else latest + cost

    def _schedule(self, kind, nbytes, root):
        """Schedule of a collective whose per-rank size is the same everywhere."""
        size = self.size
        if kind == "barrier":
            return algo.barrier_schedule(size)
        if kind == "bcast":
            return algo.bcast_schedule(size, nbytes, root)
        if kind == "reduce":
            return algo.reduce_schedule(size, nbytes, root)
        if kind == "allreduce":
            return algo.allreduce_schedule(size, nbytes)
        if kind == "scatter":
            return algo.scatter_schedule([nbytes] * size, root)
        if kind == "gather":
            return algo.gather_schedule([nbytes] * size, root)
        if kind == "allgather":
            return algo.allgather_schedule([nbytes] * size)
        if kind == "alltoall":
            return algo.alltoall_schedule(np.full((size, size), float(nbytes)))
        raise ValueError(f"unknown collective {kind!r}")

    def _uniform(self, kind, size_of, call, root=0):
        """Run ``call`` and charge a collective whose size is the same everywhere.

        ``size_of`` returns the per-rank bytes; it runs inside the call so its CPU
        time is not charged as computation.
        """
        self._clock.enter()
        done = None
        try:
            self._arrive()
            nbytes = size_of()
            result = call()
            latest, _ = self._exchange([], need_sizes=False)
            done = self._charge(
                (kind, nbytes, root),
                lambda: self._schedule(kind, nbytes, root),
                latest,
                kind,
                nbytes,
                total=nbytes * self.size if kind == "allgather" else nbytes,
            )
            return result
        finally:
            self._clock.leave(done)

    def _varying(self, kind, build, sizes_of, call):
        """Run ``call`` and charge a collective built from every rank's sizes.

        ``sizes_of`` returns this rank's sizes (1-D); ``build`` makes the schedule
        from the table of every rank's sizes.
        """
        self._clock.enter()
        done = None
        try:
            self._arrive()
            result = call()
            sizes = sizes_of()
            latest, table = self._exchange(sizes, need_sizes=True)
            done = self._charge(
                None,
                lambda: build(table),
                latest,
                kind,
                float(np.sum(sizes)),
                total=float(np.sum(table)) if table is not None else None,
            )
            return result
        finally:
            self._clock.leave(done)

    def _block_bytes(self, sendbuf, recvbuf):
        """One rank's block of a Gather/Allgather (``IN_PLACE`` aware)."""
        if sendbuf is _mpi().IN_PLACE:
            return message_bytes(recvbuf) // self.size
        return message_bytes(sendbuf)

    def _own_bytes(self, sendbuf, recvbuf):
        if sendbuf is None or sendbuf is _mpi().IN_PLACE:
            return message_bytes(recvbuf)
        return message_bytes(sendbuf)

    # -- buffer collectives -------------------------------------------------------

    def Barrier(self) -> None:  # noqa: N802 - mpi4py naming
        """Dissemination barrier."""
        self._uniform("barrier", lambda: 0, self.mpi.Barrier)

    def Bcast(self, buf, root=0) -> None:  # noqa: N802 - mpi4py naming
        """Binomial-tree broadcast of ``buf`` from ``root``.

        Parameters
        ----------
        buf : numpy.ndarray or list
            Buffer (sent at the root, received elsewhere).
        root : int, default=0
            Broadcasting rank.
        """
        self._uniform(
            "bcast", lambda: message_bytes(buf), lambda: self.mpi.Bcast(buf, root), root
        )

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

        def size_of():
            if recvbuf is _mpi().IN_PLACE:
                return message_bytes(sendbuf) // self.size
            return message_bytes(recvbuf)

        self._uniform(
            "scatter", size_of, lambda: self.mpi.Scatter(sendbuf, recvbuf, root), root
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
        self._varying(
            "scatterv",
            lambda table: algo.scatter_schedule(table[:, 0], root),
            lambda: [message_bytes(recvbuf)],
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
        self._uniform(
            "gather",
            lambda: self._block_bytes(sendbuf, recvbuf),
            lambda: self.mpi.Gather(sendbuf, recvbuf, root),
            root,
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

        def sizes_of():
            if sendbuf is _mpi().IN_PLACE:
                return [vector_bytes(recvbuf, self.size)[self.rank]]
            return [message_bytes(sendbuf)]

        self._varying(
            "gatherv",
            lambda table: algo.gather_schedule(table[:, 0], root),
            sizes_of,
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
        self._uniform(
            "allgather",
            lambda: self._block_bytes(sendbuf, recvbuf),
            lambda: self.mpi.Allgather(sendbuf, recvbuf),
        )

    def Allgatherv(self, sendbuf, recvbuf) -> None:  # noqa: N802 - mpi4py naming
        """Allgather of blocks of varying size.

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            This rank's block, or ``MPI.IN_PLACE``.
        recvbuf : list
            ``[array, counts(, displs)(, datatype)]``.
        """
        self._varying(
            "allgatherv",
            lambda table: algo.allgather_schedule(table[:, 0]),
            lambda: [vector_bytes(recvbuf, self.size)[self.rank]],
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
        self._uniform(
            "alltoall",
            lambda: self._own_bytes(sendbuf, recvbuf) // self.size,
            lambda: self.mpi.Alltoall(sendbuf, recvbuf),
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

        def sizes_of():
            if sendbuf is _mpi().IN_PLACE:
                return vector_bytes(recvbuf, self.size)
            return vector_bytes(sendbuf, self.size)

        self._varying(
            "alltoallv",
            algo.alltoall_schedule,
            sizes_of,
            lambda: self.mpi.Alltoallv(sendbuf, recvbuf),
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
        self._uniform(
            "allreduce",
            lambda: self._own_bytes(sendbuf, recvbuf),
            lambda: self.mpi.Allreduce(sendbuf, recvbuf, op),
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
        self._uniform(
            "reduce",
            lambda: self._own_bytes(sendbuf, recvbuf),
            lambda: self.mpi.Reduce(sendbuf, recvbuf, op, root),
            root,
        )


def _pickled_size(obj) -> int:
    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


class ObjectCollectiveMixin:
    """``allreduce``, ``bcast``, ``gather`` and ``allgather`` of Python objects.

    Relies on the helpers of :class:`CollectiveMixin`.
    """

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
            "allreduce", lambda: _pickled_size(obj), lambda: self.mpi.allreduce(obj, op)
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
        self._clock.enter()
        done = None
        try:
            self._arrive()
            result = self.mpi.bcast(obj, root)
            nbytes = _pickled_size(result)
            latest, _ = self._exchange([], need_sizes=False)
            done = self._charge(
                ("bcast", nbytes, root),
                lambda: algo.bcast_schedule(self.size, nbytes, root),
                latest,
                "bcast",
                nbytes,
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
            "gather",
            lambda table: algo.gather_schedule(table[:, 0], root),
            lambda: [_pickled_size(obj)],
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
            "allgather",
            lambda table: algo.allgather_schedule(table[:, 0]),
            lambda: [_pickled_size(obj)],
            lambda: self.mpi.allgather(obj),
        )
