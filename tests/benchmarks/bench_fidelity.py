"""How far virtual-time compute times can be trusted on an oversubscribed host.

Runs ``commbench.compute`` with 1, 2, 4, 8 ranks for cache-resident and memory-bound
work, in emulated mode with core slots off, 1 and 2, plus mode ``none`` (wall clock),
and prints the speedups ``time(1 rank) / time(n ranks)``. Ideal strong scaling is n;
virtual-time speedups below n show how much co-scheduled ranks inflate each other's
CPU time (shared caches and memory bandwidth), wall-clock speedups show what the host
really delivers. A last table gives the wall time of every run (what slots cost).
Usage::

    python tests/benchmarks/bench_fidelity.py [--repeats 3] [--cache-work 600]
        [--memory-work 400] [--ranks 1 2 4 8]

Each cell is the median over ``--repeats`` runs, all measured in this one run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile

from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.kernels.schema import Record

MPIEXEC = resolve_mpiexec()
CONFIGS = {  # column name -> SCALEPROBE_LINK (slot_dir filled in per run)
    "slots off": {"mode": "emulated", "core_slots": 0},
    "1 slot": {"mode": "emulated", "core_slots": 1},
    "2 slots": {"mode": "emulated", "core_slots": 2},
    "wall clock": {"mode": "none"},
}


def run_compute(ranks: int, work: str, units: int, comm: dict) -> dict:
    """One launch of the compute kernel; returns its metrics."""
    with tempfile.TemporaryDirectory(prefix="scaleprobe-bench-slots-") as slot_dir:
        config = json.dumps({**comm, "slot_dir": slot_dir})
        env = dict(child_environment(), SCALEPROBE_LINK=config)
        done = subprocess.run(
            [
                MPIEXEC,
                "-n",
                str(ranks),
                sys.executable,
                "-m",
                "scaleprobe.kernels.commbench.compute",
                "--work",
                work,
                "--total-work",
                str(units),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            check=True,
        )
    return Record.parse(done.stdout).to_dict()["metrics"]


def main(argv=None) -> None:
    """Measure and print the fidelity table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cache-work", type=int, default=600)
    parser.add_argument("--memory-work", type=int, default=400)
    parser.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args(argv)
    work_units = {"cache": args.cache_work, "memory": args.memory_work}
    times, walls = {}, {}
    for repeat in range(args.repeats):
        for work, units in work_units.items():
            for ranks in args.ranks:
                for name, comm in CONFIGS.items():
                    metrics = run_compute(ranks, work, units, comm)
                    times.setdefault((work, name, ranks), []).append(metrics["elapsed"])
                    walls.setdefault((work, name, ranks), []).append(
                        metrics["wall_time"]
                    )
                    print(
                        f"# repeat {repeat} {work:6s} {name:10s} {ranks} ranks: "
                        f"{metrics['elapsed']:.3f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    median = {key: statistics.median(value) for key, value in times.items()}
    base = min(args.ranks)
    header = f"{'work':7s}{'ranks':>6s}" + "".join(f"{name:>12s}" for name in CONFIGS)
    print("speedup time(1 rank)/time(n ranks); emulated columns use virtual time")
    print(header)
    for work in work_units:
        for ranks in args.ranks:
            cells = "".join(
                f"{median[(work, name, base)] / median[(work, name, ranks)]:12.2f}"
                for name in CONFIGS
            )
            print(f"{work:7s}{ranks:6d}{cells}")
    print()
    print("seconds (median) of the work phase")
    print(header)
    for work in work_units:
        for ranks in args.ranks:
            cells = "".join(f"{median[(work, name, ranks)]:12.3f}" for name in CONFIGS)
            print(f"{work:7s}{ranks:6d}{cells}")
    print()
    print("wall seconds (median) of the whole kernel run: what core slots cost")
    print(header)
    for work in work_units:
        for ranks in args.ranks:
            cells = "".join(
                f"{statistics.median(walls[(work, name, ranks)]):12.3f}"
                for name in CONFIGS
            )
            print(f"{work:7s}{ranks:6d}{cells}")


if __name__ == "__main__":
    main()
