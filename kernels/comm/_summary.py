"""The whole-run summary of an :class:`InstrumentedComm` and its record keys."""

from __future__ import annotations

import resource

import numpy as np

from ._clock import COLLECTIVE_SCALINGS, COUNTER_KEYS, PATH_KEYS

__all__ = [
    "COLLECTIVE_RECORD_KEYS",
    "PATH_LONG_NAMES",
    "PATH_RECORD_KEYS",
    "SUMMARY_UNITS",
    "SummaryMixin",
]

#: Units of the keys of :meth:`InstrumentedComm.summary`, for a record's ``units``.
SUMMARY_UNITS = {
    "time": "s",
    "wall_time": "s",
    "comp_time": "s",
    "comm_time": "s",
    "comp_time_max": "s",
    "comm_time_max": "s",
    "bytes_sent": "bytes",
    "bytes_inter": "bytes",
    "bytes_intra": "bytes",
    "messages": "1",
    "messages_inter": "1",
    "peak_rss": "bytes",
    "slot_wait_time": "s",
    "slot_timeouts": "1",
    "cp_comp_time": "s",
    "cp_latency_time": "s",
    "cp_bandwidth_time": "s",
    "cp_intra_time": "s",
    "coll_tree_latency_time": "s",
    "coll_linear_latency_time": "s",
    "wait_time": "s",
    "SW": "1",
    "R": "1",
    "SWR": "1",
}

#: Record keys of the critical-path parts (:data:`PATH_KEYS` order).
PATH_RECORD_KEYS = tuple(f"cp_{key}_time" for key in PATH_KEYS)

#: Record keys of the latency collectives over all ranks charged, by how their
#: rounds grow (:data:`~scaleprobe.kernels.comm._clock.COLLECTIVE_SCALINGS` order).
COLLECTIVE_RECORD_KEYS = tuple(
    f"coll_{key}_latency_time" for key in COLLECTIVE_SCALINGS
)

#: Long names of the critical-path parts, for a record's ``long_names``.
PATH_LONG_NAMES = {
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


class SummaryMixin:
    """:meth:`summary` of :class:`InstrumentedComm`."""

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
            :class:`~scaleprobe.kernels.comm._slots.CoreSlots`). In emulated mode
            also the critical path of the rank that finished last (``cp_comp_time``,
            ``cp_latency_time``, ``cp_bandwidth_time``, ``cp_intra_time``, summing
            to ``time``), the latency charged by collectives over all ranks whose
            rounds grow as ``log2 p`` and as ``p`` (``coll_tree_latency_time``,
            ``coll_linear_latency_time``; part of ``cp_latency_time`` when every
            rank makes the same calls) and ``wait_time``, the mean over ranks of the
            computation of other ranks they waited for, and the allocation's ``SW``,
            ``R`` and ``SWR`` (:meth:`Network.mapping_metrics`). Units in
            :data:`SUMMARY_UNITS`.
        """
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
            *PATH_RECORD_KEYS,
            *COLLECTIVE_RECORD_KEYS,
        ]
        column = dict(zip([*names, *COUNTER_KEYS], table.T, strict=True))
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
            last = int(np.argmax(column["time"]))
            for key in PATH_RECORD_KEYS:
                result[key] = float(column[key][last])
            # Collectives over all ranks are on every rank's path: the largest sum.
            for key in COLLECTIVE_RECORD_KEYS:
                result[key] = float(column[key].max())
            # What each rank spent waiting for others' computation, on average.
            result["wait_time"] = float(
                np.mean(np.maximum(column["cp_comp_time"] - column["comp_time"], 0.0))
            )
            result.update(self.network.mapping_metrics())
        return result
