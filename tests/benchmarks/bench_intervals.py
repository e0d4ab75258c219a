"""Coverage of scaleprobe's default prediction intervals far beyond the measured nodes.

For known laws inside and outside the families the models search, measurements are
simulated on 2..16 nodes (3 runs per node count, log-normal noise), the ensemble is
fitted exactly as ``scaleprobe fit`` does (``fit_ensemble``), and the interval of the
model it trusts is projected to 32..1024 nodes. The table gives, per law and distance,
the share of replications whose interval holds the noise-free truth, the median
upper/lower ratio (how wide the interval is), the median interval score (Winkler
1972; Gneiting and Raftery 2007) over the truth, so that coverage is never won by
width alone, and the median |error| of the point prediction. When nothing is
trusted, the ``pmnf`` law is projected by name (what a user who asks anyway sees)
and the refusal is counted.

Run: ``python tests/benchmarks/bench_intervals.py [--replications 40] [--noise 0.05]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

LAWS = {
    "100/p + 2/sqrt(p)": lambda p: 100 / p + 2 / np.sqrt(p),
    "100/p + 0.5 log2 p": lambda p: 100 / p + 0.5 * np.log2(p),
    "100/p + 0.02 p": lambda p: 100 / p + 0.02 * p,
    "5 + 100/p (Amdahl)": lambda p: 5 + 100 / p,
    "100/p^0.9 + 0.3 p^0.6": lambda p: 100 / p**0.9 + 0.3 * p**0.6,
    "100/p + 0.2 log2(p)^1.5": lambda p: 100 / p + 0.2 * np.log2(p) ** 1.5,
    # weak scaling: no trend, and one too small to show on 2..16 nodes
    "10 (weak, flat)": lambda p: 10 + 0 * p,
    "10 + 0.02 p (weak)": lambda p: 10 + 0.02 * p,
}
GRIDS = {"2..16 (7 counts)": [2, 3, 4, 6, 8, 12, 16], "2..16 (4 counts)": [2, 4, 8, 16]}
TARGETS = [32, 128, 1024]
ALPHA = 0.1  # the projections' intervals are 90 % intervals


def interval_score(low, high, truth, alpha):
    """The interval score (Winkler 1972) of ``[low, high]`` for ``truth``, over it.

    ``(high - low) + (2 / alpha) * (distance of the truth outside the interval)``,
    divided by the truth: the width, plus a penalty for a miss that grows with it.

    Examples
    --------
    >>> round(float(interval_score(0.9, 1.1, 1.0, 0.1)), 4)
    0.2
    >>> round(float(interval_score(0.9, 1.1, 1.2, 0.1)), 4)  # (0.2 + 20 * 0.1) / 1.2
    1.8333
    """
    low, high, truth = (np.asarray(v, dtype=float) for v in (low, high, truth))
    miss = np.maximum(low - truth, 0.0) + np.maximum(truth - high, 0.0)
    return ((high - low) + 2.0 / alpha * miss) / truth


def _one(law, nodes, noise, runs, rng):
    from scaleprobe.models import fit_ensemble

    rows = [(n, r) for n in nodes for r in range(runs)]
    X = pd.DataFrame(rows, columns=["nodes", "run"], dtype=float)
    X.insert(1, "ppn", 1.0)
    X.insert(2, "ranks", X["nodes"])
    y = law(X["nodes"].to_numpy()) * np.exp(noise * rng.standard_normal(len(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_ensemble((X, y))
        name = fit.selected or "pmnf"
        proj = fit.project(name, nodes=TARGETS)
    return (
        fit.selected,
        proj["time_predicted"].values.ravel(),
        proj["time_lower"].values.ravel(),
        proj["time_upper"].values.ravel(),
    )


def main(argv=None):
    """Print the coverage table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=40)
    parser.add_argument(
        "--noise",
        type=float,
        default=0.05,
        help="standard deviation of log time (default 0.05)",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--laws", nargs="*", help="subset of the law names")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    rows = []
    for grid_name, nodes in GRIDS.items():
        for law_name, law in LAWS.items():
            if args.laws and law_name not in args.laws:
                continue
            truth = law(np.asarray(TARGETS, dtype=float))
            covered = np.zeros(len(TARGETS))
            ratios, errors, scores, refused, chosen = [], [], [], 0, {}
            for _ in range(args.replications):
                selected, pred, low, high = _one(law, nodes, args.noise, args.runs, rng)
                refused += selected is None
                chosen[selected] = chosen.get(selected, 0) + 1
                covered += (low <= truth) & (truth <= high)
                ratios.append(high / low)
                scores.append(interval_score(low, high, truth, ALPHA))
                errors.append(np.abs(pred / truth - 1))
            ratios, errors = np.array(ratios), np.array(errors)
            scores = np.array(scores)
            for i, n in enumerate(TARGETS):
                rows.append(
                    {
                        "training": grid_name,
                        "law": law_name,
                        "nodes": n,
                        "coverage": covered[i] / args.replications,
                        "upper/lower": float(np.median(ratios[:, i])),
                        "score": float(np.median(scores[:, i])),
                        "median |error|": float(np.median(errors[:, i])),
                        "refused": refused / args.replications,
                        "selected": ", ".join(
                            f"{k or 'none'} {v}"
                            for k, v in sorted(chosen.items(), key=str)
                        ),
                    }
                )
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_colwidth", 40):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    worst = table["coverage"].min()
    print(
        f"\nlowest coverage: {worst:.2f} (target >= 0.85 at every distance); "
        f"{args.replications} replications per law, noise {args.noise:g}, "
        f"{time.perf_counter() - start:.0f} s"
    )


if __name__ == "__main__":
    main()
