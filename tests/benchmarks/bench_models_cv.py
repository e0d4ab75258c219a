"""Benchmark: the full model ensemble, 5-fold + extrapolation CV, 1 vs 2 Dask workers.

Run:  python tests/benchmarks/bench_models_cv.py [--points 20000] [--repeats 3]

Prints one row per worker count (median wall time over repeats) and the speed-up,
plus the machine load before and after, since the ratio is only meaningful on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import xarray as xr


def synthetic_sweep(points, seed=0):
    """A Graph500-shaped sweep timed by Eq. 7 (scales 26-29, bandwidth 10-50, 100 %)."""
    rng = np.random.default_rng(seed)
    nodes = np.array([1, 2, 4, 8, 16, 32], float)
    bandwidth = np.array([*range(10, 51, 2), 100], float)
    scale = np.array([26, 27, 28, 29], float)
    runs = 2
    trials = max(1, round(points / (nodes.size * bandwidth.size * scale.size * runs)))
    n, bw, s = np.meshgrid(nodes, bandwidth, scale, indexing="ij")
    p, D = 18 * n, np.exp2(s - 25)
    clean = 16.77 * D / p + 0.561 * D * 1.14 ** (100 / bw) / np.sqrt(p)
    shape = (*n.shape, runs, trials)
    time_ = clean[..., None, None] * (1 + 0.03 * rng.standard_normal(shape))
    dims = ("nodes", "bandwidth", "scale", "run", "trial")
    return xr.Dataset(
        {
            "time": (dims, time_, {"units": "s", "long_name": "BFS time"}),
            "status": (dims[:-1], np.full(shape[:-1], "ok")),
        },
        coords={
            "nodes": nodes.astype(int),
            "bandwidth": bandwidth,
            "scale": scale,
            "run": np.arange(runs),
            "trial": np.arange(trials),
            "ppn": 18,
        },
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    from distributed import Client, LocalCluster
    from scaleprobe.models import make_features
    from scaleprobe.models.ensemble.fit import default_ensemble
    from scaleprobe.models.evaluation.crossval import default_cv, evaluate, select_model

    ds = synthetic_sweep(args.points)
    X, y = make_features(ds)
    models = default_ensemble(X)
    cv = default_cv()
    n_tasks = len(models) * sum(s.get_n_splits(X) for s in cv.values())
    load_before = os.getloadavg()
    print(
        f"{len(y)} points, models {list(models)}, {n_tasks} fit tasks "
        f"(each also calibrates its interval), cpus {os.cpu_count()}, "
        f"load before {load_before[0]:.2f}",
        file=sys.stderr,
    )
    rows = []
    for workers in (1, 2):
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
            ) as cluster,
            Client(cluster) as client,
        ):
            evaluate(models, (X.iloc[:2000], y[:2000]), cv=cv, client=client)  # warm up
            times, used, busy = [], set(), []
            for _ in range(args.repeats):
                start = time.perf_counter()
                scores = evaluate(models, (X, y), cv=cv, client=client)
                times.append(time.perf_counter() - start)
                used |= {
                    w for w in scores["worker"].values.ravel() if isinstance(w, str)
                }
                busy.append(float(scores["fit_seconds"].sum()))
            rows.append(
                (
                    workers,
                    statistics.median(times),
                    min(times),
                    max(times),
                    len(used),
                    statistics.median(busy),
                )
            )
    best = select_model(scores)
    load_after = os.getloadavg()
    print(
        f"\n{'workers':>7} {'median s':>9} {'min s':>7} {'max s':>7} {'used':>5} "
        f"{'speed-up':>8} {'task s':>7}"
    )
    # "task s": summed wall time inside the tasks; it grows when workers contend
    # for the same cores with other processes.
    for workers, median, low, high, used, task in rows:
        print(
            f"{workers:>7} {median:>9.2f} {low:>7.2f} {high:>7.2f} {used:>5} "
            f"{rows[0][1] / median:>8.2f} {task:>7.1f}"
        )
    print(
        f"\nselected by extrapolation SMAPE: {best}; load average 1 min before "
        f"{load_before[0]:.2f}, after {load_after[0]:.2f} on {os.cpu_count()} cpus"
    )


if __name__ == "__main__":
    main()
