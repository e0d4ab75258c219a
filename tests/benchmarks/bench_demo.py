"""Wall time of ``scaleprobe demo`` and of ``scaleprobe --help`` against a bare
interpreter.

A new user's first two commands: ``--help`` (goal: within 5 times ``python -c
'import argparse'``) and the demo (goal: at most two minutes on a quiet 2-core host:
the sweep, the fit, the projection, the report and its figures). The demo runs once
in a fresh folder, so that it measures every point; its phases are read from its
store (the span of the launches) and from the wall clock.

Prints the times, the ratio to the floor, the demo's phases and the host's load
average (a busy host makes every figure larger: read them against it).

Usage: python tests/benchmarks/bench_demo.py [--rounds 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _scaleprobe() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "scaleprobe")
    return beside if os.access(beside, os.X_OK) else shutil.which("scaleprobe")


def _time(command: list[str], **options) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, **options
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-800:]}")
    return elapsed, done


def _help_times(rounds: int) -> dict:
    commands = {
        "python -c 'import argparse'": [sys.executable, "-c", "import argparse"],
        "scaleprobe --help": [_scaleprobe(), "--help"],
    }
    times = {name: [] for name in commands}
    for command in commands.values():  # warm the file cache once
        _time(command)
    for _ in range(rounds):
        for name, command in commands.items():
            times[name].append(_time(command)[0])
    return {name: statistics.median(values) for name, values in times.items()}


def _launch_span(folder: str) -> float:
    from scaleprobe.framework.store import ResultStore

    results = ResultStore(os.path.join(folder, "demo.zarr")).results()
    return max(r["finished"] for r in results) - min(r["started"] for r in results)


def main() -> None:
    """Time ``--help`` in interleaved rounds, then the demo once; print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--keep", help="run the demo in this folder and keep it")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    medians = _help_times(args.rounds)
    folder = args.keep or tempfile.mkdtemp(prefix="scaleprobe-demo-")
    try:
        demo, done = _time([_scaleprobe(), "demo", "--directory", folder])
        span = _launch_span(folder)
        last = [line.split()[-1] for line in done.stdout.splitlines() if line.split()]
        written = [path for path in last if path.endswith((".html", ".png"))]
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    floor = next(iter(medians.values()))
    width = max(map(len, medians))
    print(f"{'command':<{width}}  median (s)  ratio to the floor")
    for name, median in medians.items():
        print(f"{name:<{width}}  {median:10.3f}  {median / floor:6.1f}")
    print(f"({args.rounds} rounds)")
    print()
    print(f"scaleprobe demo: {demo:.0f} s (goal: at most 120 s on a quiet 2-core host)")
    print(f"  launches, first start to last end: {span:.0f} s")
    print(f"  everything else (cluster, fit, report, figures): {demo - span:.0f} s")
    print(f"  wrote: {', '.join(os.path.basename(p) for p in written) or 'nothing'}")
    print(
        f"load average before {load_before:.1f}, after {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
