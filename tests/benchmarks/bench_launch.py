"""Launch time and per-rank peak RSS of a trivial kernel against bare numpy + mpi4py.

Every rank of a kernel pays for what the kernel imports, and ``peak_rss`` (a metric the
memory formulas consume) carries it. Three programs are launched with the same
``mpiexec`` and environment at 1, 2, 4 and 8 ranks, interleaved in rounds so drift hits
them alike:

- ``bare``: ``import numpy; from mpi4py import MPI``, a barrier, the largest
  ``ru_maxrss`` over ranks printed by rank 0;
- ``kernel``: ``python -m scaleprobe.kernels.commbench.compute --total-work 0`` in
  emulated mode (or ``--throttle none``): argument parsing, the instrumented
  communicator, its summary and the record: everything a kernel does but the work.
  Its ``peak_rss`` is read from the record. Core slots live in a private directory,
  so that other launches on a shared host cannot hold them;
- ``framework`` (with ``--framework``): the bare script that also imports the sweep
  runner (distributed) and the store (xarray), which is what every rank paid when
  kernels imported the framework.

Prints the median launch wall time (``mpiexec`` start to exit) and the median of the
largest per-rank peak RSS, and the kernel/bare ratios. Target: both ratios at most 1.3
at 8 ranks.

Usage: python tests/benchmarks/bench_launch.py [--rounds 5] [--ranks 1 2 4 8]
       [--throttle emulated|none] [--framework]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from scaleprobe.framework.launch import child_environment, resolve_mpiexec

BARE = """
import resource
import numpy
from mpi4py import MPI
{extra}
comm = MPI.COMM_WORLD
comm.Barrier()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
rss = comm.allreduce(peak, op=MPI.MAX)
if comm.rank == 0:
    print("PEAK", rss, flush=True)
"""
FRAMEWORK = "import scaleprobe.framework.runner, scaleprobe.framework.store"


def _environment(mode: str, slot_dir: str) -> dict:
    env = child_environment(threads=1)
    # Private core slots: other launches on a shared host must not hold ours.
    env["SCALEPROBE_LINK"] = json.dumps({"mode": mode, "ppn": 1, "slot_dir": slot_dir})
    return env


def _programs(framework: bool) -> dict:
    programs = {
        "bare": [sys.executable, "-c", BARE.format(extra="")],
        "kernel": [
            sys.executable,
            "-m",
            "scaleprobe.kernels.commbench.compute",
            "--total-work",
            "0",
        ],
    }
    if framework:
        programs["framework"] = [sys.executable, "-c", BARE.format(extra=FRAMEWORK)]
    return programs


def _peak(stdout: str) -> float:
    for line in stdout.splitlines():
        if line.startswith("PEAK "):
            return float(line.split()[1])
        if line.startswith("SCALEPROBE-RECORD "):
            return float(json.loads(line.split(" ", 1)[1])["metrics"]["peak_rss"])
    raise RuntimeError(f"no peak RSS in the output:\n{stdout}")


def launch(mpiexec: str, ranks: int, program: list[str], env: dict) -> tuple:
    """Run one launch; return (wall seconds, largest per-rank peak RSS in bytes)."""
    start = time.perf_counter()
    done = subprocess.run(
        [mpiexec, "-n", str(ranks), *program],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"launch failed ({done.returncode}):\n{done.stderr}")
    return wall, _peak(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--throttle", choices=("emulated", "none"), default="emulated")
    parser.add_argument(
        "--framework",
        action="store_true",
        help="also launch a script that imports the framework (the old cost)",
    )
    args = parser.parse_args()
    slot_dir = tempfile.mkdtemp(prefix="bench-launch-slots-")
    mpiexec, env = resolve_mpiexec(), _environment(args.throttle, slot_dir)
    programs = _programs(args.framework)
    samples = {(n, name): [] for n in args.ranks for name in programs}
    for program in programs.values():  # warm the file cache once
        launch(mpiexec, 1, program, env)
    for _ in range(args.rounds):
        for ranks in args.ranks:
            for name, program in programs.items():
                samples[ranks, name].append(launch(mpiexec, ranks, program, env))

    shutil.rmtree(slot_dir, ignore_errors=True)
    print(
        f"mpiexec: {mpiexec}; throttle {args.throttle}; {args.rounds} rounds; "
        f"medians; host cores: {os.cpu_count()}"
    )
    header = f"{'ranks':>5} {'program':>9} {'launch s':>9} {'peak RSS MiB':>13}"
    print(header + f" {'time/bare':>9} {'RSS/bare':>9}")
    for ranks in args.ranks:
        bare_wall = statistics.median(w for w, _ in samples[ranks, "bare"])
        bare_rss = statistics.median(r for _, r in samples[ranks, "bare"])
        for name in programs:
            wall = statistics.median(w for w, _ in samples[ranks, name])
            rss = statistics.median(r for _, r in samples[ranks, name])
            print(
                f"{ranks:>5} {name:>9} {wall:>9.2f} {rss / 2**20:>13.1f} "
                f"{wall / bare_wall:>9.2f} {rss / bare_rss:>9.2f}"
            )


if __name__ == "__main__":
    main()
