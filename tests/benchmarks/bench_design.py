"""Benchmark: the experiment design replayed on recorded campaigns, as an oracle.

Run:  python tests/benchmarks/bench_design.py [--store PATH.zarr ...]
          [--data DIR] [--series N] [--figure OUT.png]

Every series (one metric over node or process counts, with its repetitions) is a
recorded campaign: its largest count is the target and its held-out truth (the mean
there); the other counts are the *full grid*. Each strategy starts from every run of
the three smallest counts and draws one recorded run at a time from the rest of the
grid, refitting (:func:`scaleprobe.models.design.design_state`) after each, until the
interval at the target is as narrow as the full grid's (or the grid is spent):

- ``design``: the best candidate of :func:`scaleprobe.models.design.rank_candidates`
  (expected narrowing per predicted cost; cost law fitted to the drawn runs);
- ``random``: a random remaining run (seeded);
- ``largest``: a run of the largest count left.

Every interval (the full grid's and the replay's) widens with the distance to the
target by the factor calibrated on the extrapolation errors of the source's series,
pooled as the profile fit pools them (:func:`pooled_rate`), or by the campaign's own
factor where its counts were extrapolated worse (``design_state(..., pooled=)``).

A run's cost is its wall time x ranks where the store has it (``launch_time``), else
the measured time x the count (core-seconds of the measured program).

Sources: ``--store`` (default: the emulated Graph500 grid
``/work/records/g500/train.zarr`` when present; one series per scale and bandwidth)
and ``--data`` (default: ``SCALEPROBE_EXTERNAL_DATA``; the data sets of
``bench_external.py`` with at least six counts per series, read with
:func:`scaleprobe.models.profiles.read_profile`; at most ``--series`` series per
set, a seeded sample).

Prints per source and strategy: series, the median cost to reach the full grid's
width as a share of the full grid's cost, the share of series that got there with at
most 60 % of it, and the coverage of the held-out truth by the interval at the stop;
then the cost curves (median width / full width at shares of the full cost) as a
table, and as a figure with ``--figure``.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import warnings

import numpy as np
from scaleprobe.models import design
from scaleprobe.models.design import (
    Candidate,
    CostLaw,
    design_state,
    log_width,
    rank_candidates,
    target_interval,
)

STRATEGIES = ("design", "random", "largest")
SHARES = (0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0)
G500 = "/work/records/g500/train.zarr"


def store_series(path, metric="time"):
    """Series of a store: one per combination of the axes but nodes and run."""
    from scaleprobe.framework.store import ResultStore

    series = {}
    for result in ResultStore(path).results():
        if result.get("status") != "ok":
            continue
        coords = dict(result["coords"])
        value = result["record"]["metrics"].get(metric)
        wall = result.get("launch_time")
        if not value or not wall:
            continue
        nodes = coords.pop("nodes")
        coords.pop("run")
        name = " ".join(f"{k}={v}" for k, v in sorted(coords.items()))
        ranks = nodes * coords.get("ppn", 1)
        series.setdefault(name, {}).setdefault(float(nodes), []).append(
            (float(value), float(wall) * ranks)
        )
    return {name: _arrays(runs) for name, runs in series.items() if len(runs) >= 6}


def _arrays(runs):
    x = np.array(sorted(runs))
    values = [np.array([v for v, _ in runs[c]]) for c in x]
    costs = [np.array([c for _, c in runs[k]]) for k in x]
    return x, values, costs


def profile_series(path, limit, seed):
    """Series of a profile with at least six counts (a seeded sample of them)."""
    from scaleprobe.models.profiles import read_profile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = read_profile(path)
    found = {}
    for item in table.series():
        values = [np.asarray(v, dtype=float) for v in item.values]
        if len(values) < 6 or any(v.size == 0 or np.any(v <= 0) for v in values):
            continue
        x = np.asarray(item.x, dtype=float)
        found[item.name] = (x, values, [v * c for v, c in zip(values, x, strict=True)])
    names = sorted(found)
    if len(names) > limit:
        keep = np.random.default_rng(seed).choice(len(names), limit, replace=False)
        names = [names[i] for i in sorted(keep)]
    return {name: found[name] for name in names}


def _state(drawn, values, x, target, rate):
    counts = [c for c in range(len(x)) if drawn[c]]
    samples = [values[c][: drawn[c]] for c in counts]
    return design_state(x[counts], samples, target, pooled=rate)


def pooled_rate(series):
    """The factor of the intervals' distance term pooled over the series of a
    source, as the profile fit pools it over a profile's series: calibrated on
    every series' counts below its target (the target is never seen)."""
    return design.pooled_rate((x[:-1], values[:-1]) for x, values, _ in series.values())


def _next(strategy, state, drawn, x, values, costs, rng):
    """Index of the count the strategy draws a run of next."""
    left = [c for c in range(len(x)) if drawn[c] < values[c].size]
    if strategy == "random":
        weights = np.array([values[c].size - drawn[c] for c in left], dtype=float)
        return left[rng.choice(len(left), p=weights / weights.sum())]
    if strategy == "largest":
        return left[-1]
    measured = [c for c in range(len(x)) if drawn[c]]
    spent = [
        (x[c], x[c], costs[c][i] / x[c]) for c in measured for i in range(drawn[c])
    ]
    cost = CostLaw.fit(*zip(*spent, strict=True))
    candidates = [Candidate(float(x[c]), new=not drawn[c]) for c in left]
    best = rank_candidates(state, candidates, cost)[0].candidate.x
    return next(c for c in left if x[c] == best)


def replay(x, values, costs, strategy, seed=0, rate=None):
    """Replay one series; return the curve ``[(cost share, width)]``, the full
    grid's width, the share spent at the stop and whether the truth was covered."""
    target, truth = float(x[-1]), float(np.mean(values[-1]))
    x, values, costs = x[:-1], values[:-1], costs[:-1]
    total = float(sum(c.sum() for c in costs))
    full = math.exp(log_width(design_state(x, values, target, pooled=rate)))
    drawn = [v.size if i < 3 else 0 for i, v in enumerate(values)]
    rng = np.random.default_rng(seed)
    curve = []
    while True:
        state = _state(drawn, values, x, target, rate)
        spent = sum(costs[c][: drawn[c]].sum() for c in range(len(x))) / total
        width = math.exp(log_width(state))
        curve.append((spent, width))
        if width <= full * (1 + 1e-9) or all(
            d == v.size for d, v in zip(drawn, values, strict=True)
        ):
            lower, upper = target_interval(state)
            return curve, full, spent, lower <= truth <= upper
        drawn[_next(strategy, state, drawn, x, values, costs, rng)] += 1


def _at(curve, share):
    """Width of a curve once ``share`` of the cost is spent (its last before)."""
    widths = [w for s, w in curve if s <= share + 1e-12]
    return widths[-1] if widths else curve[0][1]


def evaluate(series):
    """Per strategy: shares at the stop, coverage, and the curves' medians."""
    out, rate = {}, pooled_rate(series)
    for strategy in STRATEGIES:
        stops, covered, curves = [], [], []
        for index, (x, values, costs) in enumerate(series.values()):
            curve, full, spent, hit = replay(
                x, values, costs, strategy, seed=index, rate=rate
            )
            stops.append(spent)
            covered.append(hit)
            curves.append([_at(curve, s) / full for s in SHARES])
        out[strategy] = {
            "stop": np.array(stops),
            "coverage": float(np.mean(covered)),
            "curve": np.median(np.array(curves), axis=0),
        }
    return out


def _print(source, count, result):
    print(f"\n{source}: {count} series")
    print(f"{'strategy':<9} {'median cost':>11} {'<= 60 %':>8} {'coverage':>9}")
    for strategy, row in result.items():
        print(
            f"{strategy:<9} {100 * np.median(row['stop']):10.0f}% "
            f"{100 * np.mean(row['stop'] <= 0.6):7.0f}% "
            f"{100 * row['coverage']:8.0f}%"
        )
    print("median width / full grid's width, at shares of the full grid's cost:")
    print(f"{'strategy':<9} " + " ".join(f"{100 * s:>6.0f}%" for s in SHARES))
    for strategy, row in result.items():
        print(f"{strategy:<9} " + " ".join(f"{v:7.2f}" for v in row["curve"]))


def _figure(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4 * len(results), 3.2))
    for ax, (source, result) in zip(np.atleast_1d(axes), results.items(), strict=True):
        for strategy, row in result.items():
            ax.plot([100 * s for s in SHARES], row["curve"], marker="o", label=strategy)
        ax.set_title(source, fontsize=9)
        ax.set_xlabel("cost spent (% of the full grid)")
        ax.set_yscale("log")
    np.atleast_1d(axes)[0].set_ylabel("width / full grid's width")
    np.atleast_1d(axes)[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nfigure: {path}")


def _sources(args):
    stores = args.store or ([G500] if os.path.exists(G500) else [])
    for path in stores:
        yield os.path.basename(path), store_series(path)
    data = args.data or os.environ.get("SCALEPROBE_EXTERNAL_DATA")
    for path in sorted(glob.glob(os.path.join(data or "", "*", "*"))):
        series = profile_series(path, args.series, seed=0) if data else {}
        if series:
            yield os.path.basename(os.path.dirname(path)), series


def main(argv=None):
    """Replay every source with every strategy and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="append", help="a results store")
    parser.add_argument("--data", help="folder of external data sets")
    parser.add_argument("--series", type=int, default=12, help="series per set")
    parser.add_argument("--figure", help="write the cost curves to this image")
    args = parser.parse_args(argv)
    results, pooled = {}, {s: [] for s in STRATEGIES}
    for source, series in _sources(args):
        result = evaluate(series)
        _print(source, len(series), result)
        results[source] = result
        for strategy in STRATEGIES:
            pooled[strategy].append(
                (result[strategy]["stop"], result[strategy]["coverage"], len(series))
            )
    print("\nall sources:")
    for strategy, rows in pooled.items():
        stops = np.concatenate([r[0] for r in rows]) if rows else np.array([np.nan])
        cover = sum(r[1] * r[2] for r in rows) / max(sum(r[2] for r in rows), 1)
        print(
            f"{strategy:<9} median cost {100 * np.median(stops):.0f}%, "
            f"{100 * np.mean(stops <= 0.6):.0f}% of series within 60 %, "
            f"coverage {100 * cover:.0f}%"
        )
    if args.figure and results:
        _figure(results, args.figure)


if __name__ == "__main__":
    main()
