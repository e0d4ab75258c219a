"""Start-up time of the ``scaleprobe`` command against a bare interpreter.

A user who types ``scaleprobe --help`` or ``scaleprobe plan SPEC`` waits for every
module the command imports before anything is printed. This benchmark times, as
separate processes interleaved in rounds so that drift on a shared host hits them
alike:

- ``python -c 'import argparse'``: the floor, an interpreter that parses arguments;
- ``scaleprobe --help`` and ``scaleprobe run --help``: the parser alone;
- ``scaleprobe plan SPEC``: the dry run of a small emulated sweep (spec, kernel
  parameters, launch settings, output), nothing launched;
- ``scaleprobe show STORE``: the summary of a small store made here, without MPI,
  through the store's own API.

Prints the median wall time of each and its ratio to the floor. Target: ``--help``
within 5 times the floor.

Usage: python tests/benchmarks/bench_cli_startup.py [--rounds 7]
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

SPEC = """\
name: startup
kernel: commbench.compute
params: {{total-work: 1000}}
sweep: {{nodes: [1, 2], bandwidth: [100, 50], run: 2}}
throttle: {{mode: emulated}}
output: {output}
"""


def _scaleprobe() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "scaleprobe")
    return beside if os.access(beside, os.X_OK) else shutil.which("scaleprobe")


def _make_store(folder: str) -> str:
    """A finished store of the spec's points, their records written by hand."""
    from scaleprobe.framework.runner import prepare_sweep

    spec = os.path.join(folder, "made.yaml")
    store_path = os.path.join(folder, "made.zarr")
    with open(spec, "w", encoding="utf-8") as f:
        f.write(SPEC.format(output=store_path))
    with prepare_sweep(spec, progress=False) as sweep:
        for number, point in enumerate(sweep.todo):
            now = time.time()
            sweep.store.write_point(
                {
                    "key": point.key,
                    "coords": dict(point.coords),
                    "status": "ok",
                    "error": "",
                    "record": {"metrics": {"time": 1.0 + number}},
                    "returncode": 0,
                    "started": now,
                    "finished": now,
                    "launch_time": 0.5,
                    "command": ["true"],
                }
            )
        sweep.store.consolidate()
    return store_path


def _commands(folder: str) -> dict:
    scaleprobe = _scaleprobe()
    spec = os.path.join(folder, "plan.yaml")
    with open(spec, "w", encoding="utf-8") as f:
        f.write(SPEC.format(output=os.path.join(folder, "plan.zarr")))
    store = _make_store(folder)
    return {
        "python -c 'import argparse'": [sys.executable, "-c", "import argparse"],
        "scaleprobe --help": [scaleprobe, "--help"],
        "scaleprobe run --help": [scaleprobe, "run", "--help"],
        "scaleprobe plan SPEC": [scaleprobe, "plan", spec],
        "scaleprobe show STORE": [scaleprobe, "show", store],
    }


def _time(command: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}")
    return elapsed


def main() -> None:
    """Time every command in interleaved rounds and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="scaleprobe-startup-")
    try:
        commands = _commands(folder)
        times = {name: [] for name in commands}
        for command in commands.values():  # warm the file cache once
            _time(command)
        for _ in range(args.rounds):
            for name, command in commands.items():
                times[name].append(_time(command))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    floor = statistics.median(next(iter(times.values())))
    width = max(map(len, times))
    print(f"{'command':<{width}}  median (s)  ratio to the floor")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<{width}}  {median:10.3f}  {median / floor:6.1f}")
    print(f"({args.rounds} rounds; load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
