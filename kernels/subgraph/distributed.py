"""Distributed color coding (Algorithm 2 of Chen et al. 2018) with three exchange modes.

The vertices are partitioned at random over the processes. For every sub-template, each
process needs the count tables of its owned vertices' remote neighbours:

``alltoall`` (the paper's Naive)
    One ``Alltoallv`` per sub-template brings every ghost row at once, then one
    neighbour sum over all of them.
``pipeline`` (Adaptive-Group)
    The all-to-all is cut into ``W = P - 1`` ring steps: at step ``w`` process ``p``
    sends to ``p + w`` and receives from ``p - w``. Step ``w + 1``'s ``Isend``/``Irecv``
    are posted before step ``w``'s rows are summed, so transfers run while the
    process computes (the owned-neighbour sum covers step 1). Only two steps' buffers
    are alive at a time, which lowers the peak memory.
``adaptive``
    Per sub-template, pipeline if its computation intensity (combination work per
    exchanged table entry, ``C(k,|T_i|) C(|T_i|,|T_i'|) / C(k, |exchanged part|)``)
    reaches a threshold, all-to-all otherwise.

Every mode sums exactly the same products, so with float64 tables (exact integer
counts below 2**53) all modes and process counts give the same estimate for a seed.

:func:`count` is the kernel's work: it loads the graph and the template, runs
:func:`run_distributed` and measures it (:data:`METRICS` declares what).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import math
import resource

import numpy as np
from scaleprobe.kernels.comm import transfer_time
from scaleprobe.kernels.comm.threads import ThreadTeam
from scaleprobe.kernels.harness import Measurement, Metric
from scaleprobe.kernels.subgraph._dp import colorful_total, computed_subtemplates
from scaleprobe.kernels.subgraph.counting import (
    coloring,
    estimate_scale,
    iterations_for,
    median_of_means,
)
from scaleprobe.kernels.subgraph.graphs import load_graph
from scaleprobe.kernels.subgraph.partition import LocalGraph, partition_vertices
from scaleprobe.kernels.subgraph.template import Template

__all__ = [
    "METRICS",
    "MODES",
    "count",
    "exchanged_size",
    "intensity",
    "map_large_blocks",
    "run_distributed",
]

MODES = ("alltoall", "pipeline", "adaptive")

_EACH = "1"  # unit of a count or a ratio

#: What a count reports besides the communicator's summary.
METRICS = (
    Metric(
        "estimate",
        _EACH,
        "estimated number of non-induced embeddings (median of means)",
    ),
    Metric("estimate_mean", _EACH, "mean of the colourings' estimates"),
    Metric("estimate_std", _EACH, "standard deviation of the colourings' estimates"),
    Metric("iterations", _EACH, "colourings counted"),
    Metric("time", "s", "completion time of the counting iterations"),
    Metric("time_per_iteration", "s", "time of one colouring"),
    Metric("ranks", _EACH, "processes"),
    Metric("k", _EACH, "vertices of the template"),
    Metric("n_vertices", _EACH, "vertices of the graph"),
    Metric("n_edges", _EACH, "edges of the graph"),
    Metric("automorphisms", _EACH, "automorphisms of the template"),
    Metric(
        "memory_complexity",
        _EACH,
        "table entries of the sub-templates (Table 3 of Chen et al. 2018)",
    ),
    Metric(
        "computation_complexity",
        _EACH,
        "combinations of the sub-templates (Table 3 of Chen et al. 2018)",
    ),
    Metric("computation_intensity", _EACH, "combinations per table entry"),
    Metric("threshold", _EACH, "intensity from which adaptive pipelines"),
    Metric("pipelined_subtemplates", _EACH, "sub-templates exchanged in a ring"),
    Metric("subtemplates", _EACH, "sub-templates computed"),
    Metric("exchange_peak_bytes", "bytes", "largest live exchange buffers of one rank"),
    Metric("setup_rss", "bytes", "peak resident size before counting, largest rank"),
    Metric(
        "counting_rss",
        "bytes",
        "peak resident size growth while counting, largest rank",
    ),
    Metric("task_size", _EACH, "neighbour-list task size (0: off)"),
    Metric("tasks", _EACH, "neighbour-list tasks over all ranks"),
    Metric("max_task", _EACH, "largest neighbour-list task"),
    Metric(
        "modelled_overlap",
        _EACH,
        "modelled transfer time overlapped by computation (Eq. 14)",
    ),
    Metric("iteration_estimate", _EACH, "estimate of one colouring", per="trial"),
    Metric("iteration_time", "s", "time of one colouring", per="trial"),
    *(
        Metric(name, _EACH, what, per="subtemplate")
        for name, what in (
            ("subtemplate_index", "index of the sub-template"),
            ("subtemplate_size", "vertices of the sub-template"),
            ("active_size", "vertices of its active part"),
            ("exchanged_size", "vertices of the part summed over neighbours"),
            ("intensity", "combinations per exchanged table entry"),
            ("pipelined", "1 if exchanged in a ring"),
        )
    ),
    Metric("comp_time", "s", "computation (mean over ranks)", per="subtemplate"),
    Metric("comm_time", "s", "communication (mean over ranks)", per="subtemplate"),
    Metric("bytes_sent", "bytes", "bytes sent by all ranks", per="subtemplate"),
    Metric(
        "exchange_bytes", "bytes", "largest live exchange buffers", per="subtemplate"
    ),
    Metric("peak_rss", "bytes", "peak resident size of the rank", per="rank"),
    Metric("counting_rss", "bytes", "resident size growth while counting", per="rank"),
    Metric("comp_time", "s", "computation of the rank", per="rank"),
    Metric("comm_time", "s", "communication of the rank", per="rank"),
    Metric("comp_time", "s", "computation of a ring step", per="step"),
    Metric("wait_time", "s", "wait for a ring step's data", per="step"),
    Metric(
        "modelled_transfer_time",
        "s",
        "modelled transfer time of a pipeline ring step",
        per="step",
    ),
    Metric(
        "modelled_overlap", _EACH, "share of the step's transfer overlapped", per="step"
    ),
)


def exchanged_size(template, index: int) -> int:
    """Size of the sub-template whose table is summed over neighbours at ``index``."""
    subs = template.subtemplates
    sub = subs[index]
    if index == len(subs) - 1:
        active, passive = subs[sub.active].size, subs[sub.passive].size
        return (
            active
            if math.comb(template.k, active) < math.comb(template.k, passive)
            else passive
        )
    return subs[sub.passive].size


def intensity(template, index: int) -> float:
    """Combination work per exchanged table entry of sub-template ``index``.

    ``C(k, |T_i|) C(|T_i|, |T_i'|) / C(k, |exchanged part|)``.
    """
    k = template.k
    sub = template.subtemplates[index]
    active = template.subtemplates[sub.active].size
    work = math.comb(k, sub.size) * math.comb(sub.size, active)
    return work / math.comb(k, exchanged_size(template, index))


class _Exchanger:
    """The neighbour sum of the dynamic programme, with communication and timing."""

    def __init__(
        self, comm, local: LocalGraph, pipelined: dict, dtype, compress=True, team=None
    ):
        self.comm = comm
        self.team = team
        self.compress = compress
        self.local = local
        self.pipelined = pipelined
        self.dtype = dtype
        size = comm.size
        n_sub = len(pipelined)
        self.sub = {
            key: np.zeros(n_sub)
            for key in ("comp_time", "comm_time", "bytes_sent", "exchange_bytes")
        }
        steps = max(size - 1, 1)
        self.step = {
            key: np.zeros(steps)
            for key in ("comp_time", "wait_time", "transfer_time", "overlapped")
        }
        self._snapshot = None
        self._inter = {q: (q // comm.ppn) != comm.node for q in range(size)}

    # observer protocol of colorful_total
    def start(self, index):
        self._snapshot = self.comm.counters()

    def stop(self, index):
        delta = self.comm.counters_since(self._snapshot)
        for key in ("comp_time", "comm_time", "bytes_sent"):
            self.sub[key][index] += delta[key]

    def neighbour_sum(self, index: int, table: np.ndarray) -> np.ndarray:
        if self.comm.size == 1:
            return self.local.local.apply_rows(table, self.team)
        if self.pipelined[index]:
            return self._pipeline(index, table)
        return self._alltoall(index, table)

    def _wire_dtype(self, table):
        """The narrowest type that carries every count of ``table`` exactly.

        Counts are non-negative integers (large floats are integers too), so they
        travel as unsigned integers when small enough: the paper's "compress and send".
        One small allreduce agrees on the type so that receive sizes are known.
        """
        from mpi4py import MPI

        if not self.compress:
            return self.dtype
        largest = self.comm.allreduce(
            float(table.max()) if table.size else 0.0, op=MPI.MAX
        )
        for candidate in (np.uint8, np.uint16, np.uint32):
            if largest <= np.iinfo(candidate).max:
                return np.dtype(candidate)
        return self.dtype

    def _alltoall(self, index, table):
        comm, local = self.comm, self.local
        width = table.shape[0]
        others = [q for q in range(comm.size) if q != comm.rank]
        out = local.local.apply_rows(table, self.team)
        send_counts = np.zeros(comm.size, dtype=np.int64)
        recv_counts = np.zeros(comm.size, dtype=np.int64)
        for q in others:
            send_counts[q] = len(local.send_index[q]) * width
            recv_counts[q] = local.recv_count[q] * width
        order = np.concatenate([local.send_index[q] for q in others])
        wire = self._wire_dtype(table)
        send = table.T[order].astype(wire)
        recv = np.empty((int(recv_counts.sum()) // max(width, 1), width), dtype=wire)
        comm.Alltoallv([send, send_counts], [recv, recv_counts])
        self.sub["exchange_bytes"][index] = max(
            self.sub["exchange_bytes"][index], send.nbytes + recv.nbytes
        )
        del send
        local.all_ghosts.add_to(out, recv, self.team)
        return out

    def _pipeline(self, index, table):
        comm, local = self.comm, self.local
        rank, size = comm.rank, comm.size
        width = table.shape[0]
        link = comm.link
        wire = self._wire_dtype(table)

        def post(step):
            dest, source = (rank + step) % size, (rank - step) % size
            send = table.T[local.send_index[dest]].astype(wire)
            recv = np.empty((local.recv_count[source], width), dtype=wire)
            requests = [
                comm.Irecv(recv, source=source, tag=step),
                comm.Isend(send, dest, tag=step),
            ]
            transfer = transfer_time(link, recv.nbytes, self._inter[source], comm.ppn)
            return step, source, send, recv, requests, transfer

        # Step w + 1 is posted once step w has arrived and before step w is summed,
        # so its transfer runs during that computation while at most one step's
        # buffers wait in memory besides the one being summed.
        # With threads, the calling thread is the communication thread: it waits
        # for step w + 1's transfer while the team sums step w (Chen et al. 2018).
        threaded = self.team is not None and self.team.threads > 1
        pending = post(1)
        before = comm.counters()
        out = local.local.apply_rows(table, self.team)
        previous_comp = comm.counters_since(before)["comp_time"]
        live = 0
        arrived = 0.0  # wait of a step that arrived during the previous summing
        for step in range(1, size):
            _, source, send, recv, requests, transfer = pending
            before = comm.counters()
            if requests:
                comm.Waitall(requests)
            waited = comm.counters_since(before)["comm_time"] + arrived
            del send, requests
            pending = None
            upcoming = post(step + 1) if step + 1 < size else None
            live = max(
                live,
                recv.nbytes
                + (upcoming[2].nbytes + upcoming[3].nbytes if upcoming else 0),
            )
            during, arrived = None, 0.0
            if threaded and upcoming is not None:
                during = _completer(comm, upcoming[4])
            before = comm.counters()
            local.ghosts[source].add_to(out, recv, self.team, during)
            if during is not None:
                arrived = during.waited
            comp = comm.counters_since(before)["comp_time"]
            del recv
            slot = step - 1
            self.step["comp_time"][slot] += comp
            self.step["wait_time"][slot] += waited
            self.step["transfer_time"][slot] += transfer
            self.step["overlapped"][slot] += min(previous_comp, transfer)
            previous_comp = comp
            pending = upcoming
        self.sub["exchange_bytes"][index] = max(self.sub["exchange_bytes"][index], live)
        return out


def _completer(comm, requests):
    """A callable that completes ``requests`` (emptying the list) and keeps the
    communication seconds it took in its ``waited``."""

    def complete():
        before = comm.counters()
        comm.Waitall(requests)
        complete.waited = comm.counters_since(before)["comm_time"]
        requests.clear()

    complete.waited = 0.0
    return complete


def plan_exchanges(template, mode: str, threshold: float) -> dict:
    """Which sub-templates are pipelined: ``{index: bool}`` over computed ones."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    plan = {}
    for index, sub in enumerate(template.subtemplates):
        if sub.active is None:
            plan[index] = False
        elif mode == "adaptive":
            plan[index] = intensity(template, index) >= threshold
        else:
            plan[index] = mode == "pipeline"
    return plan


#: glibc's ``mallopt`` parameter of the mmap threshold.
_M_MMAP_THRESHOLD = -3


def map_large_blocks(threshold: int = 1 << 20) -> bool:
    """Serve blocks of at least ``threshold`` bytes by ``mmap`` (glibc only).

    glibc raises its mmap threshold dynamically (up to 32 MiB) once large blocks are
    freed, after which blocks of a few megabytes come from the heap and stay resident
    after ``free`` when the heap is fragmented. The peak resident size then depends
    on the allocation history rather than on how much data was alive at once, which
    is what the kernel's ``peak_rss`` is meant to compare between exchange modes.
    Fixing the threshold serves every large block with ``mmap`` and returns it on
    ``free``. Process-wide; the kernel calls it once at start.

    Parameters
    ----------
    threshold : int, default=2**20

    Returns
    -------
    bool
        Whether the allocator accepted the setting (False off glibc).
    """
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, int(threshold)) == 1


def run_distributed(
    comm,
    graph,
    template,
    *,
    iterations: int = 10,
    seed: int = 0,
    mode: str = "adaptive",
    threshold: float = 20.0,
    task_size: int | None = None,
    dtype=np.float64,
    groups: int = 3,
    compress: bool = True,
    threads: int = 1,
) -> Measurement:
    """Count a template on a graph partitioned over ``comm`` and measure it.

    Collective over ``comm`` (an :class:`~scaleprobe.kernels.comm.InstrumentedComm`).

    Parameters
    ----------
    comm : InstrumentedComm
    graph : Graph
        The whole graph, identical on every process.
    template : Template
    iterations : int, default=10
    seed : int, default=0
        Seeds the colourings, the vertex partition and the task shuffle.
    mode : {"alltoall", "pipeline", "adaptive"}, default="adaptive"
    threshold : float, default=20.0
        Computation intensity from which ``adaptive`` pipelines a sub-template.
    task_size : int, optional
        Neighbour-list partitioning task size (Algorithm 4); off by default.
    dtype : numpy dtype, default=numpy.float64
    groups : int, default=3
        Groups of the median-of-means estimate.
    compress : bool, default=True
        Send counts as the narrowest unsigned integer type that holds them exactly.
    threads : int, default=1
        Threads of the rank: the neighbour sums (neighbour lists cut into pieces of
        balanced entries) and the combinations (ranges of vertices) run over them,
        and a pipelined step's transfer is waited for on the calling thread while
        they sum the previous step. The counts are the same for any number.

    Returns
    -------
    Measurement
        The metrics, trials and profiles of :func:`subgraph_metrics` and the
        communicator's summary, the same on every rank.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    if task_size is not None and task_size < 1:
        raise ValueError(f"task_size must be a positive integer, got {task_size}")
    plan = plan_exchanges(template, mode, threshold)
    owner = partition_vertices(graph.n_vertices, comm.size, seed)
    local = LocalGraph.build(graph, owner, comm.rank, comm.size, dtype, task_size, seed)
    with ThreadTeam(threads, comm) as team:
        exchanger = _Exchanger(comm, local, plan, np.dtype(dtype), compress, team)
        run = _iterate(comm, graph, template, local, exchanger, iterations, seed, dtype)
    run = dataclasses.replace(
        run,
        estimate=median_of_means(run.estimates, groups),
        threshold=threshold,
        task_size=task_size,
    )
    return _measurement(comm, graph, template, local, exchanger, plan, run)


def _iterate(comm, graph, template, local, exchanger, iterations, seed, dtype):
    """The counting iterations (collective); the estimate is left to the caller."""
    scale = estimate_scale(template)
    estimates, times = [], []
    setup_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = comm.sync()
    phase = comm.counters()
    for iteration in range(iterations):
        began = comm.clock()
        colors = coloring(seed, iteration, graph.n_vertices, template.k)[local.vertices]
        part = colorful_total(
            template,
            colors,
            exchanger.neighbour_sum,
            dtype,
            observer=exchanger,
            team=exchanger.team,
        )
        estimates.append(comm.allreduce(part) * scale)
        times.append(comm.clock() - began)
    return _Run(
        elapsed=comm.elapsed_since(start),
        summary=comm.summary(),
        counted=comm.counters_since(phase),
        setup_rss=setup_rss,
        estimates=np.asarray(estimates),
        times=np.asarray(times),
        estimate=math.nan,
        threshold=math.nan,
        task_size=None,
    )


@dataclasses.dataclass(frozen=True)
class _Run:
    """What the counting iterations leave for the measurement."""

    elapsed: float
    summary: dict
    counted: dict
    setup_rss: int
    estimates: np.ndarray
    times: np.ndarray
    estimate: float
    threshold: float
    task_size: int | None


def _rank_stats(comm, local, exchanger, run) -> tuple[list, dict, dict]:
    """Every rank's statistics (collective), and the per-sub-template and per-step
    arrays of all ranks."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tasks = local.local.n_tasks + sum(g.n_tasks for g in local.ghosts.values())
    mine = {
        "sub": exchanger.sub,
        "step": exchanger.step,
        "rss": rss,
        "setup_rss": run.setup_rss,
        "comp": run.counted["comp_time"],
        "comm": run.counted["comm_time"],
        "tasks": tasks,
        "max_task": max(
            [local.local.max_task] + [g.max_task for g in local.ghosts.values()]
        ),
    }
    everyone = comm.allgather(mine)
    sub = {key: np.array([r["sub"][key] for r in everyone]) for key in exchanger.sub}
    step = {key: np.array([r["step"][key] for r in everyone]) for key in exchanger.step}
    return everyone, sub, step


def _point_metrics(comm, graph, template, plan, run, everyone, sub, computed):
    """The point's metrics: the estimate, the run's times and memory, the template."""
    memory, computation = template.complexity()
    return {
        "estimate": run.estimate,
        "estimate_mean": float(np.mean(run.estimates)),
        "estimate_std": float(np.std(run.estimates)),
        "iterations": len(run.estimates),
        "time": run.elapsed,
        "time_per_iteration": run.elapsed / len(run.estimates),
        "comp_time": float(np.mean([r["comp"] for r in everyone])),
        "comm_time": float(np.mean([r["comm"] for r in everyone])),
        "comp_time_max": float(np.max([r["comp"] for r in everyone])),
        "comm_time_max": float(np.max([r["comm"] for r in everyone])),
        "ranks": comm.size,
        "k": template.k,
        "n_vertices": graph.n_vertices,
        "n_edges": graph.n_edges,
        "automorphisms": template.automorphisms(),
        "memory_complexity": memory,
        "computation_complexity": computation,
        "computation_intensity": computation / memory if memory else 0.0,
        "pipelined_subtemplates": int(sum(plan[i] for i in computed)),
        "subtemplates": len(computed),
        "exchange_peak_bytes": float(sub["exchange_bytes"].max()),
        "setup_rss": int(max(r["setup_rss"] for r in everyone)),
        "counting_rss": int(max(r["rss"] - r["setup_rss"] for r in everyone)),
        "tasks": int(sum(r["tasks"] for r in everyone)),
        "max_task": int(max(r["max_task"] for r in everyone)),
    }


def _profiles(comm, template, plan, everyone, sub, step, computed) -> dict:
    """Per sub-template, per rank and (with more than one rank) per ring step."""
    subs = template.subtemplates
    profiles = {
        "subtemplate": {
            "subtemplate_index": computed,
            "subtemplate_size": [subs[i].size for i in computed],
            "active_size": [subs[subs[i].active].size for i in computed],
            "exchanged_size": [exchanged_size(template, i) for i in computed],
            "intensity": [intensity(template, i) for i in computed],
            "pipelined": [int(plan[i]) for i in computed],
            "comp_time": sub["comp_time"].mean(axis=0)[computed],
            "comm_time": sub["comm_time"].mean(axis=0)[computed],
            "bytes_sent": sub["bytes_sent"].sum(axis=0)[computed],
            "exchange_bytes": sub["exchange_bytes"].max(axis=0)[computed],
        },
        "rank": {
            "peak_rss": [r["rss"] for r in everyone],
            "counting_rss": [r["rss"] - r["setup_rss"] for r in everyone],
            "comp_time": [r["comp"] for r in everyone],
            "comm_time": [r["comm"] for r in everyone],
        },
    }
    if comm.size > 1 and step["transfer_time"].sum() > 0:
        profiles["step"] = {
            "comp_time": step["comp_time"].mean(axis=0),
            "wait_time": step["wait_time"].mean(axis=0),
        }
        # Transfer times come from the link model, not from the network: named as
        # modelled, and left out where no model acts (mode none).
        if comm.mode != "none":
            with np.errstate(invalid="ignore", divide="ignore"):
                rho = step["overlapped"].sum(axis=0) / step["transfer_time"].sum(axis=0)
            profiles["step"].update(
                modelled_transfer_time=step["transfer_time"].mean(axis=0),
                modelled_overlap=np.where(np.isfinite(rho), rho, 0.0),
            )
    return profiles


def _measurement(comm, graph, template, local, exchanger, plan, run):
    """The measurement of a count (collective: gathers every rank's statistics)."""
    everyone, sub, step = _rank_stats(comm, local, exchanger, run)
    computed = [
        i
        for i in computed_subtemplates(template)
        if template.subtemplates[i].active is not None
    ]
    metrics = _point_metrics(comm, graph, template, plan, run, everyone, sub, computed)
    metrics["threshold"] = run.threshold
    metrics["task_size"] = run.task_size or 0
    transfer = step["transfer_time"].sum()
    if comm.mode != "none":
        metrics["modelled_overlap"] = (
            float(step["overlapped"].sum() / transfer) if transfer > 0 else 0.0
        )
    trials = ()
    if len(run.estimates) <= 1000:
        trials = [
            {"iteration_estimate": float(e), "iteration_time": float(t)}
            for e, t in zip(run.estimates, run.times, strict=True)
        ]
    return Measurement(
        metrics=metrics,
        trials=trials,
        profiles=_profiles(comm, template, plan, everyone, sub, step, computed),
        summary=run.summary,
    )


def count(comm, args) -> Measurement:
    """The kernel's work: load the graph and the template, count and measure.

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        The kernel's parameters (``iterations`` 0 derives them from ``epsilon``
        and ``delta``; ``task_size`` 0 is off).

    Returns
    -------
    Measurement
        With the iterations, template and graph as they ran.
    """
    map_large_blocks()
    template = Template.by_name(args.template)
    graph = load_graph(args.graph)
    iterations = args.iterations or iterations_for(template.k, args.epsilon, args.delta)
    measured = run_distributed(
        comm,
        graph,
        template,
        iterations=iterations,
        seed=args.seed,
        mode=args.mode,
        threshold=args.threshold,
        task_size=args.task_size or None,
        dtype=np.dtype(args.precision),
        groups=args.groups,
        compress=args.compress,
        threads=getattr(args, "threads", 1),
    )
    ran = {"iterations": iterations, "template": template.name, "graph": graph.name}
    return dataclasses.replace(measured, parameters=ran)
