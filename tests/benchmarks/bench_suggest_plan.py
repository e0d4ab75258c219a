"""Benchmark: how long ``scaleprobe suggest`` takes to plan, by candidates and budget.

Run:  python tests/benchmarks/bench_suggest_plan.py [--repeats 3]

``suggest`` offers the measured counts as repeats and, as new counts, powers of two
and, on a grid of squares or cubes of ranks, every square or cube up to four times
the largest measured count; :func:`scaleprobe.models.design.plan_design` then picks
greedily, re-ranking every candidate after each pick. The time grows with the
candidates times the picks, and the picks with the budget over a run's cost. For a
series measured on a grid of squares (1-64 ranks, three runs each, a known law with
5 % noise) projected to 4096, the table prints the median wall time of the plan over
``--repeats`` for 10, 40 and 130 new counts (a grid of the squares 1-1024 is offered
38: the 32 squares up to 4096 it lacks and 6 powers of two; 130 squares are offered
to a grid that reaches 130**2 ranks) and budgets of 60 and 600 one-minute runs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from scaleprobe.models.design import Candidate, CostLaw, design_state, plan_design

NEW_COUNTS = (10, 40, 130)
BUDGETS = (3600.0, 36000.0)


def _state():
    """A series on the squares 1-64 with three runs each, projected to 4096."""
    rng = np.random.default_rng(0)
    counts = [float(side**2) for side in range(1, 9)]
    law = [10.0 / c + 0.1 * np.log2(c) for c in counts]
    samples = [list(v * np.exp(rng.normal(0.0, 0.05, 3))) for v in law]
    cost = CostLaw.fit(counts, counts, [60.0] * len(counts))
    return design_state(counts, samples, 4096), counts, cost


def main(argv=None):
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    state, counts, cost = _state()
    print(f"plausible laws: {len(state.laws)}; runs of 60 s")
    print(f"{'new counts':>10} {'budget':>8} {'picks':>6} {'seconds':>8}")
    for new in NEW_COUNTS:
        candidates = [Candidate(c, new=False) for c in counts] + [
            Candidate(float(side**2)) for side in range(9, 9 + new)
        ]
        for budget in BUDGETS:
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                design = plan_design(state, candidates, cost, wall_budget=budget)
                times.append(time.perf_counter() - start)
            seconds = statistics.median(times)
            hours = budget / 3600
            print(f"{new:>10} {hours:>6.0f} h {len(design.plan):>6} {seconds:>8.2f}")


if __name__ == "__main__":
    main()
