"""Benchmark: Graph500 TEPS per variant and scale at one rank, against the reference.

Run::

    python tests/benchmarks/graph500.py --scales 16 18 20 \
        --reference /path/to/graph500_reference_bfs --repeats 3

Every (scale, variant) and the reference binary (if given) run ``--repeats`` times,
interleaved, so that machine noise hits them alike; the table shows medians of the
harmonic-mean TEPS, the ratio to the reference, generation + construction time and
peak RSS. The reference's own validation is on, as is ours.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

from scaleprobe.kernels.schema import Record

VARIANTS = ("simple", "replicated-csr", "replicated-csc", "2d")
_REFERENCE_TEPS = re.compile(r"harmonic_mean_TEPS:\s*!?\s*([0-9.eE+-]+)")
_REFERENCE_GEN = re.compile(r"graph_generation:\s*([0-9.eE+-]+)")
_REFERENCE_CONS = re.compile(r"construction_time:\s*([0-9.eE+-]+)")


def _environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "HYDRA_"))}
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    return env


def run_kernel(scale, variant, nbfs, timeout, extra=()):
    """One 1-rank kernel run; returns (teps, gen+cons seconds, peak RSS bytes)."""
    command = [
        sys.executable,
        "-m",
        "scaleprobe.kernels.graph500",
        "--scale",
        str(scale),
        "--variant",
        variant,
        "--nbfs",
        str(nbfs),
        *extra,
    ]
    out = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_environment(),
        check=True,
    ).stdout
    record = Record.parse(out).to_dict()
    if record["status"] != "ok":
        raise RuntimeError(f"{variant} at scale {scale}: {record['reason']}")
    m = record["metrics"]
    return (
        m["harmonic_mean_teps"],
        m["generation_time"] + m["construction_time"],
        m["peak_rss"],
    )


def run_reference(binary, scale, timeout):
    """One run of the reference binary (1 rank); returns (teps, gen+cons seconds)."""
    result = subprocess.run(
        [binary, str(scale), "16"],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_environment(),
        check=True,
    )
    text = result.stdout + result.stderr
    teps = float(_REFERENCE_TEPS.search(text).group(1))
    setup = sum(
        float(p.search(text).group(1)) for p in (_REFERENCE_GEN, _REFERENCE_CONS)
    )
    return teps, setup


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=int, nargs="+", default=[16, 18, 20])
    parser.add_argument(
        "--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS
    )
    parser.add_argument("--nbfs", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--reference", help="path of graph500_reference_bfs (3.0.x)")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args(argv)

    print(f"# load average before: {os.getloadavg()}", flush=True)
    rows = []
    for scale in args.scales:
        samples = {v: [] for v in args.variants}
        reference = []
        for _ in range(args.repeats):
            if args.reference:
                reference.append(run_reference(args.reference, scale, args.timeout))
            for variant in args.variants:
                samples[variant].append(
                    run_kernel(scale, variant, args.nbfs, args.timeout)
                )
        ref_teps = statistics.median(r[0] for r in reference) if reference else None
        if reference:
            ref_setup = statistics.median(r[1] for r in reference)
            rows.append((scale, "reference-3.0", ref_teps, 1.0, ref_setup, None))
        for variant, values in samples.items():
            teps = statistics.median(v[0] for v in values)
            setup = statistics.median(v[1] for v in values)
            rss = max(v[2] for v in values)
            ratio = teps / ref_teps if ref_teps else None
            rows.append((scale, variant, teps, ratio, setup, rss))
    print(f"# load average after: {os.getloadavg()}  ({time.strftime('%H:%M:%S')})")
    header = (
        f"{'scale':>5}  {'variant':<15} {'TEPS':>10} {'x ref':>6} "
        f"{'gen+cons s':>10} {'peak RSS MiB':>12}"
    )
    print(header)
    print("-" * len(header))
    for scale, variant, teps, ratio, setup, rss in rows:
        ratio_text = f"{ratio:6.2f}" if ratio is not None else "     -"
        rss_text = f"{rss / 2**20:12.0f}" if rss else "           -"
        print(
            f"{scale:>5}  {variant:<15} {teps:10.3g} {ratio_text} "
            f"{setup:10.2f} {rss_text}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
