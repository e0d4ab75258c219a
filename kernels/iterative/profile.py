"""Per-iteration profiles of an iterative kernel: computation and each collective.

FiM (Bhimani et al. 2019) models an iterative application as stages separated by
global synchronisations: a parallel computation, then collectives (scatter,
broadcast, gather...). :class:`IterationProfile` times both on the instrumented
communicator's clock (virtual in emulated mode), per iteration:

- ``comp_time``: the slowest rank's computation in the iteration (a stage ends when
  its last process completes);
- ``<kind>_time`` for every collective kind: the sum over the iteration's calls of
  the latest completion over ranks minus the latest arrival, i.e. the cost of the
  collective itself without the wait for late ranks (in emulated mode exactly the
  modelled cost, as every rank leaves a collective together);
- ``<kind>_jobs``: the data points (FiM-Com's jobs) the calls moved, as the kernel
  declares them.

Computation regions are also counted by :class:`~.hardware.HardwareCounters`, so
that the record carries FiM-Cal's ``F``, ``U``, ``TC`` and ``SC``. What a profile
reports is declared once, :func:`iteration_metrics`; :func:`iteration_measurement`
turns a profile into the kernel's :class:`~scaleprobe.kernels.harness.Measurement`.
"""

from __future__ import annotations

import collections
import contextlib
import math
import socket

import numpy as np
from scaleprobe.kernels.harness import Measurement, Metric
from scaleprobe.kernels.schema import COLLECTIVE_KINDS, FIM_COLUMNS

from .hardware import HardwareCounters, hardware_parameters, last_level_cache

__all__ = ["IterationProfile", "iteration_measurement", "iteration_metrics"]

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


#: Unit and long name of each of FiM's columns (the schema's FIM_COLUMNS) and of the
#: other hardware parameters.
_FIM_DESCRIPTIONS = {
    "comp_time_iterations": (
        "s",
        "sum over iterations of the slowest rank's computation",
    ),
    "comp_time_iterations_mean": (
        "s",
        "sum over iterations of the mean rank's computation (the slowest's over it: "
        "the wait for the slowest of q)",
    ),
    "stages": ("1", "iterations timed"),
    "working_set": (
        "bytes",
        "bytes one rank's iterations read and write (the largest rank)",
    ),
    "llc_bytes": ("bytes", "last-level cache of the host (NaN if unknown)"),
    "cache_sharers": (
        "1",
        "most ranks computing at once on one host's last-level cache",
    ),
    **{
        name: (unit, _hardware_long_names(True)[name])
        for name, unit in (
            ("hw_utilisation", "1"),
            ("hw_total_cycles", "cycles"),
            ("hw_frequency", "Hz"),
            ("hw_stall_cycles", "cycles"),
            ("hw_counted", "1"),
        )
    },
}


def _fim_metrics() -> tuple:
    """FiM's columns in the schema's order, then the other hardware parameters."""
    names = [*FIM_COLUMNS, *(n for n in _FIM_DESCRIPTIONS if n not in FIM_COLUMNS)]
    return tuple(Metric(name, *_FIM_DESCRIPTIONS[name]) for name in names)


def _collective_metrics(kind: str) -> tuple:
    return (
        Metric(f"{kind}_time", "s", f"time of the {kind} calls (cost, no wait)"),
        Metric(f"{kind}_jobs", "1", f"data points moved by the {kind} calls"),
        Metric(f"{kind}_calls", "1", f"calls of {kind}"),
        Metric(f"{kind}_job_bytes", "bytes", f"bytes of one data point of {kind}"),
        Metric(f"{kind}_time", "s", f"time of the {kind} calls", per="iteration"),
        Metric(f"{kind}_jobs", "1", f"data points of {kind}", per="iteration"),
    )


def iteration_metrics(kinds) -> tuple:
    """What an iterative kernel whose collectives are ``kinds`` reports.

    The timed region's ``time``, the profile's sums (FiM's columns, the collectives'
    times, data points and calls), the cache and hardware parameters, and per
    iteration the computation and each collective; the communicator's summary comes
    on top (:class:`~scaleprobe.kernels.harness.KernelDeclaration`).

    Parameters
    ----------
    kinds : iterable of str
        Collective kinds of the profile (``"scatter"``, ``"bcast"``...).

    Returns
    -------
    tuple of Metric

    Examples
    --------
    >>> units = {m.name: m.unit for m in iteration_metrics(["bcast"])}
    >>> units["comp_time_iterations_mean"], units["bcast_job_bytes"]
    ('s', 'bytes')
    """
    return (
        Metric("time", "s", "time of the timed region (slowest rank)"),
        Metric("total_time", "s", "time from start-up to the end, set-up included"),
        *_fim_metrics(),
        Metric("comp_time", "s", "slowest rank's computation", per="iteration"),
        *(metric for kind in kinds for metric in _collective_metrics(kind)),
    )


class IterationProfile:
    """Times the computation and the collectives of each iteration of a kernel.

    Parameters
    ----------
    comm : InstrumentedComm
        The kernel's communicator.
    collectives : dict of str to float
        Collective kinds to report (``"scatter"``, ``"bcast"``, ``"gather"``...;
        the schema's :data:`~scaleprobe.kernels.schema.COLLECTIVE_KINDS`), in the
        order of the record, each with the bytes of one of its data points.
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
        unknown = sorted(set(collectives) - set(COLLECTIVE_KINDS))
        if unknown:
            raise ValueError(
                f"collective kinds {unknown} are not among the schema's "
                f"{list(COLLECTIVE_KINDS)}"
            )
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
            iterations timed), ``working_set``, ``llc_bytes`` and ``cache_sharers``
            (the most ranks of one host computing at once: its ranks, or its core
            slots when fewer) when every rank declared its working set,
            ``<kind>_time``, ``<kind>_jobs``, ``<kind>_calls``, and
            ``<kind>_job_bytes``) and the hardware parameters ``hw_frequency``,
            ``hw_utilisation`` (mean over ranks), ``hw_total_cycles``,
            ``hw_stall_cycles`` (sums over ranks), ``hw_counted``; ``units`` and
            ``long_names`` of the metrics (:func:`iteration_metrics`; the hardware
            ones say whether the cycles were counted or estimated).
        """
        every = self._gather()
        ranks_comp = np.array([np.asarray(r["comp"], dtype=float) for r in every])
        comp = ranks_comp.max(axis=0)
        count = len(self._comp)
        profile = {"comp_time": comp.tolist()}
        metrics = {
            "comp_time_iterations": float(comp.sum()) if count else 0.0,
            "comp_time_iterations_mean": float(ranks_comp.mean(axis=0).sum())
            if count
            else 0.0,
            "stages": count,
        }
        self._add_collectives(every, profile, metrics)
        metrics.update(_cache_metrics(every))
        hardware, counted = _hardware(every)
        metrics.update(hardware)
        declared = [m for m in iteration_metrics(self.kinds) if m.per == "point"]
        return {
            "profile": profile,
            "metrics": metrics,
            "units": {m.name: m.unit for m in declared if m.name in metrics},
            "long_names": {
                **{m.name: m.long_name for m in declared if m.name in metrics},
                **_hardware_long_names(counted),
            },
        }

    def _gather(self) -> list:
        """Every rank's computation, calls, events, working set, host and slots."""
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
        return self.comm.allgather(mine)

    def _add_collectives(self, every, profile, metrics) -> None:
        """Each collective kind's cost and data points, per iteration and summed."""
        count = len(self._comp)
        calls = np.array(self._calls, dtype=np.float64).reshape(-1, 5)
        before = np.max([r["calls"][:, 2] for r in every], axis=0)
        after = np.max([r["calls"][:, 3] for r in every], axis=0)
        cost = np.maximum(after - before, 0.0)
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


def _cache_metrics(every) -> dict:
    """Working set, last-level cache and its sharers, when every rank declared."""
    declared = [r["working_set"] for r in every]
    if any(math.isnan(b) for b in declared):
        return {}
    return {
        "working_set": float(max(declared)),
        "llc_bytes": last_level_cache(),
        "cache_sharers": _cache_sharers(every),
    }


def _hardware(every) -> tuple[dict, bool]:
    """FiM-Cal's hardware parameters over ranks, and whether cycles were counted."""
    parts = [hardware_parameters(r["events"]) for r in every]
    counted = all(p["counted"] for p in parts)
    return {
        "hw_frequency": float(np.mean([p["frequency"] for p in parts])),
        "hw_utilisation": float(np.mean([p["utilisation"] for p in parts])),
        "hw_total_cycles": float(sum(p["total_cycles"] for p in parts)),
        "hw_stall_cycles": float(sum(p["stall_cycles"] for p in parts))
        if counted
        else math.nan,
        "hw_counted": int(counted),
    }, counted


def _cache_sharers(every):
    """Most ranks of one host that compute at once: the host's ranks, or its core
    slots when fewer (oversubscribed ranks take turns on the cores)."""
    hosts = collections.Counter(r["host"] for r in every)
    slots = max(r["slots"] for r in every)
    ranks = max(hosts.values())
    return int(min(ranks, slots) if slots else ranks)


def iteration_measurement(
    timing: dict,
    *,
    elapsed: float,
    path: dict,
    summary: dict,
    metrics: dict | None = None,
    profiles: dict | None = None,
    reason: str = "",
    parameters: dict | None = None,
) -> Measurement:
    """The measurement of an iterative kernel (use it on rank 0).

    Parameters
    ----------
    timing : dict
        :meth:`IterationProfile.result`.
    elapsed : float
        Time of the timed region, s (the record's ``time``).
    path : dict
        :meth:`InstrumentedComm.critical_path_since
        <scaleprobe.kernels.comm.InstrumentedComm.critical_path_since>` over the
        timed region: its ``cp_*_time`` parts (summing to ``elapsed``) replace the
        whole run's.
    summary : dict
        :meth:`InstrumentedComm.summary
        <scaleprobe.kernels.comm.InstrumentedComm.summary>`; its ``time`` becomes
        ``total_time``.
    metrics : dict, optional
        The kernel's own metrics.
    profiles : dict, optional
        Profiles besides ``iteration``.
    reason : str, default=""
        Why the result is wrong; non-empty makes the record ``invalid``.
    parameters : dict, optional
        Parameters as they ran beyond the command line's.

    Returns
    -------
    Measurement
    """
    return Measurement(
        metrics={**path, **timing["metrics"], **(metrics or {}), "time": elapsed},
        profiles={"iteration": timing["profile"], **(profiles or {})},
        summary=summary,
        reason=reason,
        parameters=parameters or {},
        long_names=dict(timing["long_names"]),
    )
