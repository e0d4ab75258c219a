"""FiM-Com's queue simulation: replications side by side against one at a time.

FiM-Com averages many replications of each collective (50 for a prediction, 8 per
training row while calibrating, up to 32x more for collectives of few data points).
:func:`~scaleprobe.models.fim.queues.simulate_many` simulates them side by side;
this prints, per pattern, process count and data points, the seconds for
``--replications`` replications one ``simulate`` call at a time and in one
``simulate_many`` call, their ratio and the two means (medians of ``--repeats``
timings, measured alternately in one run).

Run: ``python tests/benchmarks/bench_queue_sim.py`` (a few minutes).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scaleprobe.models.fim.queues import ServiceLaws, simulate, simulate_many

LAWS = ServiceLaws(1e5, 2e5, 1e6, 3e-6, 3e-6)
CASES = [
    ("scatter", 4, 10),
    ("scatter", 4, 100_000),
    ("gather", 4, 100_000),
    ("tree_broadcast", 4, 10),
    ("tree_broadcast", 64, 100_000),
    ("tree_broadcast", 1024, 100_000),
    ("allreduce", 1024, 10),
    ("scatter", 1024, 100_000),
]


def one_at_a_time(pattern, ranks, jobs, replications, seed):
    """Seconds and mean of ``replications`` separate ``simulate`` calls."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    runs = [simulate(pattern, jobs, ranks, LAWS, rng) for _ in range(replications)]
    return time.perf_counter() - start, float(np.mean(runs))


def side_by_side(pattern, ranks, jobs, replications, seed):
    """Seconds and mean of one ``simulate_many`` call."""
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    runs = simulate_many(pattern, jobs, ranks, LAWS, rng, replications)
    return time.perf_counter() - start, float(np.mean(runs))


def main(argv=None):
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(
        f"{'pattern':>15} {'ranks':>6} {'jobs':>7} {'one at a time s':>16} "
        f"{'side by side s':>15} {'ratio':>6} {'mean 1 s':>10} {'mean n s':>10}"
    )
    for pattern, ranks, jobs in CASES:
        alone, together = [], []
        for seed in range(args.repeats):
            alone.append(one_at_a_time(pattern, ranks, jobs, args.replications, seed))
            together.append(side_by_side(pattern, ranks, jobs, args.replications, seed))
        slow = np.median([t for t, _ in alone])
        fast = np.median([t for t, _ in together])
        print(
            f"{pattern:>15} {ranks:>6} {jobs:>7} {slow:>16.4f} {fast:>15.4f} "
            f"{slow / fast:>6.1f} {np.mean([m for _, m in alone]):>10.4g} "
            f"{np.mean([m for _, m in together]):>10.4g}"
        )


if __name__ == "__main__":
    main()
