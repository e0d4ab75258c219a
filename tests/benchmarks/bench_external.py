"""Benchmark: extrapolation on real measurements scaleprobe did not take, vs Extra-P.

Run:  python tests/benchmarks/bench_external.py --data DIR [--extrap PATH]
          [--dataset NAME ...] [--holdout 1 2] [--jobs N] [--csv OUT.csv]
      python tests/benchmarks/bench_external.py --data DIR --interior
      python tests/benchmarks/bench_external.py --from-cali *.cali --output F.jsonl

``DIR`` (default: the environment variable ``SCALEPROBE_EXTERNAL_DATA``) holds public
data sets, read with :func:`scaleprobe.models.load_measurements`:

- ``extrap-relearn/relearn_data.txt``: RELeARN, Extra-P text; Extra-P's
  ``tests/data/text/mpa/relearn_data.txt`` (github.com/extra-p/extrap, last
  changed in commit 916514ffa8cc194ddaab2a700835937c428d1cba; sha256 e76239bd...);
- ``extrap-mpi-collectives/mpi_data.csv``: latencies of seven collectives under
  Intel MPI and Open MPI on 32..512 ranks; Extra-P's ``tests/data/mpi_data.csv``
  (last changed in 66069c80ca4884c5c9790cb53ccce1a16a3f7445; sha256 aec53a14...);
- ``thicket-lulesh/lulesh.jsonl``: LULESH weak scaling on 27..343 ranks (one run
  each, MVAPICH2), Extra-P JSON Lines: the average inclusive time of every region
  of Thicket's ``thicket/tests/data/mpi_scaling_cali/*_cores.cali``
  (github.com/LLNL/thicket, MIT; the folder last changed in
  fcbdd202b644273599a9d27fb889987c18ba377a), written by ``--from-cali FILE...
  --output PATH`` (needs the ``caliper-reader`` package; sha256 15837a07...);
- seven more in ``DIR/<folder>/data.jsonl`` (:data:`JSONL`): CP2K on Piz Daint and on
  Jaguar, OpenCMISS weak scaling (two sets), PyClaw strong and weak scaling on
  Shaheen II, WAVETRISK on three machines; their sources, commits and conversion
  scripts are in ``external_data.md`` beside this file.

Every series (one callpath / collective / parameter value over the process counts)
is trained on its smaller process counts and predicts the largest one (``holdout
1``) or the two largest (``holdout 2``). Methods, on the same split:

- ``scaleprobe``: :func:`scaleprobe.models.profiles.fit_profile` on every series of
  the data set at once (one Dask graph), the law of each series and its 90 %
  interval; series it refuses are counted as ``refused`` (their best law is still
  scored), series on the naive trend as a fallback are counted apart;
- ``extrap``: Extra-P's default modeler (``extrap --text``, mean of repetitions),
  run from its own environment (``--extrap``, default ``extrap`` on PATH); skipped
  with a note when it is not installed;
- ``baseline``: the naive power law through the two largest training means.

Series whose values are not all positive, or that take less than 1 % of the
application's root time (the filter of Extra-P's case studies), are left out.

Prints, per data set and holdout, for each method: the number of series, the
median and largest |relative error| in percent at the held-out counts, the number
of series off by more than 60 % at any held-out count; for scaleprobe the refused
share, the coverage of its intervals, their median upper/lower, the width no
interval about its predictions could beat at 90 % (chosen in hindsight), the median
interval
score (Gneiting and Raftery 2007) over the measurement; the wall time of
scaleprobe's fit and of Extra-P's command. ``--interior`` judges the intervals
between measured counts instead: every interior count left out in turn.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

_MODEL_TEXT = re.compile(r"(?:[-+*/().\s0-9eEp]|log2)+")
OFF = 60.0  # percent: a series this far off at a held-out count is "off"
RELEVANT = 0.01  # share of the root time below which a callpath is left out


@dataclass
class Series:
    name: str
    ranks: np.ndarray  # sorted process counts
    values: list  # per count, the repeated measurements (1-d arrays)


def _series(ds, variable, name, dims=()):
    """One Series per combination of ``dims`` of ``ds[variable]`` over ranks."""
    out = []
    data = ds[variable]
    for combo in itertools.product(*(data[d].values for d in dims)):
        sub = data.sel(dict(zip(dims, combo, strict=True))) if dims else data
        sub = sub.transpose("ranks", "run")
        values = [row[np.isfinite(row)] for row in sub.values]
        label = "/".join(str(c) for c in combo)
        out.append(
            Series(f"{name}:{label}" if label else name, sub.ranks.values, values)
        )
    return out


def _relevant(series, root):
    """Keep positive series above RELEVANT of the root series at every count."""
    root_means = {r: np.mean(v) for r, v in zip(root.ranks, root.values, strict=True)}
    kept = []
    for s in series:
        if any(v.size == 0 for v in s.values):
            continue
        means = np.array([np.mean(v) for v in s.values])
        if not np.all(means > 0):
            continue
        share = min(m / root_means[r] for r, m in zip(s.ranks, means, strict=True))
        if share >= RELEVANT:
            kept.append(s)
    return kept


def relearn(data):
    from scaleprobe.models import load_measurements

    ds = load_measurements(os.path.join(data, "extrap-relearn", "relearn_data.txt"))
    series = []
    for n in ds.n.values:
        sub = ds.sel(n=n)
        root = _series(sub.sel(callpath="main()"), "time", "main()")[0]
        every = _series(sub, "time", f"n={n}", ("callpath",))
        series += _relevant(every, root)
    return series


def mpi_collectives(data):
    from scaleprobe.models import load_measurements

    ds = load_measurements(
        os.path.join(data, "extrap-mpi-collectives", "mpi_data.csv"),
        parameters=["mpi", "variable"],
        metrics=["median"],
        units="us",
    )
    return [
        s
        for s in _series(ds, "median", "median", ("mpi", "variable"))
        if all(np.all(v > 0) and v.size for v in s.values)
    ]


def lulesh(data):
    from scaleprobe.models import load_measurements

    ds = load_measurements(
        os.path.join(data, "thicket-lulesh", "lulesh.jsonl"), units="s"
    )
    ds = ds.drop_sel(callpath="lulesh2.0", errors="ignore")  # a root above main
    root = _series(ds.sel(callpath="main"), "time_avg", "main")[0]
    return _relevant(_series(ds, "time_avg", "time_avg", ("callpath",)), root)


#: Further public data sets in Extra-P JSON Lines (``DIR/<folder>/data.jsonl``), one
#: series per callpath over the process counts it was measured at: ``name: (folder,
#: root callpath for the relevance filter or None)``. Their sources and conversions
#: are in ``external_data.md`` beside this file.
JSONL = {
    "cp2k-dmls": ("cp2k-dmls-pizdaint", None),
    "cp2k-hfx": ("cp2k-lih-hfx-jaguar", None),
    "opencmiss-weak": ("opencmiss-cuboid-weak-neon", "Total"),
    "opencmiss-weak-59": ("opencmiss-cuboid-weak-neon-59reps", "Total"),
    "pyclaw-strong": ("pyclaw-sedov-strong-shaheen", "total job (max over ranks)"),
    "pyclaw-weak": ("pyclaw-sedov-weak-shaheen", "total job (max over ranks)"),
    "wavetrisk": ("wavetrisk-heldsuarez-strong", None),
}


def _callpath_series(ds):
    """One Series per callpath over the process counts it has values at."""
    out = []
    data = ds["time"]
    others = [d for d in data.dims if d not in ("ranks", "run", "callpath")]
    for callpath in data.callpath.values:
        sub = data.sel(callpath=callpath)
        if others:  # e.g. a problem size that the callpath name already fixes
            sub = sub.where(np.isfinite(sub), drop=True)
            sub = sub.max(others) if sub.size else sub
        if not sub.size:
            continue
        sub = sub.transpose("ranks", "run")
        rows = [
            (r, row[np.isfinite(row)])
            for r, row in zip(sub.ranks.values, sub.values, strict=True)
        ]
        rows = [(r, v) for r, v in rows if v.size]
        if len(rows) < 2:
            continue
        out.append(
            Series(str(callpath), np.array([r for r, _ in rows]), [v for _, v in rows])
        )
    return out


def _jsonl(name):
    folder, root_name = JSONL[name]

    def load(data):
        from scaleprobe.models import load_measurements

        ds = load_measurements(os.path.join(data, folder, "data.jsonl"), units="s")
        series = [
            s for s in _callpath_series(ds) if all(np.all(v > 0) for v in s.values)
        ]
        if root_name is None:
            return series
        root = next(s for s in series if s.name == root_name)
        return [
            s for s in _relevant(series, root) if np.array_equal(s.ranks, root.ranks)
        ]

    return load


DATASETS = {"relearn": relearn, "mpi-collectives": mpi_collectives, "lulesh": lulesh}
DATASETS.update({name: _jsonl(name) for name in JSONL})


def _dataset(series, counts):
    """A scaleprobe-layout Dataset of one series restricted to ``counts``."""
    keep = [i for i, r in enumerate(series.ranks) if r in set(counts)]
    runs = max(series.values[i].size for i in keep)
    cube = np.full((len(keep), runs), np.nan)
    for row, i in enumerate(keep):
        cube[row, : series.values[i].size] = series.values[i]
    return xr.Dataset(
        {"time": (("ranks", "run"), cube, {"units": "1", "long_name": series.name})},
        coords={"ranks": series.ranks[keep], "run": np.arange(runs)},
    )


def _naive(series, train, test):
    """The naive trend: the power law through the two largest training means."""
    (p1, y1), (p2, y2) = [(float(p), float(np.mean(v))) for p, v in train[-2:]]
    slope = math.log(y2 / y1) / math.log(p2 / p1)
    return {int(p): y2 * (float(p) / p2) ** slope for p in test}


def scaleprobe_predict(series_list, holdout, name):
    """Every series of a data set fitted at once by :func:`fit_profile` (one Dask
    graph) on its smaller counts; per series, the prediction, the 90 % interval and
    the verdict at its held-out counts, with the naive trend beside it."""
    from scaleprobe.models.profiles import ProfileTable, fit_profile

    rows = [
        (float(p), s.name, "time", run, float(value))
        for s in series_list
        for p, values in zip(s.ranks[:-holdout], s.values[:-holdout], strict=True)
        for run, value in enumerate(values)
    ]
    table = ProfileTable.from_rows(["p"], rows, source={"path": name}, ranks="p")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_profile(table)
    out = []
    for s in series_list:
        model = fit.model(s.name)
        test = np.asarray(s.ranks[-holdout:], dtype=float)
        lower, upper = model.interval(test)
        keys = [int(p) for p in test]
        train = list(zip(s.ranks[:-holdout], s.values[:-holdout], strict=True))
        out.append(
            {
                "scaleprobe": dict(zip(keys, model.predict(test), strict=True)),
                "baseline": _naive(s, train, test),
                "interval": dict(
                    zip(keys, zip(lower, upper, strict=True), strict=True)
                ),
                "refused": model.status == "refused",
                "fallback": model.status == "fallback",
                "model": model.law.label,
            }
        )
    return out


def _extrap_text(series_list, holdout, path):
    lines = ["PARAMETER p"]
    for index, s in enumerate(series_list):
        counts = s.ranks[:-holdout]
        if index == 0:
            lines.append("POINTS " + " ".join(f"( {int(c)} )" for c in counts))
            lines.append("METRIC m")
        lines.append(f"REGION s{index}")
        for i in range(len(counts)):
            lines.append("DATA " + " ".join(repr(float(v)) for v in s.values[i]))
    with open(path, "w") as stream:
        stream.write("\n".join(lines) + "\n")


def extrap_predict(series_list, holdout, executable):
    """Extra-P's default model of every series, evaluated at its held-out counts."""
    groups = {}
    for index, s in enumerate(series_list):
        groups.setdefault(tuple(s.ranks[:-holdout]), []).append(index)
    out = [None] * len(series_list)
    with tempfile.TemporaryDirectory() as tmp:
        for number, indices in enumerate(groups.values()):
            path = os.path.join(tmp, f"split{number}.txt")
            subset = [series_list[i] for i in indices]
            _extrap_text(subset, holdout, path)
            done = subprocess.run(
                [
                    executable,
                    "--text",
                    path,
                    "--disable-progress",
                    "--print",
                    "{callpath}|{model:python}",
                ],
                capture_output=True,
                text=True,
                timeout=3600,
                check=True,
            )
            for line in done.stdout.splitlines():
                if "|" not in line or not line.startswith("s"):
                    continue
                region, expression = line.split("|", 1)
                s = subset[int(region[1:])]
                out[indices[int(region[1:])]] = {
                    int(p): _evaluate(expression, p) for p in s.ranks[-holdout:]
                }
    return out


def _evaluate(expression, p):
    """Evaluate Extra-P's python-formatted model (numbers, p, log2, +-*/**)."""
    if not _MODEL_TEXT.fullmatch(expression.strip()):
        raise ValueError(f"unexpected Extra-P model text: {expression!r}")
    allowed = {"p": float(p), "log2": math.log2, "__builtins__": {}}
    return float(eval(expression, allowed))


def _errors(series, predictions):
    """Relative errors (percent) at the held-out counts, vs the mean measurement."""
    errors = []
    for r, v in zip(series.ranks, series.values, strict=True):
        if int(r) in predictions:
            errors.append(100.0 * (predictions[int(r)] / np.mean(v) - 1.0))
    return errors


def _interval_terms(series, intervals, alpha=0.1):
    """Per held-out count: whether the interval holds the mean measurement, its
    width (upper/lower) and its interval score relative to the measurement
    (Gneiting and Raftery 2007: width plus 2/alpha times the miss)."""
    held, ratios, scores = [], [], []
    for r, v in zip(series.ranks, series.values, strict=True):
        if int(r) in intervals:
            low, high = intervals[int(r)]
            y = float(np.mean(v))
            held.append(low <= y <= high)
            with np.errstate(divide="ignore"):
                ratios.append(high / low if low > 0 else np.inf)
            miss = max(low - y, 0.0) + max(y - high, 0.0)
            scores.append(((high - low) + 2.0 / alpha * miss) / y)
    return held, ratios, scores


def hindsight_width(errors, level=0.9):
    """The median upper/lower no interval centred on the predictions can beat
    and still hold ``level`` of the measurements: the narrowest band of one
    factor either side that does, chosen knowing them (errors in percent).

    >>> round(hindsight_width([10.0, -10.0, 0.0, 50.0], level=0.75), 3)
    1.235
    """
    logs = np.sort(np.abs(np.log1p(np.asarray(errors, dtype=float) / 100.0)))
    return float(np.exp(2.0 * logs[math.ceil(level * logs.size) - 1]))


def _summary(errors_by_series):
    flat = np.abs(np.concatenate([np.asarray(e, float) for e in errors_by_series]))
    worst = np.array([np.max(np.abs(e)) for e in errors_by_series])
    return {
        "series": len(errors_by_series),
        "median": float(np.median(flat)),
        "worst": float(np.max(flat)),
        f"off>{OFF:g}%": int(np.sum(worst > OFF)),
    }


def _timed(function, *args):
    start = time.perf_counter()
    out = function(*args)
    return out, time.perf_counter() - start


def _split(name, usable, holdout, executable):
    """The rows of one data set and split: one per method, and per series."""
    ours, seconds = _timed(scaleprobe_predict, usable, holdout, name)
    theirs, extrap_seconds = (
        _timed(extrap_predict, usable, holdout, executable)
        if executable
        else (None, None)
    )
    methods = {"scaleprobe": [], "baseline": [], "extrap": []}
    details = []
    for i, s in enumerate(usable):
        row = {"dataset": name, "holdout": holdout, "series": s.name}
        row.update(model=ours[i]["model"], refused=ours[i]["refused"])
        for method in ("scaleprobe", "baseline"):
            errors = _errors(s, ours[i][method])
            methods[method].append(errors)
            row[method] = max(errors, key=abs)
        if theirs is not None and theirs[i] is not None:
            errors = _errors(s, theirs[i])
            methods["extrap"].append(errors)
            row["extrap"] = max(errors, key=abs)
        details.append(row)
    held, ratios, scores = [], [], []
    for i, s in enumerate(usable):
        terms = _interval_terms(s, ours[i]["interval"])
        held, ratios, scores = held + terms[0], ratios + terms[1], scores + terms[2]
    refused = sum(o["refused"] for o in ours)
    extra = {
        "scaleprobe": {
            "refused": refused / len(usable),
            "coverage": float(np.mean(held)),
            "width": float(np.median(ratios)),
            "hindsight": hindsight_width(np.concatenate(methods["scaleprobe"])),
            "score": float(np.median(scores)),
            "seconds": seconds,
        },
        "extrap": {"seconds": extrap_seconds},
    }
    table = [
        {"method": method, **_summary(errors), **extra.get(method, {})}
        for method, errors in methods.items()
        if errors
    ]
    fallback = sum(o["fallback"] for o in ours)
    print(
        f"\n{name}: train on {usable[0].ranks[:-holdout].tolist()}..., predict "
        f"the {holdout} largest ({usable[0].ranks[-holdout:].tolist()}); "
        f"{refused} of {len(usable)} series refused, {fallback} on the naive "
        "trend as a fallback"
    )
    return table, details


def interior(name, series):
    """Leave-one-out inside the data: every interior count of every series left out
    in turn (the counts of all series fitted at once), its interval judged there.

    Returns the row of the data set: interior points, coverage, median width and
    median interval score.
    """
    from scaleprobe.models.profiles import ProfileTable, fit_profile

    held, ratios, scores = [], [], []
    for i in range(1, max(len(s.ranks) for s in series) - 1):
        inner = [s for s in series if i < len(s.ranks) - 1]
        rows = [
            (float(p), s.name, "time", run, float(value))
            for s in inner
            for j, (p, values) in enumerate(zip(s.ranks, s.values, strict=True))
            if j != i
            for run, value in enumerate(values)
        ]
        table = ProfileTable.from_rows(["p"], rows, source={"path": name}, ranks="p")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_profile(table)
        for s in inner:
            lower, upper = fit.model(s.name).interval([float(s.ranks[i])])
            terms = _interval_terms(s, {int(s.ranks[i]): (lower[0], upper[0])})
            held, ratios, scores = held + terms[0], ratios + terms[1], scores + terms[2]
    return {
        "dataset": name,
        "points": len(held),
        "coverage": float(np.mean(held)),
        "width": float(np.median(ratios)),
        "score": float(np.median(scores)),
    }


def run(args):
    if args.interior:
        table = [interior(name, DATASETS[name](args.data)) for name in args.dataset]
        print(pd.DataFrame(table).to_string(index=False, float_format=_format))
        print(
            "\npoints: interior counts left out, one at a time, over the series; "
            "coverage: share of them inside the 90 % interval of the fit without "
            "them; width: median upper/lower; score: median interval score over "
            "the measurement"
        )
        return table
    executable = args.extrap or shutil.which("extrap")
    if executable and not os.path.exists(executable):
        executable = shutil.which(executable)
    if not executable:
        print("skip extrap: Extra-P is not installed (pass --extrap PATH)")
    rows, details = [], []
    for name in args.dataset:
        series = DATASETS[name](args.data)
        for holdout in args.holdout:
            usable = [s for s in series if len(s.ranks) >= holdout + 3]
            if not usable:
                print(f"skip {name} holdout {holdout}: fewer than 3 training counts")
                continue
            table, more = _split(name, usable, holdout, executable)
            details += more
            rows += [{"dataset": name, "holdout": holdout, **r} for r in table]
            frame = pd.DataFrame(table)
            print(frame.to_string(index=False, na_rep="-", float_format=_format))
    print(
        "\nmedian/worst: |relative error| (%) at the held-out counts; refused: "
        "share of series; coverage: share of held-out counts inside scaleprobe's "
        "90 % interval; width: its median upper/lower; hindsight: the narrowest "
        "band about scaleprobe's predictions, one factor either side, that holds 90 % "
        "of the measurements, chosen knowing them; score: median interval "
        "score over the measurement; seconds: wall time of the fit (extrap: "
        "its command, start-up included)"
    )
    if args.csv:
        pd.DataFrame(details).to_csv(args.csv, index=False)
        print(f"\nper-series errors (percent, worst held-out count): {args.csv}")
    return rows


def _format(value):
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def cali_to_jsonl(files, output):
    """Write the average inclusive time of every region path of Caliper files
    (one per process count, ``mpi.world.size``) as Extra-P JSON Lines."""
    import json

    import caliperreader

    with open(output, "w", encoding="utf-8") as out:
        for path in files:
            reader = caliperreader.CaliperReader()
            reader.read(path)
            ranks = int(reader.globals["mpi.world.size"])
            for record in reader.records:
                if "path" not in record:
                    continue
                region = record["path"]
                region = region if isinstance(region, list) else [region]
                value = float(record["avg#inclusive#sum#time.duration"])
                line = {
                    "params": {"p": ranks},
                    "callpath": "->".join(region),
                    "metric": "time_avg",
                    "value": value,
                }
                out.write(json.dumps(line) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from-cali", nargs="+", help="Caliper files to convert")
    parser.add_argument("--output", help="JSON Lines file --from-cali writes")
    parser.add_argument(
        "--data",
        default=os.environ.get("SCALEPROBE_EXTERNAL_DATA"),
        help="directory of the external data sets (see above)",
    )
    parser.add_argument("--extrap", help="the extrap command (default: on PATH)")
    parser.add_argument(
        "--dataset", nargs="+", choices=sorted(DATASETS), default=list(DATASETS)
    )
    parser.add_argument("--holdout", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--jobs", type=int, default=1, help="ignored (one graph)")
    parser.add_argument("--csv", help="write per-series errors to this CSV")
    parser.add_argument(
        "--interior",
        action="store_true",
        help="judge the intervals between measured counts (leave one out)",
    )
    args = parser.parse_args(argv)
    if args.from_cali:
        if not args.output:
            parser.error("--from-cali needs --output PATH")
        cali_to_jsonl(args.from_cali, args.output)
        return 0
    if not args.data or not os.path.isdir(args.data):
        print(
            "skip: no external data directory (pass --data DIR or set "
            "SCALEPROBE_EXTERNAL_DATA)"
        )
        return 0
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
