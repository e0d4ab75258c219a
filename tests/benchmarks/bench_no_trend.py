"""Benchmark: how often the profile search reads a series as having no trend.

Run:  python tests/benchmarks/bench_no_trend.py [--series 4000] [--noise 0.05]
          [--seed 0]

Simulates series of known power laws ``x**slope`` with log-normal noise on a few
grids of counts (one run per count, or three), and prints the share of them that
:func:`scaleprobe.models.profiles.search.no_trend` reads as flat: for slope 0 this is
one minus the rate of trends read in pure noise (every test at 10 %, so the rate of
the family grows with the tests a grid allows: slope and order from four counts,
curvature from five, the runs' analysis of variance with repetitions); for the other
slopes it is how often a real trend hides in the noise.
"""

from __future__ import annotations

import argparse

import numpy as np
from scaleprobe.models.profiles.search import SeriesGroup, no_trend

GRIDS = {
    "27..216 (4 counts), 1 run": ([27, 64, 125, 216], 1),
    "2..16 (7 counts), 1 run": ([2, 3, 4, 6, 8, 12, 16], 1),
    "2..16 (7 counts), 3 runs": ([2, 3, 4, 6, 8, 12, 16], 3),
    "4..64 (5 counts), 3 runs": ([4, 8, 16, 32, 64], 3),
}
SLOPES = (0.0, 0.02, 0.05, 0.1, 0.2)


def flat_share(counts, runs, noise, slope, series, rng):
    """Share of ``series`` simulated series that :func:`no_trend` reads as flat."""
    x = np.asarray(counts, dtype=float)
    values = np.exp(rng.normal(0.0, noise, (x.size, runs, series)))
    values *= (x[:, None, None] / x[0]) ** slope
    centre = values.mean(axis=1)
    spread = np.zeros(series)
    if runs > 1:
        squares = (np.log(values / centre[:, None, :]) ** 2).sum(axis=(0, 1))
        spread = np.sqrt(squares / (x.size * (runs - 1)))
    group = SeriesGroup(
        x=x, centre=centre, count=np.full((x.size, series), float(runs)), noise=spread
    )
    return float(no_trend(group, x.size, [[]] * series).mean())


def main(argv=None):
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=4000)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    header = "".join(f"{f'slope {s:g}':>11}" for s in SLOPES)
    print(f"read as flat (noise {args.noise:g}, {args.series} series each)")
    print(f"{'grid':<28}{header}")
    for name, (counts, runs) in GRIDS.items():
        shares = [
            flat_share(counts, runs, args.noise, s, args.series, rng) for s in SLOPES
        ]
        print(f"{name:<28}" + "".join(f"{v:>11.2f}" for v in shares))


if __name__ == "__main__":
    main()
