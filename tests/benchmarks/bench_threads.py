"""Speedup of the threaded kernels at 1 and 2 threads per rank on this host.

One rank (``MPI.COMM_SELF``), the same work at every thread count, interleaved in
rounds so that drift and other processes' load hit both counts alike:

- ``graph500`` and ``graph500-csr``: the ``simple`` and the direction-optimizing
  ``replicated-csr`` BFS (levels over the rank's threads, Suzumura et al. 2011)
  from the same roots of a Kronecker graph;
- ``subgraph``: one colouring of the colour-coding count (neighbour sums over
  pieces of balanced neighbour entries, combinations over ranges of vertices;
  Chen et al. 2018) on an Erdos-Renyi graph.

Each is timed twice: on the wall clock (mode ``none``) and as the emulated clock
charges it (mode ``emulated``: a parallel region costs its longest thread's CPU
time, :mod:`scaleprobe.kernels.comm.threads`). Prints per kernel the median over
the rounds at every thread count and the speedups (1-thread median over the
2-thread one), measured in this one run.

Usage: python tests/benchmarks/bench_threads.py [--scale 17] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np
from mpi4py import MPI
from scaleprobe.kernels.comm import InstrumentedComm
from scaleprobe.kernels.comm.threads import ThreadTeam
from scaleprobe.kernels.graph500._frontier import LevelProfile
from scaleprobe.kernels.graph500.bfs_replicated import bfs_replicated_csr
from scaleprobe.kernels.graph500.bfs_simple import bfs_simple
from scaleprobe.kernels.graph500.construction import build_1d
from scaleprobe.kernels.graph500.generator import kronecker_edges
from scaleprobe.kernels.schema import LinkConfig
from scaleprobe.kernels.subgraph import Template, erdos_renyi
from scaleprobe.kernels.subgraph._dp import colorful_total
from scaleprobe.kernels.subgraph.counting import coloring
from scaleprobe.kernels.subgraph.partition import NeighbourOperator

THREADS = (1, 2)


def _comm(mode: str) -> InstrumentedComm:
    return InstrumentedComm(MPI.COMM_SELF, LinkConfig(mode=mode, core_slots=0))


SEARCHES = {
    "simple": lambda c, g, r, p, f, t: bfs_simple(c, g, r, p, f, t),
    "replicated-csr": lambda c, g, r, p, f, t: bfs_replicated_csr(
        c, g, r, p, f, team=t
    ),
}


def graph500_work(scale: int, searches: int, variant: str = "simple"):
    """A callable ``(comm, team) -> None`` running the BFS from fixed roots."""
    comm = _comm("none")
    edges = kronecker_edges(scale, 16, seed=2)
    graph = build_1d(comm, *edges, scale)
    roots = np.argsort(graph.degree)[::-1][:searches].tolist()
    pred = np.full(graph.degree.size, -1, dtype=np.int64)
    search = SEARCHES[variant]

    def work(comm, team):
        for root in roots:
            pred.fill(-1)
            search(comm, graph, int(root), pred, LevelProfile(comm), team)

    return work


def subgraph_work(vertices: int, edges: int, template: str):
    """A callable ``(comm, team) -> None`` counting one colouring."""
    graph = erdos_renyi(vertices, edges, seed=4)
    template = Template.by_name(template)
    operator = NeighbourOperator(graph.adjacency(np.float64))
    colors = coloring(1, 0, graph.n_vertices, template.k)

    def work(comm, team):
        colorful_total(
            template, colors, lambda _i, t: operator.apply_rows(t, team), team=team
        )

    return work


def timed(work, mode: str, threads: int) -> float:
    """Seconds of one run: wall (mode none) or charged (mode emulated)."""
    comm = _comm(mode)
    with ThreadTeam(threads, comm) as team:
        start = comm.sync()
        work(comm, team)
        return comm.elapsed_since(start)


def measure(kernels: dict, rounds: int) -> dict:
    """``{(kernel, mode, threads): [seconds per round]}``, rounds interleaved."""
    times = {}
    for kernel, work in kernels.items():
        for mode in ("none", "emulated"):
            timed(work, mode, 1)  # warm-up: caches, the pieces of the operators
            for _ in range(rounds):
                for threads in THREADS:
                    seconds = timed(work, mode, threads)
                    times.setdefault((kernel, mode, threads), []).append(seconds)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=17, help="Graph500 scale")
    parser.add_argument("--searches", type=int, default=4, help="BFS per round")
    parser.add_argument("--vertices", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=400_000)
    parser.add_argument("--template", default="u7-2")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    kernels = {
        "graph500": graph500_work(args.scale, args.searches),
        "graph500-csr": graph500_work(args.scale, args.searches, "replicated-csr"),
        "subgraph": subgraph_work(args.vertices, args.edges, args.template),
    }
    times = measure(kernels, args.rounds)
    print(
        f"host: {os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"medians of {args.rounds} rounds"
    )
    header = f"{'kernel':13} {'clock':9} " + " ".join(
        f"{f'{t} thr (s)':>11}" for t in THREADS
    )
    print(header + f" {'speedup':>8}")
    for kernel in kernels:
        for mode, label in (("none", "wall"), ("emulated", "emulated")):
            medians = [statistics.median(times[kernel, mode, t]) for t in THREADS]
            print(
                f"{kernel:13} {label:9} "
                + " ".join(f"{m:11.4f}" for m in medians)
                + f" {medians[0] / medians[-1]:8.2f}"
            )


if __name__ == "__main__":
    main()
