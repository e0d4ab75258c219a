"""Score the model ensemble on a measured sweep (Graph500): extrapolation, coverage.

Run:  python tests/benchmarks/models.py RESULTS [--s0 25] [--workers 2]
      python tests/benchmarks/models.py --synthetic      # no sweep at hand

Prints, per ensemble member, the random 5-fold and the extrapolation scores (train on
the small node counts, test on the larger ones), the empirical coverage of the 90 %
conformal intervals on the held-out points, and the member selected by extrapolation.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", help="results path (.zarr or .nc)")
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="use the synthetic Eq. 7 sweep of bench_models_cv.py",
    )
    parser.add_argument("--target", default="time")
    parser.add_argument("--s0", type=float, default=25)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--groupby", help="evaluate per value of this feature")
    args = parser.parse_args(argv)
    if not args.results and not args.synthetic:
        parser.error("give RESULTS or --synthetic")

    from distributed import Client, LocalCluster
    from scaleprobe.models import make_features
    from scaleprobe.models.ensemble.fit import default_ensemble
    from scaleprobe.models.evaluation.crossval import (
        default_cv,
        evaluate,
        select_model,
        summarize,
    )

    if args.synthetic:
        sys.path.insert(0, os.path.dirname(__file__))
        from bench_models_cv import synthetic_sweep

        ds = synthetic_sweep(5000)
    else:
        from scaleprobe.framework.store import open_results

        ds = open_results(args.results)
    X, y = make_features(ds, target=args.target, s0=args.s0)
    models = default_ensemble(X, s0=args.s0)
    print(
        f"{len(y)} points; nodes {sorted(X['nodes'].unique().tolist())}; "
        f"columns {list(X.columns)}",
        file=sys.stderr,
    )
    start = time.perf_counter()
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        scores = evaluate(
            models, (X, y), cv=default_cv(), groupby=args.groupby, client=client
        )
    elapsed = time.perf_counter() - start
    table = summarize(scores)
    columns = [
        "model",
        "cv",
        "smape",
        "mape",
        "max_relative_error",
        "within_10",
        "within_30",
        "r2",
        "coverage",
    ]
    print(table[columns].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(
        f"\nselected (extrapolation SMAPE): {select_model(scores)}; "
        f"evaluated in {elapsed:.1f} s on {args.workers} workers"
    )


if __name__ == "__main__":
    main()
