"""Benchmark: wall time of ``fit_ensemble`` and of a projection with intervals.

Synthetic sweeps of the shapes users measure (node counts alone, node counts by
bandwidth, node counts by scale by bandwidth; 3 runs per point, 3 % log-normal
noise) are fitted exactly as ``scaleprobe fit`` does, on Dask's synchronous
scheduler so that the time is the models' own and not the scheduling's. The table
gives, per sweep, the median over repeats of the fit (cross-validation, final fits,
interval calibration) and of projecting the selected model to 32..1024 nodes.

Run: ``python tests/benchmarks/bench_fit_time.py [--repeats 3]``

Compare two versions of scaleprobe by running it on each in turn on an idle machine;
the load average before and after is printed, since a loaded machine slows both.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings

import numpy as np
import pandas as pd

NODES = [2, 3, 4, 6, 8, 12]
SWEEPS = {
    "nodes (6)": {"bandwidth": [100.0], "scale": [None]},
    "nodes x bandwidth (6 x 3)": {"bandwidth": [100.0, 50.0, 25.0], "scale": [None]},
    "nodes x scale x bandwidth (6 x 2 x 2)": {
        "bandwidth": [100.0, 50.0],
        "scale": [20.0, 22.0],
    },
}
TARGETS = [32, 128, 1024]


def _sweep(shape, runs=3, seed=0):
    """Features and times of one synthetic sweep (Eq. 7's shape: work plus traffic)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in NODES:
        for bw in shape["bandwidth"]:
            for scale in shape["scale"]:
                size = 1.0 if scale is None else 2.0 ** (scale - 20)
                clean = 50 * size / n + 2 * size * 1.5 ** (100 / bw) / np.sqrt(n)
                for run in range(runs):
                    row = {"nodes": n, "ppn": 1, "ranks": n, "run": run}
                    row["bandwidth"] = bw
                    if scale is not None:
                        row["scale"] = scale
                    row["time"] = clean * np.exp(0.03 * rng.standard_normal())
                    rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.drop(columns="time"), frame["time"].to_numpy()


def _time(function):
    start = time.perf_counter()
    out = function()
    return time.perf_counter() - start, out


def main(argv=None):
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    import dask
    from scaleprobe.models import fit_ensemble

    dask.config.set(scheduler="sync")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'sweep':<40} {'points':>6} {'fit s':>8} {'project s':>10}  selected")
    for name, shape in SWEEPS.items():
        X, y = _sweep(shape)
        fits, projections, selected = [], [], None
        for _ in range(args.repeats):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                seconds, fit = _time(lambda X=X, y=y: fit_ensemble((X, y)))
                fits.append(seconds)
                selected = fit.selected
                if selected is not None:
                    extra = {"bandwidth": [shape["bandwidth"][-1]]}
                    if shape["scale"][0] is not None:
                        extra["scale"] = [shape["scale"][-1]]
                    seconds, _ = _time(
                        lambda fit=fit, extra=extra: fit.project(nodes=TARGETS, **extra)
                    )
                    projections.append(seconds)
        project = (
            f"{statistics.median(projections):10.2f}" if projections else " " * 9 + "-"
        )
        print(
            f"{name:<40} {len(y):>6} {statistics.median(fits):8.2f} {project}  "
            f"{selected}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
