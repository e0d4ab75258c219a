"""FiM-Com's tree broadcast simulated round by round: side by side against one by one.

A binomial-tree broadcast to ``q`` ranks has ``ceil(log2 q)`` rounds, the last ones
with hundreds of independent one-receiver transfers. Simulating those transfers side
by side (one loop over the groups, each step over all senders) gives the same
distribution as simulating them one after another; this prints how long one
replication takes each way, the ratio, and the two means (median of ``--repeats``
timings, measured alternately in one run).

Run: ``python tests/benchmarks/bench_queue_sim.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scaleprobe.models import _queue_sim
from scaleprobe.models._queue_sim import ServiceLaws, simulate

LAWS = ServiceLaws(1e5, 2e5, 1e6, 3e-6, 3e-6)


def timed(ranks, jobs, seed, side_by_side):
    """Seconds and result of one simulated replication."""
    saved = _queue_sim._SIDE_BY_SIDE
    if not side_by_side:
        _queue_sim._SIDE_BY_SIDE = 10**9
    try:
        start = time.perf_counter()
        value = simulate(
            "tree_broadcast", jobs, ranks, LAWS, np.random.default_rng(seed)
        )
        return time.perf_counter() - start, value
    finally:
        _queue_sim._SIDE_BY_SIDE = saved


def main(argv=None):
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(
        f"{'ranks':>6} {'jobs':>7} {'one by one s':>13} {'side by side s':>15} "
        f"{'ratio':>6} {'mean 1x1 s':>11} {'mean sxs s':>11}"
    )
    for ranks in (64, 256, 1024):
        for jobs in (10, 100_000):
            rows = {False: [], True: []}
            for seed in range(args.repeats):
                for side_by_side in (False, True):
                    rows[side_by_side].append(timed(ranks, jobs, seed, side_by_side))
            one = np.median([t for t, _ in rows[False]])
            both = np.median([t for t, _ in rows[True]])
            print(
                f"{ranks:>6} {jobs:>7} {one:>13.4f} {both:>15.4f} {one / both:>6.1f} "
                f"{np.mean([v for _, v in rows[False]]):>11.4g} "
                f"{np.mean([v for _, v in rows[True]]):>11.4g}"
            )


if __name__ == "__main__":
    main()
