"""Benchmark of the subgraph-counting kernel; prints tables (not collected by pytest).

1. Single process: counting time per iteration on an Erdős-Rényi graph of 10,000
   vertices and 50,000 edges, float64 and float32 tables, beside FASCIA 1.0's times
   measured on this machine (C++, -O3, one thread).
2. 1 versus 2 ranks (``mpiexec``) for large templates: virtual time per iteration in
   emulated mode and wall time per iteration without throttling.
3. Peak memory per rank, all-to-all versus pipeline, 4 and 8 ranks.
4. The complexity model (Eqs. 4-16) fitted on 1-4 ranks and its prediction at 8.
5. Template preparation (splitting, complexity, automorphisms) of large templates:
   milliseconds each; it runs in every rank before counting starts.

Run: ``python tests/benchmarks/subgraph.py [--sections 1 2 3] [--templates ...]``.
On a shared machine wall times are inflated by other processes; CPU time (process
time, which the emulated clock also charges) is the fairer column.
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
from scaleprobe.kernels.subgraph import Template, colorful_count, coloring, erdos_renyi

FASCIA_MS = {"u3-1": 2.6, "u5-2": 8.1, "u7-2": 31.0, "u10-2": 206.0, "u12-2": 1440.0}
REPEATS = {"u3-1": 30, "u5-2": 20, "u7-2": 10, "u10-2": 5, "u12-2": 3}
GRAPH = "er:10000:50000:1"


def single_process(templates):
    graph = erdos_renyi(10000, 50000, seed=1)
    print(f"\n## 1. Single process, {GRAPH} (median ms per iteration)\n")
    print(
        "| template | FASCIA | float64 cpu | float64 wall | float32 cpu | float32 wall "
        "| float64 cpu / FASCIA |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in templates:
        template = Template.by_name(name)
        cells = []
        for dtype in (np.float64, np.float32):
            adjacency = graph.adjacency(dtype)
            cpu, wall = [], []
            for iteration in range(REPEATS.get(name, 3) + 1):
                colors = coloring(0, iteration, graph.n_vertices, template.k)
                c0, w0 = time.process_time(), time.perf_counter()
                colorful_count(adjacency, template, colors, dtype)
                cpu.append(time.process_time() - c0)
                wall.append(time.perf_counter() - w0)
            # The first iteration builds the index tables; it is not counted.
            cells += [1e3 * np.median(cpu[1:]), 1e3 * np.median(wall[1:])]
        target = FASCIA_MS.get(name, float("nan"))
        print(
            f"| {name} | {target:g} | {cells[0]:.1f} | {cells[1]:.1f} | {cells[2]:.1f} "
            f"| {cells[3]:.1f} | {cells[0] / target:.2f} |",
            flush=True,
        )


def _launch(ranks, arguments, throttle, ppn=1):
    env = child_environment()
    env["SCALEPROBE_LINK"] = json.dumps({"mode": throttle, "ppn": ppn, "core_slots": 2})
    mpiexec = resolve_mpiexec()
    command = [
        mpiexec,
        "-n",
        str(ranks),
        sys.executable,
        "-m",
        "scaleprobe.kernels.subgraph",
        "--graph",
        GRAPH,
        *arguments,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=1800, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return Record.parse(done.stdout).to_dict()


def ranks_one_two(templates):
    print(f"\n## 2. 1 versus 2 ranks, {GRAPH}, mode adaptive (s per iteration)\n")
    print(
        "Virtual time (emulated; 1 Gbit/s link at 50 %, 5 us), the two ranks on two "
        "nodes (ppn 1) or one node (ppn 2), and wall time without throttling.\n"
    )
    print(
        "| template | ranks | virtual, 2 nodes | virtual, 1 node | wall (none) "
        "| estimate |"
    )
    print("|---|---|---|---|---|---|")
    for name in templates:
        for ranks in (1, 2):
            arguments = ["--template", name, "--iterations", "3", "--mode", "adaptive"]
            two_nodes = _launch(ranks, arguments, "emulated", ppn=1)["metrics"]
            one_node = _launch(ranks, arguments, "emulated", ppn=2)["metrics"]
            plain = _launch(ranks, arguments, "none")["metrics"]
            print(
                f"| {name} | {ranks} | {two_nodes['time_per_iteration']:.3f} | "
                f"{one_node['time_per_iteration']:.3f} | "
                f"{plain['time_per_iteration']:.3f} | {plain['estimate']:.6g} |",
                flush=True,
            )


def memory(templates, rank_counts=(4, 8)):
    print(
        f"\n## 3. Peak memory per rank, all-to-all versus pipeline, {GRAPH}, emulated\n"
    )
    print(
        "| template | ranks | mode | peak RSS max (MiB) | growth while counting, max "
        "(MiB) | exchange buffers (MiB) | virtual s/iter | modelled overlap | "
        "estimate |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in templates:
        for ranks in rank_counts:
            for mode in ("alltoall", "pipeline"):
                record = _launch(
                    ranks,
                    ["--template", name, "--iterations", "1", "--mode", mode],
                    "emulated",
                )
                metrics = record["metrics"]
                rss = np.array(record["profiles"]["rank"]["peak_rss"]) / 2**20
                print(
                    f"| {name} | {ranks} | {mode} | {rss.max():.0f} | "
                    f"{metrics['counting_rss'] / 2**20:.0f} | "
                    f"{metrics['exchange_peak_bytes'] / 2**20:.1f} | "
                    f"{metrics['time_per_iteration']:.3f} | "
                    f"{metrics['modelled_overlap']:.2f} | "
                    f"{metrics['estimate']:.6g} |",
                    flush=True,
                )


def fitted_model(templates=("u5-2", "u7-2", "u10-2"), rank_counts=(1, 2, 4, 8)):
    import pandas as pd
    from scaleprobe.models.analytic.subgraph import SubgraphComplexity

    print(f"\n## 4. Complexity model fitted on 1-4 ranks, predicted at 8, {GRAPH}\n")
    print("| mode | template | ranks | measured s/iter | predicted s/iter | error |")
    print("|---|---|---|---|---|---|")
    for mode in ("alltoall", "pipeline"):
        rows = []
        for name in templates:
            for ranks in rank_counts:
                arguments = ["--template", name, "--iterations", "2", "--mode", mode]
                rows.append(_launch(ranks, arguments, "emulated")["metrics"])
        features = pd.DataFrame(rows)  # the records' metrics, inputs picked by name
        measured = features["time_per_iteration"].to_numpy()
        train = (features["ranks"] < max(rank_counts)).to_numpy()
        model = SubgraphComplexity(target="time", mode=mode)
        model.fit(features[train], measured[train])
        predicted = model.predict(features)
        for row, got, want in zip(rows, measured, predicted, strict=True):
            if row["ranks"] == max(rank_counts):
                print(
                    f"| {mode} | {row['k']}-vertex ({row['computation_complexity']}) "
                    f"| {row['ranks']} | {got:.3f} | {want:.3f} | "
                    f"{want / got - 1:+.0%} |",
                    flush=True,
                )
        fitted = zip(model.coef_names_, model.coef_, strict=True)
        constants = {"base": model.intercept_, **dict(fitted)}
        coef = ", ".join(f"{k}={v:.3g}" for k, v in constants.items())
        print(f"| {mode} | constants | | {coef} | | |", flush=True)


def template_preparation(names=("u12-2", "binary-15", "spider-7-2", "star-15")):
    print("\n## 5. Template preparation (median ms of 5)\n")
    print("| template | k | automorphisms | ms |")
    print("|---|---|---|---|")
    for name in names:
        samples = []
        for _ in range(5):
            start = time.perf_counter()
            template = Template.by_name(name)
            template.complexity()
            automorphisms = template.automorphisms()
            samples.append(time.perf_counter() - start)
        ms = 1e3 * float(np.median(samples))
        print(f"| {name} | {template.k} | {automorphisms} | {ms:.1f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", nargs="+", type=int, default=[1, 2, 3, 4, 5])
    parser.add_argument("--templates", nargs="+", default=list(FASCIA_MS))
    parser.add_argument(
        "--large",
        nargs="+",
        default=["u10-2", "u12-2"],
        help="templates of sections 2 and 3",
    )
    args = parser.parse_args()
    if 1 in args.sections:
        single_process(args.templates)
    if 2 in args.sections:
        ranks_one_two(args.large)
    if 3 in args.sections:
        memory(args.large)
    if 4 in args.sections:
        fitted_model()
    if 5 in args.sections:
        template_preparation()


if __name__ == "__main__":
    main()
