"""One Graph500 run: generate, construct, search from NBFS roots, validate, report."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..comm import SUMMARY_LONG_NAMES
from ._frontier import LevelProfile
from .bfs_2d import bfs_2d
from .bfs_replicated import bfs_replicated_csc, bfs_replicated_csr
from .bfs_simple import bfs_simple
from .construction import build_1d, build_2d
from .generator import edge_range, kronecker_edges
from .roots import connected_mask, select_roots
from .stats import format_block, statistics, teps_statistics
from .validate import validate_bfs

__all__ = ["VARIANTS", "Graph500Config", "run_graph500"]

VARIANTS = ("simple", "replicated-csr", "replicated-csc", "2d")

UNITS = {
    "time": "s",
    "generation_time": "s",
    "construction_time": "s",
    "validation_time": "s",
    "harmonic_mean_teps": "edges/s",
    "harmonic_stddev_teps": "edges/s",
    "median_teps": "edges/s",
    "teps": "edges/s",
    "nedge": "edges",
    "comp_time": "s",
    "comm_time": "s",
    "bytes_sent": "B",
    "messages": "1",
    "frontier": "vertices",
    "graph_bytes": "B",
    "peak_rss": "B",
    "levels": "1",
    "root": "1",
    "validate_time": "s",
    "bfs_bytes_sent": "B",
    "bfs_messages": "1",
    "bfs_comm_time": "s",
    "bfs_comp_time": "s",
}
#: The summary's modelled parts, named as before the long names moved to the comm.
PATH_LONG_NAMES = {
    key: SUMMARY_LONG_NAMES[key]
    for key in (
        "cp_comp_time",
        "cp_latency_time",
        "cp_bandwidth_time",
        "cp_intra_time",
        "coll_tree_latency_time",
        "coll_linear_latency_time",
        "wait_time",
        "SW",
        "R",
        "SWR",
    )
}
LONG_NAMES = {
    "time": "mean BFS time",
    "teps": "traversed edges per second",
    "harmonic_mean_teps": "harmonic mean of TEPS over the BFS trials",
    "nedge": "input edges inside the BFS component",
    "generation_time": "Kronecker edge generation time",
    "construction_time": "graph construction (kernel 1) time",
    "frontier": "vertices expanded at the level",
}


@dataclass(frozen=True)
class Graph500Config:
    """Parameters of one run (the command line's options)."""

    scale: int = 14
    edgefactor: int = 16
    variant: str = "simple"
    nbfs: int = 64
    seed: int = 1
    validate: bool = True
    direction_optimizing: bool = True

    def check(self) -> None:
        """Raise ValueError on parameters outside their allowed ranges."""
        if self.variant not in VARIANTS:
            raise ValueError(
                f"variant must be one of {', '.join(VARIANTS)}; got {self.variant!r}"
            )
        if not 1 <= self.scale <= 40:
            raise ValueError(f"scale must be in [1, 40], got {self.scale}")
        if self.edgefactor < 1:
            raise ValueError(f"edgefactor must be positive, got {self.edgefactor}")
        if self.nbfs < 1:
            raise ValueError(f"nbfs must be positive, got {self.nbfs}")


def _build(comm, config, source, target):
    if config.variant == "2d":
        return build_2d(
            comm, source, target, config.scale, transpose=config.direction_optimizing
        )
    return build_1d(
        comm, source, target, config.scale, transpose=config.variant == "replicated-csc"
    )


def _search(comm, config, graph, root, pred, profile):
    if config.variant == "simple":
        bfs_simple(comm, graph, root, pred, profile)
    elif config.variant == "replicated-csr":
        bfs_replicated_csr(
            comm,
            graph,
            root,
            pred,
            profile,
            direction_optimizing=config.direction_optimizing,
        )
    elif config.variant == "replicated-csc":
        bfs_replicated_csc(comm, graph, root, pred, profile)
    else:
        bfs_2d(
            comm,
            graph,
            root,
            pred,
            profile,
            direction_optimizing=config.direction_optimizing,
        )


def _mean(values) -> float:
    values = list(values)
    return float(np.mean(values)) if values else math.nan


def _traversed_edges(comm, graph, pred) -> float:
    """Input edges (duplicates counted, self-loops not) inside the BFS component."""
    local = float(graph.degree[pred >= 0].sum())
    return comm.allreduce(local) / 2.0 if comm.size > 1 else local / 2.0


def run_graph500(comm, config: Graph500Config, *, block_stream=None) -> dict:
    """Collective: run Graph500 kernels 1 and 2 and return the record (on all ranks).

    Parameters
    ----------
    comm : InstrumentedComm
        The world communicator.
    config : Graph500Config
        The run's parameters.
    block_stream : file-like, optional
        If given, rank 0 writes the reference statistics block there.

    Returns
    -------
    dict
        The kernel record (see :mod:`scaleprobe.kernels.record`).
    """
    config.check()
    nvertices = 1 << config.scale
    nedges = config.edgefactor << config.scale
    start = comm.sync()
    first, last = edge_range(comm.rank, comm.size, nedges)
    source, target = kronecker_edges(
        config.scale, config.edgefactor, config.seed, first, last
    )
    generation_time = comm.elapsed_since(start)

    start = comm.sync()
    graph = _build(comm, config, source, target)
    construction_time = comm.elapsed_since(start)

    roots = select_roots(
        connected_mask(comm, graph.degree, nvertices), config.nbfs, config.seed
    )
    nlocal = graph.degree.size
    pred = np.full(nlocal, -1, dtype=np.int64)
    if roots.size:  # warm-up search, as the reference does
        _search(comm, config, graph, int(roots[0]), pred, LevelProfile(comm))
    trials, reason = [], ""
    for root in roots.tolist():
        pred.fill(-1)
        profile = LevelProfile(comm)
        start = comm.sync()
        origin = comm.path()
        rounds = comm.collective_latency()
        _search(comm, config, graph, root, pred, profile)
        elapsed = comm.elapsed_since(start)
        path = comm.critical_path_since(origin)
        if path:  # emulated: the collectives' share of the latency, by shape
            after = comm.collective_latency()
            path.update({k: after[k] - rounds[k] for k in after})
        levels = profile.result()
        nedge = _traversed_edges(comm, graph, pred)
        trial = {
            "root": root,
            "time": elapsed,
            "nedge": nedge,
            "teps": nedge / elapsed if elapsed > 0 else math.nan,
            "levels": len(levels["frontier"]),
            "comp_time": float(sum(levels["comp_time"])),
            "comm_time": float(sum(levels["comm_time"])),
            "bytes_sent": int(sum(levels["bytes_sent"])),
            "messages": int(sum(levels["messages"])),
            **path,
        }
        if config.validate:
            start = comm.sync()
            result = validate_bfs(comm, pred, root, source, target)
            trial["validate_time"] = comm.elapsed_since(start)
            trial["valid"] = result.valid
            if not result.valid and not reason:
                reason = f"BFS from root {root}: {result.reason}"
        else:
            trial["validate_time"] = -1.0
            trial["valid"] = None
        trial["profiles"] = {"level": levels}
        trials.append(trial)

    times = [t["time"] for t in trials]
    nedge_list = [t["nedge"] for t in trials]
    teps = teps_statistics(times, nedge_list) if trials else {}
    summary = comm.summary()
    metrics = {f"total_{k}" if k == "time" else k: v for k, v in summary.items()}
    metrics.update(
        {
            "time": statistics(times)["mean"] if trials else math.nan,
            "generation_time": generation_time,
            "construction_time": construction_time,
            "harmonic_mean_teps": teps.get("harmonic_mean", math.nan),
            "harmonic_stddev_teps": teps.get("harmonic_stddev", math.nan),
            "median_teps": teps.get("median", math.nan),
            "nbfs": len(trials),
            # per-BFS means of the search's own traffic (the summary counts every phase)
            "bfs_bytes_sent": _mean(t["bytes_sent"] for t in trials),
            "bfs_messages": _mean(t["messages"] for t in trials),
            "bfs_comm_time": _mean(t["comm_time"] for t in trials),
            "bfs_comp_time": _mean(t["comp_time"] for t in trials),
            "validation_time": float(sum(max(t["validate_time"], 0.0) for t in trials)),
            "graph_bytes": comm.allreduce(int(graph.nbytes))
            if comm.size > 1
            else int(graph.nbytes),
        }
    )
    record = {
        "kernel": "graph500",
        "status": "invalid" if reason else "ok",
        "reason": reason,
        "params": {
            "scale": config.scale,
            "edgefactor": config.edgefactor,
            "variant": config.variant,
            "nbfs": config.nbfs,
            "seed": config.seed,
            "validate": config.validate,
            "ranks": comm.size,
            "direction_optimizing": config.direction_optimizing,
        },
        "metrics": metrics,
        "trials": trials,
        "link": comm.link_record().to_dict(),
        "units": {
            **UNITS,
            **dict.fromkeys(PATH_LONG_NAMES, "s"),
            "total_time": "s",
            "wall_time": "s",
            "bytes_inter": "B",
            "comp_time_max": "s",
            "comm_time_max": "s",
        },
        "long_names": {**LONG_NAMES, **PATH_LONG_NAMES},
    }
    if block_stream is not None and comm.rank == 0:
        if reason:
            print("No results printed for invalid run.", file=block_stream)
        elif trials:
            block = format_block(
                scale=config.scale,
                edgefactor=config.edgefactor,
                nbfs=len(trials),
                generation_time=generation_time,
                ranks=comm.size,
                construction_time=construction_time,
                times=times,
                nedges=nedge_list,
                validate_times=[t["validate_time"] for t in trials],
            )
            print(block, file=block_stream, flush=True)
    return record
