"""Distributed color coding (the seed's Algorithm 2) with three exchange modes.

The vertices are partitioned at random over the processes. For every sub-template, each
process needs the count tables of its owned vertices' remote neighbours:

``alltoall`` (the seed's Naive)
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
"""

from __future__ import annotations

import math
import resource

import numpy as np
from scaleprobe.kernels.comm import transfer_time
from scaleprobe.kernels.subgraph._dp import colorful_total
from scaleprobe.kernels.subgraph.counting import (
    coloring,
    estimate_scale,
    median_of_means,
)
from scaleprobe.kernels.subgraph.partition import LocalGraph, partition_vertices

__all__ = ["MODES", "exchanged_size", "intensity", "run_distributed"]

MODES = ("alltoall", "pipeline", "adaptive")


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

    def __init__(self, comm, local: LocalGraph, pipelined: dict, dtype, compress=True):
        self.comm = comm
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
            return self.local.local.apply_rows(table)
        if self.pipelined[index]:
            return self._pipeline(index, table)
        return self._alltoall(index, table)

    def _wire_dtype(self, table):
        """The narrowest type that carries every count of ``table`` exactly.

        Counts are non-negative integers (large floats are integers too), so they
        travel as unsigned integers when small enough: the seed's "compress and send".
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
        out = local.local.apply_rows(table)
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
        local.all_ghosts.add_to(out, recv)
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
        pending = post(1)
        before = comm.counters()
        out = local.local.apply_rows(table)
        previous_comp = comm.counters_since(before)["comp_time"]
        live = 0
        for step in range(1, size):
            _, source, send, recv, requests, transfer = pending
            before = comm.counters()
            comm.Waitall(requests)
            waited = comm.counters_since(before)["comm_time"]
            del send, requests
            pending = None
            upcoming = post(step + 1) if step + 1 < size else None
            live = max(
                live,
                recv.nbytes
                + (upcoming[2].nbytes + upcoming[3].nbytes if upcoming else 0),
            )
            before = comm.counters()
            local.ghosts[source].add_to(out, recv)
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
) -> dict:
    """Count a template on a graph partitioned over ``comm``; return the record.

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

    Returns
    -------
    dict
        The kernel record (``metrics``, ``trials``, ``profiles``, ``units``), the
        same on every rank.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    if task_size is not None and task_size < 1:
        raise ValueError(f"task_size must be a positive integer, got {task_size}")
    plan = plan_exchanges(template, mode, threshold)
    owner = partition_vertices(graph.n_vertices, comm.size, seed)
    local = LocalGraph.build(graph, owner, comm.rank, comm.size, dtype, task_size, seed)
    exchanger = _Exchanger(comm, local, plan, np.dtype(dtype), compress)
    scale = estimate_scale(template)
    estimates, times = [], []
    setup_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = comm.sync()
    phase = comm.counters()
    for iteration in range(iterations):
        began = comm.clock()
        colors = coloring(seed, iteration, graph.n_vertices, template.k)[local.vertices]
        part = colorful_total(
            template, colors, exchanger.neighbour_sum, dtype, observer=exchanger
        )
        estimates.append(comm.allreduce(part) * scale)
        times.append(comm.clock() - began)
    elapsed = comm.elapsed_since(start)
    summary = comm.summary()
    counted = comm.counters_since(phase)
    from scaleprobe.kernels.subgraph._record import assemble_record

    return assemble_record(
        comm,
        graph,
        template,
        local,
        exchanger,
        plan,
        summary,
        counted,
        estimates=np.asarray(estimates),
        times=np.asarray(times),
        elapsed=elapsed,
        setup_rss=setup_rss,
        settings={
            "mode": mode,
            "threshold": threshold,
            "task_size": task_size,
            "seed": seed,
            "groups": groups,
            "dtype": np.dtype(dtype).name,
            "compress": compress,
        },
        estimate=median_of_means(estimates, groups),
    )
