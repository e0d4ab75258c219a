"""Time and counters of an :class:`InstrumentedComm`: its clock, the critical path,
what its collectives and links have charged so far, and the whole-run summary.

The summary's keys and units are the schema's
(:data:`~scaleprobe.kernels.schema.SUMMARY_UNITS`, with the critical-path and
collective-latency columns :data:`~scaleprobe.kernels.schema.CRITICAL_PATH_COLUMNS`
and :data:`~scaleprobe.kernels.schema.COLLECTIVE_LATENCY_COLUMNS`); their long names
are :data:`SUMMARY_LONG_NAMES`.
"""

from __future__ import annotations

import resource

import numpy as np
from scaleprobe.kernels.schema import COLLECTIVE_LATENCY_COLUMNS, CRITICAL_PATH_COLUMNS

from ._clock import COLLECTIVE_SCALINGS, COUNTER_KEYS, PATH_KEYS

__all__ = ["SUMMARY_LONG_NAMES", "TimingMixin"]

#: Long names of every key of :meth:`InstrumentedComm.summary`, for a record; the
#: units are the schema's :data:`~scaleprobe.kernels.schema.SUMMARY_UNITS`.
SUMMARY_LONG_NAMES = {
    "time": "completion time (virtual in emulated mode, slowest rank)",
    "wall_time": "wall-clock time of the kernel (slowest rank)",
    "comp_time": "computation time (mean over ranks)",
    "comm_time": "communication time (mean over ranks)",
    "comp_time_max": "computation time, slowest rank",
    "comm_time_max": "communication time, slowest rank",
    "bytes_sent": "bytes sent by all ranks",
    "bytes_inter": "bytes sent between nodes",
    "bytes_intra": "bytes sent within nodes",
    "messages": "messages sent by all ranks",
    "messages_inter": "messages sent between nodes",
    "peak_rss": "peak resident memory of the largest rank",
    "slot_wait_time": "longest wait of a rank for a core slot (wall)",
    "slot_timeouts": "waits for a core slot that gave up",
    "cp_comp_time": "computation on the modelled critical path",
    "cp_latency_time": "modelled inter-node latency on the critical path",
    "cp_bandwidth_time": "modelled inter-node transfer time on the critical path",
    "cp_intra_time": "modelled intra-node transfer time on the critical path",
    "coll_tree_latency_time": "modelled latency of collectives with log2(p) rounds",
    "coll_linear_latency_time": "modelled latency of collectives with p - 1 rounds",
    "wait_time": "mean time a rank waited for other ranks' computation (modelled)",
    "SW": "switches the emulated allocation touches",
    "R": "racks the emulated allocation touches",
    "SWR": "switches per rack of the emulated allocation",
}


class TimingMixin:
    """The clock, the counters and the summary of an :class:`InstrumentedComm` (a
    mixin: it needs ``_clock``, ``mpi``, ``size``, ``network``, ``_arrive`` and
    ``_resolve`` of the communicator).
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
                zip(CRITICAL_PATH_COLUMNS, PATH_KEYS, strict=True)
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
            Seconds per key of :data:`COLLECTIVE_LATENCY_COLUMNS`.
        """
        return {
            key: float(self._clock.collective_latency[scaling])
            for key, scaling in zip(
                COLLECTIVE_LATENCY_COLUMNS, COLLECTIVE_SCALINGS, strict=True
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

    def summary(self) -> dict:
        """Whole-run metrics, identical on every rank (collective, costs nothing).

        Returns
        -------
        dict
            ``time`` (max clock), ``wall_time`` (max wall seconds), ``comp_time`` and
            ``comm_time`` (means; ``*_max`` maxima), ``bytes_sent``, ``bytes_inter``,
            ``bytes_intra``, ``messages``, ``messages_inter`` (sums), ``peak_rss``
            (max, bytes), ``slot_wait_time`` (max wall seconds waiting for a core
            slot), ``slot_timeouts`` (sum; waits that gave up, see
            :class:`~scaleprobe.kernels.comm._cores.CoreSlots`). In emulated mode
            also the critical path of the rank that finished last (``cp_comp_time``,
            ``cp_latency_time``, ``cp_bandwidth_time``, ``cp_intra_time``, summing
            to ``time``), the latency charged by collectives over all ranks whose
            rounds grow as ``log2 p`` and as ``p`` (``coll_tree_latency_time``,
            ``coll_linear_latency_time``; part of ``cp_latency_time`` when every
            rank makes the same calls) and ``wait_time``, the mean over ranks of the
            computation of other ranks they waited for, and the allocation's ``SW``,
            ``R`` and ``SWR`` (:meth:`Network.mapping_metrics`). Units in
            :data:`~scaleprobe.kernels.schema.SUMMARY_UNITS`.
        """
        column = self._summary_table()
        result = {
            "time": float(column["time"].max()),
            "wall_time": float(column["wall_time"].max()),
            "comp_time": float(column["comp_time"].mean()),
            "comm_time": float(column["comm_time"].mean()),
            "comp_time_max": float(column["comp_time"].max()),
            "comm_time_max": float(column["comm_time"].max()),
            "peak_rss": int(column["peak_rss"].max()),
            "slot_wait_time": float(column["slot_wait_time"].max()),
        }
        for key in (
            "bytes_sent",
            "bytes_inter",
            "bytes_intra",
            "messages",
            "messages_inter",
            "slot_timeouts",
        ):
            result[key] = int(column[key].sum())
        if self._clock.emulated:
            result.update(self._modelled_summary(column))
        return result

    def _summary_table(self) -> dict:
        """Every rank's clocks, memory, slot waits, path and counters (one real
        Allgather, no cost), by column."""
        clock = self._clock
        clock.enter()
        try:
            self._arrive()
            self._resolve()
            now = clock.now if clock.emulated else clock.wall()
            counts = dict(clock.counts)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            slots = clock.slots
            wait = slots.wait_time if slots is not None else 0.0
            timeouts = slots.timeouts if slots is not None else 0
            row = [now, clock.wall(), rss, wait, timeouts, *clock.path]
            row += [clock.collective_latency[key] for key in COLLECTIVE_SCALINGS]
            row += [counts[key] for key in COUNTER_KEYS]
            mine = np.array(row, dtype=np.float64)
            table = np.empty((self.size, len(mine)), dtype=np.float64)
            self.mpi.Allgather(mine, table)
        finally:
            clock.leave(None)
        names = [
            "time",
            "wall_time",
            "peak_rss",
            "slot_wait_time",
            "slot_timeouts",
            *CRITICAL_PATH_COLUMNS,
            *COLLECTIVE_LATENCY_COLUMNS,
            *COUNTER_KEYS,
        ]
        return dict(zip(names, table.T, strict=True))

    def _modelled_summary(self, column: dict) -> dict:
        """The summary's modelled parts: the critical path of the rank that finished
        last, the collectives' latency, the wait for others and the allocation."""
        last = int(np.argmax(column["time"]))
        result = {key: float(column[key][last]) for key in CRITICAL_PATH_COLUMNS}
        # Collectives over all ranks are on every rank's path: the largest sum.
        for key in COLLECTIVE_LATENCY_COLUMNS:
            result[key] = float(column[key].max())
        # What each rank spent waiting for others' computation, on average.
        result["wait_time"] = float(
            np.mean(np.maximum(column["cp_comp_time"] - column["comp_time"], 0.0))
        )
        result.update(self.network.mapping_metrics())
        return result
