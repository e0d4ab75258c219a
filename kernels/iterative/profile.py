"""Per-iteration profiles of an iterative kernel: computation and each collective.

FiM (seed 003) models an iterative application as stages separated by global
synchronisations: a parallel computation, then collectives (scatter, broadcast,
gather...). :class:`IterationProfile` times both on the instrumented communicator's
clock (virtual in emulated mode), per iteration:

- ``comp_time``: the slowest rank's computation in the iteration (a stage ends when
  its last process completes);
- ``<kind>_time`` for every collective kind: the sum over the iteration's calls of
  the latest completion over ranks minus the latest arrival, i.e. the cost of the
  collective itself without the wait for late ranks (in emulated mode exactly the
  modelled cost, as every rank leaves a collective together);
- ``<kind>_jobs``: the data points (FiM-Com's jobs) the calls moved, as the kernel
  declares them.

Computation regions are also counted by :class:`~.hardware.HardwareCounters`, so
that the record carries FiM-Cal's ``F``, ``U``, ``TC`` and ``SC``.
"""

from __future__ import annotations

import collections
import contextlib
import math
import socket

import numpy as np

from .hardware import HardwareCounters, hardware_parameters, last_level_cache

__all__ = ["HARDWARE_LONG_NAMES", "HARDWARE_UNITS", "IterationProfile", "build_record"]

#: Units of the hardware metrics of :meth:`IterationProfile.result`.
HARDWARE_UNITS = {
    "hw_frequency": "Hz",
    "hw_utilisation": "1",
    "hw_total_cycles": "cycles",
    "hw_stall_cycles": "cycles",
    "hw_counted": "1",
}

#: Summary keys the record names without a long name of their own.
_PLAIN_SUMMARY = (
    "time",
    "wall_time",
    "comp_time",
    "comm_time",
    "comp_time_max",
    "comm_time_max",
    "bytes_sent",
    "bytes_inter",
    "bytes_intra",
    "messages",
    "messages_inter",
    "peak_rss",
    "slot_wait_time",
    "slot_timeouts",
)

_ESTIMATE = " (estimated: CPU time x nominal clock, no cycle counter)"


def _hardware_long_names(counted: bool) -> dict:
    suffix = "" if counted else _ESTIMATE
    return {
        "hw_frequency": "clock rate F of the computation" + suffix,
        "hw_utilisation": "utilisation per process U (CPU over wall time, mean)",
        "hw_total_cycles": "total cycles TC of the computation, all ranks" + suffix,
        "hw_stall_cycles": "stall cycles SC of the computation, all ranks"
        + ("" if counted else " (not counted: NaN)"),
        "hw_counted": "1 if cycles were counted by hardware counters, 0 if estimated",
    }


#: Long names of the hardware metrics when the cycles were estimated.
HARDWARE_LONG_NAMES = _hardware_long_names(False)


class IterationProfile:
    """Times the computation and the collectives of each iteration of a kernel.

    Parameters
    ----------
    comm : InstrumentedComm
        The kernel's communicator.
    collectives : dict of str to float
        Collective kinds to report (``"scatter"``, ``"bcast"``, ``"gather"``...), in
        the order of the record, each with the bytes of one of its data points.
    counters : bool, default=True
        Try hardware counters for the computation regions.

    Examples
    --------
    >>> profile = IterationProfile(comm, {"bcast": 40})  # doctest: +SKIP
    >>> profile.next_iteration()  # doctest: +SKIP
    >>> with profile.compute():  # doctest: +SKIP
    ...     work()
    >>> with profile.collective("bcast", jobs=k):  # doctest: +SKIP
    ...     comm.Bcast(centroids)
    """

    def __init__(self, comm, collectives, *, counters: bool = True):
        self.comm = comm
        self.kinds = tuple(collectives)
        self.job_bytes = {kind: float(collectives[kind]) for kind in self.kinds}
        self.hardware = HardwareCounters(counters=counters)
        self._comp = []
        self._calls = []  # (iteration, kind index, before, after, jobs)
        self._open = None  # clock when the open compute region (re)started
        self._working_set = math.nan

    def working_set(self, nbytes: float) -> None:
        """Declare the bytes this rank's iterations read and write.

        Its share of the data and the vectors it touches, allocated once: the record
        then carries ``working_set`` (the largest over ranks) and ``llc_bytes`` (the
        host's last-level cache), which tell whether a rank computed from its
        caches or from memory.

        Parameters
        ----------
        nbytes : float
        """
        self._working_set = float(nbytes)

    def next_iteration(self) -> None:
        """Start the next iteration (call before the first one too)."""
        self._comp.append(0.0)

    @property
    def iterations(self) -> int:
        """Iterations started so far."""
        return len(self._comp)

    def _pause(self) -> bool:
        if self._open is None:
            return False
        self.hardware.stop()
        self._comp[-1] += self.comm.clock() - self._open
        self._open = None
        return True

    def _resume(self) -> None:
        self._open = self.comm.clock()
        self.hardware.start()

    @contextlib.contextmanager
    def compute(self):
        """Time a computation region of this rank.

        Collectives timed with :meth:`collective` inside the region pause it, so a
        whole iteration can be one region.
        """
        if not self._comp:
            self.next_iteration()
        if self._open is not None:
            raise RuntimeError("compute regions do not nest")
        self._resume()
        try:
            yield
        finally:
            self._pause()

    @contextlib.contextmanager
    def collective(self, kind: str, jobs: float = 0.0):
        """Time one collective call of ``kind`` that moves ``jobs`` data points."""
        if kind not in self.kinds:
            raise ValueError(f"collective kind {kind!r} is not one of {self.kinds}")
        if not self._comp:
            self.next_iteration()
        paused = self._pause()
        before = self.comm.clock()
        try:
            yield
        finally:
            after = self.comm.clock()
            self._calls.append(
                (len(self._comp) - 1, self.kinds.index(kind), before, after, jobs)
            )
            if paused:
                self._resume()

    def result(self) -> dict:
        """Per-iteration profiles and totals over ranks (collective; call once, after
        the timed region).

        Returns
        -------
        dict
            ``profile``: ``{"comp_time": [...], "<kind>_time": [...],
            "<kind>_jobs": [...]}`` over iterations; ``metrics``: their sums
            (``comp_time_iterations``, the slowest rank's per iteration, and
            ``comp_time_iterations_mean``, the mean rank's, ``stages`` (the
            iterations timed),
            ``working_set``, ``llc_bytes`` and ``cache_sharers`` (the most ranks
            of one host computing at once: its ranks, or its core slots when
            fewer) when every rank declared its working set,
            ``<kind>_time``, ``<kind>_jobs``,
            ``<kind>_calls``, and ``<kind>_job_bytes``) and the hardware
            parameters ``hw_frequency``,
            ``hw_utilisation`` (mean over ranks), ``hw_total_cycles``,
            ``hw_stall_cycles`` (sums over ranks), ``hw_counted``; ``units`` and
            ``long_names`` for all of them.
        """
        count = len(self._comp)
        calls = np.array(self._calls, dtype=np.float64).reshape(-1, 5)
        events = self.hardware.events()
        self.hardware.close()
        mine = {
            "comp": self._comp,
            "calls": calls,
            "events": events,
            "working_set": self._working_set,
            "host": socket.gethostname(),
            "slots": int(getattr(self.comm, "core_slots", 0)),
        }
        every = self.comm.allgather(mine)
        ranks_comp = np.array([np.asarray(r["comp"], dtype=float) for r in every])
        comp = ranks_comp.max(axis=0)
        mean_comp = ranks_comp.mean(axis=0)
        before = np.max([r["calls"][:, 2] for r in every], axis=0)
        after = np.max([r["calls"][:, 3] for r in every], axis=0)
        cost = np.maximum(after - before, 0.0)
        profile = {"comp_time": comp.tolist()}
        metrics = {
            "comp_time_iterations": float(comp.sum()) if count else 0.0,
            "comp_time_iterations_mean": float(mean_comp.sum()) if count else 0.0,
            "stages": count,
        }
        units = {
            "comp_time_iterations": "s",
            "comp_time_iterations_mean": "s",
            "stages": "1",
        }
        long_names = {
            "comp_time_iterations": "sum over iterations of the slowest rank's "
            "computation",
            "comp_time_iterations_mean": "sum over iterations of the mean rank's "
            "computation (the slowest's over it: the wait for the slowest of q)",
            "stages": "iterations timed",
        }
        iteration = calls[:, 0].astype(int)
        kind = calls[:, 1].astype(int)
        for index, name in enumerate(self.kinds):
            chosen = kind == index
            seconds = np.bincount(iteration[chosen], cost[chosen], minlength=count)
            jobs = np.bincount(iteration[chosen], calls[chosen, 4], minlength=count)
            profile[f"{name}_time"] = seconds.tolist()
            profile[f"{name}_jobs"] = jobs.tolist()
            metrics[f"{name}_time"] = float(seconds.sum())
            metrics[f"{name}_jobs"] = float(jobs.sum())
            metrics[f"{name}_calls"] = int(chosen.sum())
            metrics[f"{name}_job_bytes"] = self.job_bytes[name]
            units.update(
                {
                    f"{name}_time": "s",
                    f"{name}_jobs": "1",
                    f"{name}_calls": "1",
                    f"{name}_job_bytes": "bytes",
                }
            )
            long_names[f"{name}_time"] = f"time of the {name} calls (cost, no wait)"
            long_names[f"{name}_jobs"] = f"data points moved by the {name} calls"
            long_names[f"{name}_job_bytes"] = f"bytes of one data point of {name}"
        declared = [r["working_set"] for r in every]
        if not any(math.isnan(b) for b in declared):
            metrics["working_set"] = float(max(declared))
            metrics["llc_bytes"] = last_level_cache()
            units.update({"working_set": "bytes", "llc_bytes": "bytes"})
            long_names["working_set"] = (
                "bytes one rank's iterations read and write (the largest rank)"
            )
            long_names["llc_bytes"] = "last-level cache of the host (NaN if unknown)"
            metrics["cache_sharers"] = _cache_sharers(every)
            units["cache_sharers"] = "1"
            long_names["cache_sharers"] = (
                "most ranks computing at once on one host's last-level cache"
            )
        parts = [hardware_parameters(r["events"]) for r in every]
        counted = all(p["counted"] for p in parts)
        metrics.update(
            {
                "hw_frequency": float(np.mean([p["frequency"] for p in parts])),
                "hw_utilisation": float(np.mean([p["utilisation"] for p in parts])),
                "hw_total_cycles": float(sum(p["total_cycles"] for p in parts)),
                "hw_stall_cycles": float(sum(p["stall_cycles"] for p in parts))
                if counted
                else math.nan,
                "hw_counted": int(counted),
            }
        )
        units.update(HARDWARE_UNITS)
        long_names.update(_hardware_long_names(counted))
        return {
            "profile": profile,
            "metrics": metrics,
            "units": units,
            "long_names": long_names,
        }


def _cache_sharers(every):
    """Most ranks of one host that compute at once: the host's ranks, or its core
    slots when fewer (oversubscribed ranks take turns on the cores)."""
    hosts = collections.Counter(r["host"] for r in every)
    slots = max(r["slots"] for r in every)
    ranks = max(hosts.values())
    return int(min(ranks, slots) if slots else ranks)


def build_record(
    comm,
    kernel,
    profile,
    *,
    elapsed,
    path,
    summary,
    link,
    params,
    metrics=None,
    units=None,
    long_names=None,
    reason="",
):
    """The record of an iterative kernel (call on every rank; use it on rank 0).

    Parameters
    ----------
    comm : InstrumentedComm
    kernel : str
        Registered name of the kernel.
    profile : dict
        :meth:`IterationProfile.result`.
    elapsed : float
        Time of the timed region, s (the record's ``time``).
    path : dict
        :meth:`InstrumentedComm.critical_path_since` over the timed region: its
        ``cp_*_time`` parts (summing to ``elapsed``) replace the whole run's.
    summary : dict
        :meth:`InstrumentedComm.summary`.
    link : dict
        :meth:`InstrumentedComm.link_record`, the link the kernel applied.
    params : dict
        The kernel's parameters, echoed.
    metrics, units, long_names : dict, optional
        Kernel-specific entries.
    reason : str, default=""
        Why the result is wrong; non-empty makes the status ``invalid``.

    Returns
    -------
    dict
    """
    from scaleprobe.kernels.comm import SUMMARY_LONG_NAMES
    from scaleprobe.kernels.schema import SUMMARY_UNITS

    path_long_names = {
        k: v for k, v in SUMMARY_LONG_NAMES.items() if k not in _PLAIN_SUMMARY
    }

    record_metrics = {**summary, **path, **profile["metrics"], **(metrics or {})}
    record_metrics["total_time"] = summary["time"]
    record_metrics["time"] = elapsed
    return {
        "kernel": kernel,
        "status": "invalid" if reason else "ok",
        "reason": reason,
        "params": {**params, "ranks": comm.size},
        "metrics": record_metrics,
        "profiles": {"iteration": profile["profile"]},
        "link": link,
        "units": {
            **SUMMARY_UNITS,
            **profile["units"],
            "total_time": "s",
            **(units or {}),
        },
        "long_names": {
            **path_long_names,
            **profile["long_names"],
            "time": "time of the timed region (slowest rank)",
            "total_time": "time from start-up to the end, set-up included",
            **(long_names or {}),
        },
    }
