"""Does a projection to a problem size that was never measured hold?

Two emulated sweeps per data set: a training sweep at three sizes on 1-8 nodes, and a
test sweep at a larger size on 2-16 nodes (virtual time makes 16 ranks on 2 cores
honest). The ensemble is fitted on the training sweep exactly as ``scaleprobe fit``
does; every model that can name a time at the new size predicts the test
configurations. Printed per model: MAPE on the test configurations, at the measured
node counts (<= 8) and beyond them (16), and the share of the measured points its
90 % interval holds; then the traffic-informed model's prediction of each test
configuration.

Data sets (``--data``):

- ``graph500``: BFS (``variant: simple``), scales 11, 12, 13 -> 15, bandwidth 100
  and 25 %, one rank per node on 1 Gbit/s and 5 us;
- ``kmeans``: ``iterative.kmeans`` (8 clusters, 10 iterations), ``points`` 8192,
  16384, 32768 -> 131072, the same link.

Run: ``python tests/benchmarks/bench_traffic_sizes.py --data graph500 --directory
DIR`` (on 2 cores the sweeps take about 5 minutes for Graph500 and 1.5 for K-means,
the fits a minute; a rerun reads the stores it wrote, and a killed sweep resumes).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd
from bench_graph500_projection import _centres

LINK = "throttle: {mode: emulated, link_bandwidth: 1 Gbit/s, latency: 5 us}"

DATA = {
    "graph500": {
        "head": "kernel: graph500\nparams: {nbfs: 8, variant: simple}",
        "axis": "scale",
        "train": [11, 12, 13],
        "test": [15],
        "bandwidth": [100, 25],
    },
    "kmeans": {
        "head": "kernel: iterative.kmeans\nparams: {clusters: 8, iterations: 10}",
        "axis": "points",
        "train": [8192, 16384, 32768],
        "test": [131072],
        "bandwidth": [100],
    },
}

SPEC = """name: {name}
{head}
sweep:
  nodes: {nodes}
  ppn: 1
  {axis}: {sizes}
  bandwidth: {bandwidth}
  run: {runs}
admissible: any
order: {{shuffle: true, seed: 3}}
{link}
timeout: 1800
output: {output}
"""


def _sweep(directory, data, name, nodes, sizes, runs):
    from scaleprobe.framework import open_results, run_sweep

    output = os.path.join(directory, f"{name}.zarr")
    path = os.path.join(directory, f"{name}.yaml")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            SPEC.format(
                name=name,
                head=data["head"],
                nodes=nodes,
                axis=data["axis"],
                sizes=sizes,
                bandwidth=data["bandwidth"],
                runs=runs,
                link=LINK,
                output=output,
            )
        )
    started = time.perf_counter()
    run_sweep(path, workers=1)
    print(f"{name}: {time.perf_counter() - started:.0f} s of wall time", flush=True)
    return open_results(output).load()


def evaluate_sizes(train, test, axis):
    """Fit on ``train``, predict ``test``: the per-model table and the traffic rows."""
    from scaleprobe.models import fit_ensemble

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_ensemble(train)
    held = _centres(test)
    frame = held[["nodes", "ppn", "bandwidth", axis]].astype(float)
    frame["ranks"] = frame["nodes"] * frame["ppn"]
    if axis == "scale":
        frame["D"] = 2.0 ** (frame["scale"] - fit.training.get("s0", 25))
    measured = held["time"].to_numpy()
    beyond = frame["nodes"].to_numpy() > fit.training["feature_ranges"]["nodes"][1]
    rows, traffic = [], None
    for name, model in fit.models.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                predicted = model.predict(frame)
            except (ValueError, KeyError, TypeError) as error:
                print(f"{name}: cannot predict ({str(error).splitlines()[0][:90]})")
                continue
            interval = fit.intervals.get(name)
            lower, upper = (
                interval.bounds(model, frame, prediction=predicted)
                if interval is not None
                else (np.full(len(frame), np.nan),) * 2
            )
        error = 100 * np.abs(predicted - measured) / measured
        inside = (lower <= measured) & (measured <= upper)
        rows.append(
            {
                "model": name,
                "selected": name == fit.selected,
                "MAPE %": error.mean(),
                "MAPE <=8 nodes %": error[~beyond].mean(),
                "MAPE 16 nodes %": error[beyond].mean() if beyond.any() else np.nan,
                "coverage (90 %)": inside.mean(),
                "upper/lower": float(np.median(upper / lower)),
            }
        )
        if name == "traffic":
            traffic = held[["nodes", "bandwidth", axis, "time"]].assign(
                predicted=predicted,
                error=100 * (predicted / measured - 1),
                lower=lower,
                upper=upper,
            )
    return fit, pd.DataFrame(rows).sort_values("MAPE %"), traffic


def main(argv=None):
    """Run or read the sweeps of each data set and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=sorted(DATA), nargs="+", default=["kmeans"])
    parser.add_argument("--directory", default="traffic-sizes")
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args(argv)
    pd.set_option("display.width", 160)
    for key in args.data:
        data = DATA[key]
        directory = os.path.join(args.directory, key)
        os.makedirs(directory, exist_ok=True)
        train = _sweep(
            directory, data, "train", [1, 2, 3, 4, 6, 8], data["train"], args.runs
        )
        test = _sweep(directory, data, "test", [2, 4, 8, 16], data["test"], args.runs)
        fit, table, traffic = evaluate_sizes(train, test, data["axis"])
        print(
            f"\n== {key}: trained on {data['axis']} {data['train']} at 1-8 nodes; "
            f"tested at {data['axis']} {data['test']} on 2-16 nodes"
        )
        print(f"selected: {fit.selected}; {fit.verdict.reason}")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
        if traffic is not None:
            print("\ntraffic-informed model, per test configuration:")
            print(traffic.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
