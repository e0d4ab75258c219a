"""Peak memory per rank of subgraph counting: all-to-all, pipeline and adaptive.

Chen et al. 2018 (their Figure 12) compare the peak memory of the all-to-all exchange
with the pipelined ring at 4 to 10 nodes. This benchmark runs the kernel under real
``mpiexec`` at 4 and 8 ranks, in each of the three exchange modes, on Erdős-Rényi
graphs of the sizes the subgraph benchmark holds out (``er:10000:50000``, the graph its
complexity model predicts 8 ranks on) and four times that, and prints per run every
rank's peak resident size (``ru_maxrss``, the kernel's ``peak_rss`` per rank), the
largest growth while counting (``counting_rss``: the tables and exchange buffers, the
part the modes change), the largest live exchange buffers of one rank, and the growth
relative to all-to-all.

Run: ``python tests/benchmarks/bench_subgraph_memory.py [--graphs er:10000:50000:1 ...]
[--templates u10-2 u12-2] [--ranks 4 8]``. Memory does not depend on the machine's
load; the times in the last column do.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np
from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.kernels.schema import Record

GRAPHS = ["er:10000:50000:1", "er:40000:200000:1"]
MODES = ("alltoall", "pipeline", "adaptive")
MIB = 2**20


def launch(ranks: int, graph: str, template: str, mode: str) -> dict:
    """One kernel run under ``mpiexec``; its record as a dictionary."""
    env = child_environment()
    env["SCALEPROBE_LINK"] = json.dumps({"mode": "emulated", "ppn": 1, "core_slots": 2})
    command = [
        resolve_mpiexec(),
        "-n",
        str(ranks),
        sys.executable,
        "-m",
        "scaleprobe.kernels.subgraph",
        "--graph",
        graph,
        "--template",
        template,
        "--iterations",
        "1",
        "--mode",
        mode,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=1800, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return Record.parse(done.stdout).to_dict()


def table(graphs, templates, rank_counts) -> None:
    """Print one row per graph, template, rank count and mode."""
    print("\n## Peak memory per rank (MiB), one colour-coding iteration, emulated\n")
    print(
        "| graph | template | ranks | mode | peak RSS per rank | growth while "
        "counting, max | vs all-to-all | exchange buffers, max | wall s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for graph in graphs:
        for template in templates:
            for ranks in rank_counts:
                baseline = None
                for mode in MODES:
                    start = time.perf_counter()
                    record = launch(ranks, graph, template, mode)
                    wall = time.perf_counter() - start
                    metrics = record["metrics"]
                    rss = np.array(record["profiles"]["rank"]["peak_rss"]) / MIB
                    growth = metrics["counting_rss"] / MIB
                    baseline = growth if baseline is None else baseline
                    per_rank = " ".join(f"{value:.0f}" for value in rss)
                    print(
                        f"| {graph} | {template} | {ranks} | {mode} | {per_rank} | "
                        f"{growth:.1f} | {growth / baseline:.2f} | "
                        f"{metrics['exchange_peak_bytes'] / MIB:.1f} | {wall:.1f} |",
                        flush=True,
                    )


def main() -> None:
    """Parse the command line and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="+", default=GRAPHS)
    parser.add_argument("--templates", nargs="+", default=["u10-2", "u12-2"])
    parser.add_argument("--ranks", nargs="+", type=int, default=[4, 8])
    args = parser.parse_args()
    table(args.graphs, args.templates, args.ranks)


if __name__ == "__main__":
    main()
