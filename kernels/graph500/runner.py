"""One Graph500 run: generate, construct, search from NBFS roots, validate, measure.

The record's metrics are ``time`` (the mean BFS time), ``generation_time``,
``construction_time``, the TEPS statistics (``harmonic_mean_teps``...), ``nbfs``,
``validation_time``, ``graph_bytes``, per-BFS means of the searches' own traffic
(``bfs_bytes_sent``...) and the communicator's summary (its ``time`` as
``total_time``); one trial per BFS (``root``, ``time``, ``nedge``, ``teps``,
``valid``, ``validate_time``, ``levels``, its computation and traffic, and in
emulated mode its critical path) with per-level profiles (``frontier``,
``comp_time``, ``comm_time``, ``bytes_sent``, ``messages``, ``bottom_up``). A failed
validation makes the point ``invalid``, with the first failure as its reason.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from ..comm import SUMMARY_LONG_NAMES
from ..comm.threads import ThreadTeam
from ..harness import Measurement, Metric, Parameter
from ..schema import COLLECTIVE_LATENCY_COLUMNS, CRITICAL_PATH_COLUMNS
from ._frontier import LevelProfile
from .bfs_2d import bfs_2d
from .bfs_replicated import bfs_replicated_csc, bfs_replicated_csr
from .bfs_simple import bfs_simple
from .construction import build_1d, build_2d
from .departures import DEPARTURES
from .generator import edge_range, kronecker_edges
from .roots import connected_mask, select_roots
from .stats import format_block, statistics, teps_statistics
from .validate import validate_bfs

__all__ = [
    "METRICS",
    "PARAMETERS",
    "VARIANTS",
    "Graph500Config",
    "graph_bytes",
    "measure",
    "run_graph500",
]

VARIANTS = ("simple", "replicated-csr", "replicated-csc", "2d", *DEPARTURES)

#: The parameters of one run (the fields of :class:`Graph500Config`).
PARAMETERS = (
    Parameter("scale", "int", 14, minimum=1, maximum=40, help="log2 of the vertices"),
    Parameter("edgefactor", "int", 16, minimum=1, help="edges per vertex"),
    Parameter("variant", "choice", "simple", choices=VARIANTS, help="BFS algorithm"),
    Parameter("nbfs", "int", 64, minimum=1, help="BFS roots (trials)"),
    Parameter("seed", "int", 1, help="graph and root seed"),
    Parameter(
        "validate",
        "bool",
        True,
        help="check every BFS against the five Graph500 rules",
    ),
    Parameter(
        "direction_optimizing",
        "bool",
        True,
        help="replicated-csr and 2d switch between top-down and bottom-up levels",
    ),
)

_SEARCH = (
    # the search's traffic and its levels: per trial, and per level of a trial
    ("comp_time", "s", "computation of the search (mean over ranks)"),
    ("comm_time", "s", "communication of the search (mean over ranks)"),
    ("bytes_sent", "B", "bytes sent by all ranks in the search"),
    ("messages", "1", "messages sent by all ranks in the search"),
)

#: What a run reports besides the communicator's summary.
METRICS = (
    Metric("time", "s", "mean BFS time"),
    Metric("generation_time", "s", "Kronecker edge generation time"),
    Metric("construction_time", "s", "graph construction (kernel 1) time"),
    Metric(
        "harmonic_mean_teps",
        "edges/s",
        "harmonic mean of TEPS over the BFS trials",
    ),
    Metric("harmonic_stddev_teps", "edges/s", "harmonic standard deviation of TEPS"),
    Metric("median_teps", "edges/s", "median TEPS over the BFS trials"),
    Metric("nbfs", "1", "BFS trials"),
    Metric("bfs_bytes_sent", "B", "bytes sent per BFS (mean over trials)"),
    Metric("bfs_messages", "1", "messages per BFS (mean over trials)"),
    Metric("bfs_comm_time", "s", "communication per BFS (mean over trials)"),
    Metric("bfs_comp_time", "s", "computation per BFS (mean over trials)"),
    Metric("validation_time", "s", "time of all validations"),
    Metric("graph_bytes", "B", "bytes of the distributed graph"),
    Metric("peak_rss", "B", SUMMARY_LONG_NAMES["peak_rss"]),
    Metric("bytes_inter", "B", SUMMARY_LONG_NAMES["bytes_inter"]),
    Metric("root", "1", "root of the search", per="trial"),
    Metric("time", "s", "time of the search", per="trial"),
    Metric("nedge", "edges", "input edges inside the BFS component", per="trial"),
    Metric("teps", "edges/s", "traversed edges per second", per="trial"),
    Metric("levels", "1", "levels of the search", per="trial"),
    Metric("validate_time", "s", "validation time (-1: not validated)", per="trial"),
    Metric("valid", "1", "whether the search passed validation", per="trial"),
    *(Metric(n, u, w, per="trial") for n, u, w in _SEARCH),
    *(
        Metric(name, "s", SUMMARY_LONG_NAMES[name], per="trial")
        for name in (*CRITICAL_PATH_COLUMNS, *COLLECTIVE_LATENCY_COLUMNS)
    ),
    Metric("frontier", "vertices", "vertices expanded at the level", per="level"),
    Metric("bottom_up", "1", "1 if the level went bottom-up", per="level"),
    *(Metric(n, u, w, per="level") for n, u, w in _SEARCH),
)


@dataclass(frozen=True)
class Graph500Config:
    """Parameters of one run (:data:`PARAMETERS`, the command line's options)."""

    scale: int = 14
    edgefactor: int = 16
    variant: str = "simple"
    nbfs: int = 64
    seed: int = 1
    validate: bool = True
    direction_optimizing: bool = True
    threads: int = 1

    def check(self) -> None:
        """Raise ValueError on parameters outside their declared ranges."""
        if isinstance(self.threads, bool) or not (
            isinstance(self.threads, int) and self.threads >= 1
        ):
            raise ValueError(f"threads must be an integer >= 1, got {self.threads!r}")
        for parameter in PARAMETERS:
            problem = parameter.problem(getattr(self, parameter.name))
            if problem:
                raise ValueError(problem)


def _build(comm, config, source, target):
    if config.variant == "2d":
        return build_2d(
            comm, source, target, config.scale, transpose=config.direction_optimizing
        )
    return build_1d(
        comm, source, target, config.scale, transpose=config.variant == "replicated-csc"
    )


def _search(comm, config, graph, root, pred, profile, team=None):
    if config.variant in DEPARTURES:  # opt-in variants, kernels/graph500/departures.py
        return DEPARTURES[config.variant](comm, config, graph, root, pred, profile)
    if config.variant == "simple":
        bfs_simple(comm, graph, root, pred, profile, team)
    elif config.variant == "replicated-csr":
        bfs_replicated_csr(
            comm,
            graph,
            root,
            pred,
            profile,
            direction_optimizing=config.direction_optimizing,
            team=team,
        )
    elif config.variant == "replicated-csc":
        bfs_replicated_csc(comm, graph, root, pred, profile, team)
    else:
        bfs_2d(
            comm,
            graph,
            root,
            pred,
            profile,
            direction_optimizing=config.direction_optimizing,
            team=team,
        )


def _mean(values) -> float:
    values = list(values)
    return float(np.mean(values)) if values else math.nan


def _traversed_edges(comm, graph, pred) -> float:
    """Input edges (duplicates counted, self-loops not) inside the BFS component."""
    local = float(graph.degree[pred >= 0].sum())
    return comm.allreduce(local) / 2.0 if comm.size > 1 else local / 2.0


def _graph(comm, config):
    """Generate the edges and construct the graph (timed apart)."""
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
    return source, target, graph, generation_time, construction_time


def _trial(comm, config, graph, root, pred, edges, team=None) -> tuple[dict, str]:
    """One timed search from ``root``, its levels, critical path and validation;
    why the validation failed (``""`` if it did not)."""
    pred.fill(-1)
    profile = LevelProfile(comm)
    start = comm.sync()
    origin = comm.path()
    rounds = comm.collective_latency()
    _search(comm, config, graph, root, pred, profile, team)
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
        "validate_time": -1.0,
        "valid": None,
    }
    failure = ""
    if config.validate:
        start = comm.sync()
        result = validate_bfs(comm, pred, root, *edges)
        trial["validate_time"] = comm.elapsed_since(start)
        trial["valid"] = result.valid
        failure = "" if result.valid else f"BFS from root {root}: {result.reason}"
    trial["profiles"] = {"level": levels}
    return trial, failure


def _metrics(comm, graph, trials, generation_time, construction_time) -> dict:
    """The point's metrics from its trials (collective: sums the graph's bytes)."""
    times = [t["time"] for t in trials]
    teps = teps_statistics(times, [t["nedge"] for t in trials]) if trials else {}
    return {
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


def _print_block(stream, config, comm, metrics, trials, reason) -> None:
    """The reference's statistics block (rank 0), or its line for an invalid run."""
    if reason:
        print("No results printed for invalid run.", file=stream)
    elif trials:
        block = format_block(
            scale=config.scale,
            edgefactor=config.edgefactor,
            nbfs=len(trials),
            generation_time=metrics["generation_time"],
            ranks=comm.size,
            construction_time=metrics["construction_time"],
            times=[t["time"] for t in trials],
            nedges=[t["nedge"] for t in trials],
            validate_times=[t["validate_time"] for t in trials],
        )
        print(block, file=stream, flush=True)


def run_graph500(comm, config: Graph500Config, *, block_stream=None) -> Measurement:
    """Collective: run Graph500 kernels 1 and 2 and measure them (on all ranks).

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
    Measurement
        The point's metrics, one trial per search and the communicator's summary;
        ``invalid`` with the first failed validation (see :data:`METRICS`).
    """
    config.check()
    source, target, graph, generation_time, construction_time = _graph(comm, config)
    roots = select_roots(
        connected_mask(comm, graph.degree, 1 << config.scale), config.nbfs, config.seed
    )
    pred = np.full(graph.degree.size, -1, dtype=np.int64)
    with ThreadTeam(config.threads, comm) as team:
        if roots.size:  # warm-up search, as the reference does
            root = int(roots[0])
            _search(comm, config, graph, root, pred, LevelProfile(comm), team)
        searched = [
            _trial(comm, config, graph, root, pred, (source, target), team)
            for root in roots.tolist()
        ]
    trials = [trial for trial, _ in searched]
    reason = next((failure for _, failure in searched if failure), "")
    summary = comm.summary()
    metrics = _metrics(comm, graph, trials, generation_time, construction_time)
    if block_stream is not None and comm.rank == 0:
        _print_block(block_stream, config, comm, metrics, trials, reason)
    return Measurement(metrics=metrics, trials=trials, summary=summary, reason=reason)


def measure(comm, args) -> Measurement:
    """The kernel's work: a run with the command line's parameters (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        :data:`PARAMETERS` and ``graph500_output``.

    Returns
    -------
    Measurement
    """
    config = Graph500Config(
        **{p.name: getattr(args, p.name) for p in PARAMETERS},
        threads=getattr(args, "threads", 1),
    )
    return run_graph500(
        comm, config, block_stream=sys.stdout if args.graph500_output else None
    )


def graph_bytes(args, ranks: int) -> float:
    """Bytes of one rank's share of the graph: a row pointer per vertex and two
    entries per edge (the working-set estimate).

    Parameters
    ----------
    args : Arguments
        ``scale`` and ``edgefactor``.
    ranks : int

    Returns
    -------
    float
    """
    return 8.0 * ((1 << args.scale) + 2 * (args.edgefactor << args.scale)) / ranks
