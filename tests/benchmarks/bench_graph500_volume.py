"""Measured Graph500 BFS traffic against the communication-volume formulas.

For every variant, rank count and scale, runs the Graph500 kernel once (``--nbfs``
searches, validation off) and compares the per-search bytes the ranks sent during
the BFS itself (``bfs_bytes_sent``, construction and validation excluded) with
:func:`scaleprobe.models.analytic.graph500_comm_volume` evaluated at the measured
mean number of levels.

Why the ratios are not 1:

- ``simple`` sends one 16-byte (vertex, parent) pair per traversed edge whose endpoint
  lives elsewhere, as the formula does, but the CSR merges duplicate edges and drops
  self-loops, and only the root's component is traversed: the measured volume is a
  constant fraction (about 0.8) of the formula's upper bound.
- ``replicated-csc`` and ``replicated-csr --no-direction-optimizing`` allgather one
  frontier bitmap per level, exactly the formula (padding of the bitmap slices to
  whole bytes and words adds a little at small scales).
- ``2d`` (top-down) measures 2-8 % of the formula: the formula's fold term is the
  upper bound 2M(C-1)/C pairs (every discovered edge), while the implementation
  de-duplicates at the sender and folds each newly reached vertex once, so its volume
  is about V(R-1)D + V(C-1)/C*2D (at scale 14 on a 2x2 grid: 2.6e5 B predicted that
  way, 2.8e5 B measured).
- ``replicated-csr`` and ``2d`` with direction optimization mix top-down pair traffic
  and bottom-up bitmaps, so no single closed form applies; their rows show how far
  the optimized algorithms sit from the formula of their plain form.

Measured here (scale 14, nbfs 8): simple 0.81 at 2, 4 and 8 ranks; replicated-csc
0.94-0.97; replicated-csr top-down 0.97-1.00; 2d top-down 0.02-0.07.

Usage: python tests/benchmarks/bench_graph500_volume.py [--scales 12 14] [--ranks 2 4 8]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.kernels.schema import Record
from scaleprobe.models.analytic.graph500 import graph500_comm_volume

CASES = (
    ("simple", []),
    ("replicated-csr", ["--no-direction-optimizing"]),
    ("replicated-csr", []),
    ("replicated-csc", []),
    ("2d", ["--no-direction-optimizing"]),
    ("2d", []),
)


def measure(variant, flags, scale, ranks, nbfs):
    mpiexec = resolve_mpiexec()
    command = [
        mpiexec,
        "-n",
        str(ranks),
        sys.executable,
        "-m",
        "scaleprobe.kernels.graph500",
        "--scale",
        str(scale),
        "--variant",
        variant,
        "--nbfs",
        str(nbfs),
        "--no-validate",
        *flags,
    ]
    env = child_environment()
    env["SCALEPROBE_LINK"] = json.dumps({"mode": "none", "ppn": 1})
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    record = Record.parse(out.stdout).to_dict()
    levels = sum(t["levels"] for t in record["trials"]) / len(record["trials"])
    return record["metrics"]["bfs_bytes_sent"], levels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[12, 14])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--nbfs", type=int, default=8)
    args = parser.parse_args()
    print(
        f"{'variant':<32} {'scale':>5} {'ranks':>5} {'levels':>6} "
        f"{'measured B':>12} {'formula B':>12} {'ratio':>6}"
    )
    for variant, flags in CASES:
        label = variant + (" (top-down only)" if flags else "")
        for scale in args.scales:
            for ranks in args.ranks:
                measured, levels = measure(variant, flags, scale, ranks, args.nbfs)
                formula = graph500_comm_volume(
                    variant, scale, ranks, levels=max(1, round(levels))
                )
                print(
                    f"{label:<32} {scale:>5} {ranks:>5} {levels:>6.1f} "
                    f"{measured:>12.4g} {formula:>12.4g} {measured / formula:>6.2f}"
                )


if __name__ == "__main__":
    main()
