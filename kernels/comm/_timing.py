"""Time and counters of an :class:`InstrumentedComm`: its clock, the critical path,
and what its collectives and links have charged so far."""

from __future__ import annotations

import numpy as np

from ._clock import COLLECTIVE_SCALINGS, COUNTER_KEYS, PATH_KEYS
from ._summary import COLLECTIVE_RECORD_KEYS, PATH_RECORD_KEYS

__all__ = ["TimingMixin"]


class TimingMixin:
    """The clock and the counters of an :class:`InstrumentedComm` (a mixin: it needs
    ``_clock``, ``mpi``, ``size``, ``_arrive`` and ``_resolve`` of the communicator).
    """

    def clock(self) -> float:
        """This rank's time since start (virtual in emulated mode, else wall), s."""
        return self._clock.time()

    def sync(self) -> float:
        """Align every rank's clock to the latest one (collective, costs nothing).

        In emulated mode every rank also takes the critical path of the latest rank,
        so that :meth:`critical_path_since` measures from a common origin.

        Returns
        -------
        float
            The common time.
        """
        self._clock.enter()
        latest = None
        try:
            table = self._stamps()
            latest = table[int(np.argmax(table[:, 0]))]
            if not self._clock.emulated:
                return self._clock.wall()
            return float(latest[0])
        finally:
            self._clock.leave(latest if self._clock.emulated else None)

    def _stamps(self):
        """Every rank's stamp ``[time, *path]`` (one real Allgather, no cost)."""
        self._arrive()
        self._resolve()
        mine = self._clock.stamp()
        table = np.empty((self.size, mine.size), dtype=np.float64)
        self.mpi.Allgather(mine, table)
        return table

    def elapsed_since(self, start: float) -> float:
        """Latest clock over ranks minus ``start`` (collective).

        Parameters
        ----------
        start : float
            A time from :meth:`sync`.

        Returns
        -------
        float
        """
        from mpi4py import MPI

        now = self._clock.enter()
        try:
            self._arrive()
            self._resolve()
            now = self._clock.now if self._clock.emulated else now
            return self.mpi.allreduce(now, op=MPI.MAX) - start
        finally:
            self._clock.leave(None)

    def path(self) -> dict:
        """This rank's critical path so far: seconds of each part (local, no MPI).

        Right after :meth:`sync` every rank holds the same path; pass it to
        :meth:`critical_path_since` later.

        Returns
        -------
        dict
            ``{"comp": s, "latency": s, "bandwidth": s, "intra": s}`` (zeros unless
            the mode is emulated).
        """
        self._clock.flush()
        return dict(zip(PATH_KEYS, self._clock.path.tolist(), strict=True))

    def critical_path_since(self, start: dict) -> dict:
        """Critical path of the latest rank since ``start`` (collective, costs nothing).

        Parameters
        ----------
        start : dict
            A :meth:`path` taken right after a :meth:`sync`.

        Returns
        -------
        dict
            ``cp_comp_time``, ``cp_latency_time``, ``cp_bandwidth_time`` and
            ``cp_intra_time`` (seconds, summing to the elapsed virtual time):
            computation, inter-node latency, inter-node bandwidth and intra-node
            parts of the chain of events that determined the elapsed time. Empty
            unless the mode is emulated (nothing is modelled otherwise).

        Examples
        --------
        >>> start = comm.sync(); origin = comm.path()  # doctest: +SKIP
        >>> parts = comm.critical_path_since(origin)  # doctest: +SKIP
        """
        self._clock.enter()
        try:
            table = self._stamps()
        finally:
            self._clock.leave(None)
        if not self._clock.emulated:
            return {}
        latest = table[int(np.argmax(table[:, 0])), 1:]
        return {
            name: float(latest[i] - start.get(key, 0.0))
            for i, (name, key) in enumerate(
                zip(PATH_RECORD_KEYS, PATH_KEYS, strict=True)
            )
        }

    def collective_latency(self) -> dict:
        """Latency this rank's collectives over all ranks charged so far (local).

        Split by how the algorithm's rounds grow with the ranks: ``log2 p``
        (``coll_tree_latency_time``) or ``p`` (``coll_linear_latency_time``). Every
        rank calls the same collectives, which are on the critical path, so a
        difference of two of these is that part of ``cp_latency_time``; a model can
        then extrapolate each part with the shape its algorithm gives. Calls on
        split communicators are in neither.

        Returns
        -------
        dict
            Seconds per key of :data:`COLLECTIVE_RECORD_KEYS`.
        """
        return {
            key: float(self._clock.collective_latency[scaling])
            for key, scaling in zip(
                COLLECTIVE_RECORD_KEYS, COLLECTIVE_SCALINGS, strict=True
            )
        }

    def collective_calls(self) -> dict:
        """Collective calls this rank made, by kind (local, no MPI).

        Returns
        -------
        dict
            ``{kind: (calls, bytes)}`` with ``bytes`` the per-rank payload summed
            over the calls (kinds: ``barrier``, ``bcast``, ``reduce``, ``allreduce``,
            ``scatter``, ``gather``, ``allgather``, ``alltoall`` and the ``v``
            variants).
        """
        return {k: (int(c), float(b)) for k, (c, b) in self._clock.collectives.items()}

    def counters(self) -> dict:
        """Snapshot of this rank's counters (see :data:`COUNTER_KEYS`).

        Returns
        -------
        dict
            ``comp_time``, ``comm_time`` (s), ``bytes_sent``, ``bytes_inter``,
            ``bytes_intra``, ``messages``, ``messages_inter``.
        """
        return self._clock.snapshot()

    def counters_since(self, snapshot: dict) -> dict:
        """Counters accumulated since an earlier :meth:`counters` snapshot.

        Parameters
        ----------
        snapshot : dict
            An earlier snapshot.

        Returns
        -------
        dict
        """
        now = self.counters()
        return {key: now[key] - snapshot.get(key, 0) for key in COUNTER_KEYS}
