"""Framework overhead per point against a bare ``mpiexec`` loop of the same launches.

Runs the same N points (``commbench.fault --sleep S`` at 2 ranks: a point of known,
fixed duration) twice, interleaved in rounds so drift hits both alike:

- bare: a Python loop of ``subprocess.run([mpiexec, -n, 2, python -m ...])``;
- scaleprobe: ``run_sweep`` on an already started two-worker LocalCluster (cluster
  start-up is reported separately: it is paid once per sweep, not per point).

A one-point warm-up sweep runs first (imports are paid once per process).
Prints per-round medians and the overhead ratio. Target: at most 5 % for 1 s points.

Usage: python tests/benchmarks/bench_overhead.py [--points 8] [--sleep 1.0] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from scaleprobe.framework.launch import resolve_mpiexec


def bare(points: int, sleep: float) -> float:
    mpiexec = resolve_mpiexec()
    command = [
        mpiexec,
        "-n",
        "2",
        sys.executable,
        "-m",
        "scaleprobe.kernels.commbench.fault",
        "--behaviour",
        "ok",
        "--sleep",
        str(sleep),
    ]
    start = time.perf_counter()
    for _ in range(points):
        subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def framework(client, points: int, sleep: float, directory: str) -> float:
    from scaleprobe.framework import run_sweep

    spec = {
        "name": "overhead",
        "kernel": "commbench.fault",
        "params": {"behaviour": "ok", "sleep": sleep},
        "sweep": {"nodes": [2], "run": points},
        "throttle": {"mode": "none"},
        "output": os.path.join(directory, f"o{time.time_ns()}.zarr"),
    }
    start = time.perf_counter()
    ds = run_sweep(spec, client, progress=False)
    elapsed = time.perf_counter() - start
    assert int((ds.status == "ok").sum()) == points
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=8)
    parser.add_argument("--sleep", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
        tempfile.TemporaryDirectory() as directory,
    ):
        startup = time.perf_counter() - t0
        # One warm-up sweep: first imports (zarr, xarray) on the client and workers are
        # paid once per process, not per point.
        t1 = time.perf_counter()
        framework(client, 1, 0.0, directory)
        warmup = time.perf_counter() - t1
        rows = []
        for r in range(args.rounds):
            b = bare(args.points, args.sleep)
            f = framework(client, args.points, args.sleep, directory)
            rows.append((r, b / args.points, f / args.points, f / b - 1))
    print(
        f"points per round: {args.points}, point duration: {args.sleep:g} s, "
        f"cluster start-up (once per sweep): {startup:.2f} s, first sweep of one "
        f"empty point (imports): {warmup:.2f} s"
    )
    print(
        f"{'round':>5} {'bare s/point':>13} {'scaleprobe s/point':>19} {'overhead':>9}"
    )
    for r, b, f, o in rows:
        print(f"{r:>5} {b:>13.3f} {f:>19.3f} {o:>8.1%}")
    print(
        f"{'median':>5} {statistics.median(x[1] for x in rows):>13.3f} "
        f"{statistics.median(x[2] for x in rows):>19.3f} "
        f"{statistics.median(x[3] for x in rows):>8.1%}"
    )


if __name__ == "__main__":
    main()
