"""Lowercase (pickle-based) collectives of :class:`InstrumentedComm`.

They are modelled like their buffer counterparts on the pickled size of the objects.
"""

from __future__ import annotations

import pickle

from . import _collectives as algo

__all__ = ["ObjectCollectiveMixin"]


def _mpi():
    from mpi4py import MPI

    return MPI


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
