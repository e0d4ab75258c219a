"""TEPS of the Graph500 departures from Suzumura et al. 2011, against their variants.

``kernels/graph500/departures.py`` puts two optimisations of Suzumura et al. 2011
back as opt-in variants; this benchmark measures what each changes:

- ``simple-isend`` against ``simple``: Isend buffers of 256 (vertex, parent) pairs
  against one aggregated ``Alltoallv`` per level;
- ``replicated-csr-summary`` against ``replicated-csr``: the in-queue summary bitmap
  in the bottom-up checks (direction optimizing, as the default);
- ``replicated-csc-grouped`` against ``replicated-csc``: the 32-column CSC grouping
  (its first search also builds the grouped arrays: read the median TEPS).

For each rank count and scale, every variant runs under ``mpiexec`` (``--nbfs``
validated searches) with no throttle (wall time) and emulated (virtual time over a
1 Gbit/s link at 100 %, 5 us; computation charged as CPU time, so the host's load
weighs less), and the table gives the harmonic-mean TEPS, the messages and bytes per
search and the ratio of the departure's TEPS to its plain variant's (> 1: the
optimisation helps here).

With ``--repeats R`` the two variants of a pair run alternately R times and the
medians over the R runs are printed (a ratio is the median of the R paired ratios).

Run: ``python tests/benchmarks/bench_graph500_variants.py [--ranks 2 4]
[--scales 14 16] [--nbfs 16] [--repeats 1] [--throttles none emulated]
[--departures simple-isend ...]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import numpy as np
from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.kernels.schema import Record

PAIRS = (
    ("simple", "simple-isend"),
    ("replicated-csr", "replicated-csr-summary"),
    ("replicated-csc", "replicated-csc-grouped"),
)
EMULATED = {
    "mode": "emulated",
    "ppn": 1,
    "bandwidth": 100.0,
    "link_bandwidth": 1.25e8,
    "latency": 5e-6,
    "core_slots": 2,
}


def launch(ranks: int, scale: int, variant: str, nbfs: int, throttle: str) -> dict:
    """One Graph500 run under ``mpiexec``; its metrics."""
    env = child_environment()
    env.pop("SCALEPROBE_LINK", None)
    if throttle == "emulated":
        env["SCALEPROBE_LINK"] = json.dumps(EMULATED)
    command = [
        resolve_mpiexec(),
        "-n",
        str(ranks),
        sys.executable,
        "-m",
        "scaleprobe.kernels.graph500",
        "--scale",
        str(scale),
        "--nbfs",
        str(nbfs),
        "--variant",
        variant,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=1800, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    record = Record.parse(done.stdout).to_dict()
    if record.get("status") != "ok":
        raise RuntimeError(f"{variant}: {record.get('reason')}")
    return record["metrics"]


def pair_rows(throttle, ranks, scale, pair, nbfs, repeats):
    """Run a variant and its departure alternately ``repeats`` times; table rows."""
    runs = {variant: [] for variant in pair}
    for _ in range(repeats):
        for variant in pair:
            runs[variant].append(launch(ranks, scale, variant, nbfs, throttle))
    teps = {v: np.array([m["harmonic_mean_teps"] for m in runs[v]]) for v in pair}
    median = {v: np.array([m["median_teps"] for m in runs[v]]) for v in pair}
    ratio = float(np.median(teps[pair[1]] / teps[pair[0]]))
    median_ratio = float(np.median(median[pair[1]] / median[pair[0]]))
    rows = []
    for variant in pair:
        last = runs[variant][-1]
        rows.append(
            f"| {throttle} | {ranks} | {scale} | {variant} | "
            f"{np.median(teps[variant]):.3g} | {np.median(median[variant]):.3g} | "
            f"{last['bfs_messages']:.0f} | {last['bfs_bytes_sent'] / 2**20:.2f} | "
            f"{1.0 if variant == pair[0] else ratio:.2f} | "
            f"{1.0 if variant == pair[0] else median_ratio:.2f} |"
        )
    return rows


def main(argv=None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", nargs="+", type=int, default=[2, 4])
    parser.add_argument("--scales", nargs="+", type=int, default=[14, 16])
    parser.add_argument("--nbfs", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each variant")
    parser.add_argument("--throttles", nargs="+", default=["none", "emulated"])
    parser.add_argument(
        "--departures",
        nargs="+",
        default=[pair[1] for pair in PAIRS],
        choices=[pair[1] for pair in PAIRS],
    )
    args = parser.parse_args(argv)
    print(
        "| throttle | ranks | scale | variant | harmonic-mean TEPS | median TEPS "
        "| messages / BFS | MiB / BFS | TEPS / plain | median TEPS / plain |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for throttle in args.throttles:
        for ranks in args.ranks:
            for scale in args.scales:
                for pair in (p for p in PAIRS if p[1] in args.departures):
                    rows = pair_rows(
                        throttle, ranks, scale, pair, args.nbfs, args.repeats
                    )
                    print("\n".join(rows), flush=True)


if __name__ == "__main__":
    main()
