"""The communication predictor, evaluated as in Papadopoulou et al. 2015 (section IV).

Training: the random ping-pong sweep of ``commpredictor_training.yaml`` (2-16
emulated nodes, 1-4 ranks per node, 1-4 partners, 128 B to 16 MiB, compact and random
allocations on a 1404-node machine of 18 nodes per switch and 4 switches per rack,
uplinks oversubscribed 2:1), run through ``run_sweep`` into ``--workdir`` (it
resumes: a finished sweep is only read). Test (``--test-set``): ``stencil.jacobi3d``
(halo exchange) and ``stencil.advection3d`` (wavefront) over several domain sizes at
8 to 64 nodes (4x the largest trained), on the same emulated machine, compact and
random allocations: ``original``, the first evaluation's 42 phases (64^3-256^3 at
8-64 nodes), or ``fresh``, 20 phases at node counts, ranks per node and domains it
never measured (96^3 and 224^3 at 12-48 nodes), or ``quick``. For every test point
the metrics are computed from the description of its phase and its mapping and the
time predicted *before* the kernel runs; then it runs and its ``exchange_time`` is
measured (virtual time makes 64 nodes honest on a small host); measurements are kept
in ``--workdir`` (``stencil_<set>.json``), so an interrupted run goes on.

Two predictors: ``predictor`` on the paper's 13 metrics, and ``predictor+NTmax``,
which is also offered ``NTmax``, the inter-node bytes of the busiest node (a phase
ends when its busiest node has finished; a stencil's inner nodes carry up to 1.7x
the mean ``NT``, the benchmark's random pairings at most 1.33x). Training results
measured before the benchmark recorded ``NTmax`` get it from their seeded pattern,
checked against every run that recorded it.

Printed, as the paper reports (29 % mean |relative error| and 60 % within +-30 %
there; the goal here <= 20 % and >= 75 %): per model the mean |relative error|, the
share within +-30 %, the errors per area and per kernel; the baselines side by side:
Hockney per message (``a + S / b``), LogGP-like per process (``L + g (M - 1) + G M
S``), both fitted on the same benchmark, and gradient boosting on the paper's
metrics; then every test point. ``--plot`` writes a Fig. 2-style figure of
``predictor+NTmax``: observed against predicted time per area, with the +-30 % band.
Usage::

    python tests/benchmarks/bench_commpredictor.py [--workdir DIR] [--plot fig.png]
        [--test-set original|fresh|quick] [--iterations 10]

The training sweep is 576 launches (about an hour and a half on two cores); it can
also be run and fitted from the command line::

    scaleprobe run tests/benchmarks/commpredictor_training.yaml --output DIR/t.zarr
    scaleprobe fit DIR/t.zarr --model commpredictor --output comm.json
    scaleprobe project comm.json --stencil jacobi3d --shape 256,256,256 --nodes 64
        --ppn 2 --allocation random --machine-nodes 1404 --nodes-per-switch 18
        --switches-per-rack 4
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scaleprobe.framework import run_sweep
from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.framework.spec import load_spec
from scaleprobe.kernels.comm.pattern import METRICS, CommPattern
from scaleprobe.kernels.commbench.random_pingpong import random_partners
from scaleprobe.kernels.schema import Record
from scaleprobe.models import CommunicationPredictor
from scaleprobe.models.commpredictor.patterns import benchmark_frame, pattern_metrics
from scaleprobe.models.core.warnings import quiet
from sklearn.ensemble import HistGradientBoostingRegressor

SPEC = Path(__file__).with_name("commpredictor_training.yaml")


def train(workdir, spec):
    """The benchmark's results (run or resumed) as training rows, with ``NTmax``."""
    ds = run_sweep(
        spec, output=Path(workdir) / "commpredictor_training.zarr", progress=False
    )
    X, y = benchmark_frame(ds)  # checks the results and names what they lack
    names = [*METRICS, "exchange_time", "status"]
    names += ["NTmax"] if "NTmax" in ds.data_vars else []
    frame = ds[names].to_dataframe().reset_index()
    frame = frame[frame["status"].astype(str) == "ok"]
    frame = frame.dropna(subset=[*METRICS, "exchange_time"])
    assert np.array_equal(frame["exchange_time"].to_numpy(dtype=float), y)
    recorded = frame.get("NTmax", pd.Series(np.nan, index=frame.index))
    recorded = recorded.to_numpy(dtype=float)
    X["NTmax"] = busiest_node(frame, recorded)
    return X, y


def busiest_node(frame, recorded):
    """``NTmax`` of every training run, from its pattern (it needs no measurement).

    Results measured before the benchmark recorded ``NTmax`` lack it; it is a
    property of the pattern (the seeded matchings) and the ranks per node, so it is
    computed here as the kernel computes it, and checked against every run that
    recorded it.
    """
    values = np.empty(len(frame))
    for i, (_, row) in enumerate(frame.iterrows()):
        ranks, messages = int(row["nodes"]) * int(row["ppn"]), int(row["messages"])
        partners = random_partners(ranks, messages, seed=0)
        pattern = CommPattern.from_partners(
            [[p for p in mine if p >= 0] for mine in partners], int(row["msg_bytes"])
        )
        values[i] = pattern.metrics(ppn=int(row["ppn"]))["NTmax"]
    known = np.isfinite(recorded)
    if not np.allclose(values[known], recorded[known]):
        raise SystemExit("NTmax computed from the pattern differs from the records")
    print(
        f"NTmax: {int(known.sum())} runs recorded it, equal to the pattern's; "
        f"{int((~known).sum())} computed from the pattern"
    )
    return values


#: Test phases: the first evaluation's, and phases at node counts, ranks per node and
#: domains none of it measured (so a change chosen after the first evaluation is
#: judged on phases it has not seen).
TEST_SETS = {
    "original": (
        [(8, 2), (16, 1), (16, 4), (32, 1), (32, 2), (64, 1), (64, 2)],
        (64, 128, 256),
        0,
    ),
    "fresh": ([(12, 2), (24, 1), (24, 2), (48, 1), (48, 2)], (96, 224), 1000),
    "quick": ([(8, 2), (32, 1), (64, 1)], (96,), 0),
}


def test_points(name):
    """(kernel, nodes, ppn, domain, placement, seed) of every run of a test set."""
    shapes, domains, first_seed = TEST_SETS[name]
    points = []
    grid = itertools.product(("jacobi3d", "advection3d"), shapes, domains)
    for seed, (kernel, (nodes, ppn), domain) in enumerate(grid, start=first_seed):
        points.append(
            (kernel, nodes, ppn, domain, ("compact", "random")[seed % 2], seed)
        )
    return points


def describe(spec, point):
    """The phase and mapping of a test point, as a user would describe it."""
    kernel, nodes, ppn, domain, placement, seed = point
    topology = spec.throttle.topology
    return {
        "pattern": {"stencil": kernel, "shape": [domain] * 3, "ranks": nodes * ppn},
        "mapping": {
            "ppn": ppn,
            "allocation": placement,
            "machine_nodes": spec.throttle.allocation["machine_nodes"],
            "nodes_per_switch": topology["nodes_per_switch"],
            "switches_per_rack": topology["switches_per_rack"],
            "seed": seed,
        },
    }


def measure(spec, point, iterations):
    """Run a test point; its record's metrics."""
    kernel, nodes, ppn, domain, placement, seed = point
    throttle = spec.throttle
    env = child_environment(threads=1)
    env["SCALEPROBE_LINK"] = json.dumps(
        {
            "mode": "emulated",
            "ppn": ppn,
            "link_bandwidth": throttle.link_bandwidth,
            "latency": throttle.latency,
            "core_slots": 0,
            "topology": throttle.topology,
            "allocation": {**throttle.allocation, "placement": placement, "seed": seed},
        }
    )
    done = subprocess.run(
        [
            resolve_mpiexec(),
            "-n",
            str(nodes * ppn),
            sys.executable,
            "-m",
            f"scaleprobe.kernels.stencil.{kernel}",
            "--nx",
            str(domain),
            "--ny",
            str(domain),
            "--nz",
            str(domain),
            "--iterations",
            str(iterations),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=7200,
        check=False,
    )
    record = Record.parse(done.stdout).to_dict()
    if record.get("status") != "ok":
        raise SystemExit(f"{point}: {record.get('reason')} {done.stderr[-500:]}")
    return record["metrics"]


def baselines(X, y):
    """Hockney, LogGP-like and gradient-boosting predictors fitted on the benchmark."""
    # Hockney: one message, a + S / b, least squares on relative error
    hockney = np.linalg.lstsq(
        np.column_stack([np.ones(len(X)), X["S"]]) / y[:, None],
        np.ones(len(X)),
        rcond=None,
    )[0]
    # LogGP-like: L + g (M - 1) + G M S per process
    design = np.column_stack([np.ones(len(X)), X["M"] - 1, X["M"] * X["S"]])
    loggp = np.linalg.lstsq(design / y[:, None], np.ones(len(X)), rcond=None)[0]
    boosted = HistGradientBoostingRegressor(random_state=0).fit(
        np.log1p(X[list(METRICS)]), np.log(y)
    )
    return {
        "hockney": lambda T: hockney[0] + hockney[1] * T["S"],
        "loggp": lambda T: (
            loggp[0] + loggp[1] * (T["M"] - 1) + loggp[2] * T["M"] * T["S"]
        ),
        "boosting": lambda T: np.exp(boosted.predict(np.log1p(T[list(METRICS)]))),
    }


def _mean(values):
    """Mean of the values predicted (NaN: the model could not tell)."""
    return np.nanmean(values) if np.isfinite(values).any() else np.nan


def table(predictions, observed, area, kernel):
    """Per model: mean |relative error| over the phases it predicted, share within
    30 % of all phases (one it cannot tell, NaN, is not within), per area and
    kernel, and how many it could not tell."""
    print(
        f"\n{'model':<10} {'mean|err|':>9} {'within30%':>9}  per area mean|err| "
        "(n) | per kernel"
    )
    for name, predicted in predictions.items():
        error = np.abs((predicted - observed) / observed)
        parts = [
            f"{a}: {100 * _mean(error[area == a]):.0f} % (n={int((area == a).sum())})"
            for a in np.unique(area)
        ]
        parts += [
            f"{k}: {100 * _mean(error[kernel == k]):.0f} %" for k in np.unique(kernel)
        ]
        unknown = int(np.isnan(error).sum())
        if unknown:
            parts.append(f"cannot tell: {unknown}")
        print(
            f"{name:<10} {100 * _mean(error):>8.1f}% "
            f"{100 * np.mean(error <= 0.3):>8.0f}%  " + "  ".join(parts)
        )


def plot(path, observed, predicted, area, kernel):
    """Observed against predicted per area (the paper's Fig. 2), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [a for a in ("Ia", "Ib", "II") if (area == a).any()]
    figure, axes = plt.subplots(1, len(names) + 1, figsize=(4 * (len(names) + 1), 4))
    for axis, name in zip(axes, [*names, "all"], strict=True):
        rows = np.ones(len(area), bool) if name == "all" else area == name
        for k, marker in (("jacobi3d", "o"), ("advection3d", "^")):
            mine = rows & (kernel == k)
            axis.loglog(
                observed[mine], predicted[mine], marker, ms=4, alpha=0.7, label=k
            )
        low = min(observed[rows].min(), predicted[rows].min()) / 1.5
        high = max(observed[rows].max(), predicted[rows].max()) * 1.5
        span = np.array([low, high])
        axis.plot(span, span, "k-", lw=0.8)
        axis.fill_between(span, span * 0.7, span * 1.3, color="0.85", zorder=0)
        error = np.abs(predicted[rows] - observed[rows]) / observed[rows]
        label = "all areas" if name == "all" else f"area {name}"
        axis.set_title(
            f"{label}: mean |err| {100 * error.mean():.0f} %, "
            f"{100 * np.mean(error <= 0.3):.0f} % in ±30 %",
            fontsize=9,
        )
        axis.set_xlabel("observed exchange time (s)")
        axis.set_ylabel("predicted (s)")
    axes[0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"\nfigure: {path}")


def measured(spec, points, iterations, path):
    """Each test point's record metrics: measured now, or read from ``path``.

    Every measurement is added to ``path`` (JSON) as soon as it is taken, so an
    interrupted run goes on where it stopped.
    """
    path = Path(path)
    done = json.loads(path.read_text()) if path.exists() else {}
    out = []
    for point in points:
        key = f"{'/'.join(map(str, point))}/iterations={iterations}"
        if key not in done:
            done[key] = measure(spec, point, iterations)
            path.write_text(json.dumps(done, indent=1))
        out.append(done[key])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workdir",
        default="bench_commpredictor",
        help="folder of the training results and test measurements (resumed)",
    )
    parser.add_argument("--spec", default=str(SPEC), help="training sweep spec")
    parser.add_argument("--plot", help="write the Fig. 2-style figure (.png)")
    parser.add_argument(
        "--test-set",
        choices=sorted(TEST_SETS),
        default="original",
        help="stencil phases to predict and measure",
    )
    parser.add_argument(
        "--iterations", type=int, default=10, help="iterations of every stencil run"
    )
    args = parser.parse_args()
    start = time.monotonic()
    spec = load_spec(args.spec)
    X, y = train(args.workdir, args.spec)
    print(
        f"training: {len(y)} random ping-pong runs, nodes "
        f"{sorted(X['N'].unique().astype(int).tolist())}, "
        f"{time.monotonic() - start:.0f} s"
    )
    variants = {"predictor": list(METRICS), "predictor+NTmax": [*METRICS, "NTmax"]}
    models = {
        name: CommunicationPredictor().fit(X[columns], y)
        for name, columns in variants.items()
    }
    for name, model in models.items():
        print(f"{name}:\n{model.describe()}")
    print(
        "Pearson r with time: "
        + ", ".join(
            f"{k} {v:+.2f}"
            for k, v in models["predictor+NTmax"].correlations_.items()
            if np.isfinite(v)
        )
    )
    points = test_points(args.test_set)
    rows = pd.concat(
        [pattern_metrics(describe(spec, p), [*METRICS, "NTmax"]) for p in points],
        ignore_index=True,
    )
    with quiet():  # the test phases lie beyond the trained nodes: it extrapolates
        ahead = {
            name: model.predict(rows[variants[name]]) for name, model in models.items()
        }
    beyond = models["predictor+NTmax"].beyond_area(rows[variants["predictor+NTmax"]])
    outside = sorted(
        {name for name in rows if rows[name].max() > X[name].max() * (1 + 1e-9)}
    )
    print(
        f"\npredicted ahead of execution: {len(points)} stencil phases "
        f"({args.test_set}); beyond the trained range in "
        f"{', '.join(outside) or 'nothing'}"
    )
    records = measured(
        spec,
        points,
        args.iterations,
        Path(args.workdir) / f"stencil_{args.test_set}.json",
    )
    for point, metrics, (_, row) in zip(points, records, rows.iterrows(), strict=True):
        # the kernel reports the metrics of the phase it ran: the same as described
        assert all(np.isclose(metrics[n], row[n]) for n in METRICS), (point, metrics)
    observed = np.array([metrics["exchange_time"] for metrics in records])
    area = models["predictor"].area_names(rows[list(METRICS)])
    kernel = np.array([p[0] for p in points])
    predictions = {
        **ahead,
        **{
            name: np.asarray(f(rows), dtype=float)
            for name, f in baselines(X, y).items()
        },
    }
    print(f"\n{len(points)} test runs; their reported metrics equal the described ones")
    table(predictions, observed, area, kernel)
    for name in ("jacobi3d", "advection3d"):
        mine = kernel == name
        table(
            {k: v[mine] for k, v in predictions.items()},
            observed[mine],
            area[mine],
            kernel[mine],
        )
    print(
        f"\n{'kernel':>11} {'N':>3} {'PPN':>3} {'domain':>6} {'alloc':>7} "
        f"{'area':>4} {'NT':>10} {'NTmax':>10} {'SW':>3} {'measured s':>11} "
        f"{'predictor':>11} {'err':>6} {'+NTmax':>11} {'err':>6} beyond area"
    )
    for i, point in enumerate(points):
        o = observed[i]
        p, q = ahead["predictor"][i], ahead["predictor+NTmax"][i]
        print(
            f"{point[0]:>11} {point[1]:>3} {point[2]:>3} {point[3]:>6} "
            f"{point[4]:>7} {area[i]:>4} {rows['NT'][i]:>10.0f} "
            f"{rows['NTmax'][i]:>10.0f} {int(rows['SW'][i]):>3} {o:>11.3e} "
            f"{p:>11.3e} {100 * (p - o) / o:>5.0f}% {q:>11.3e} "
            f"{100 * (q - o) / o:>5.0f}% {'yes' if beyond[i] else ''}"
        )
    error = np.abs(ahead["predictor+NTmax"] - observed) / observed
    for flagged, what in ((True, "warned"), (False, "not warned")):
        mine = beyond == flagged
        if mine.any():
            print(
                f"predictor+NTmax, {what} that a phase lies beyond its area's "
                f"training rows in a metric of the area's law: {int(mine.sum())} "
                f"phases, mean |err| {100 * error[mine].mean():.1f} %, largest "
                f"{100 * error[mine].max():.0f} %"
            )
    if args.plot:
        plot(args.plot, observed, ahead["predictor+NTmax"], area, kernel)
    print(
        f"\nwall time {time.monotonic() - start:.0f} s, load average "
        f"{os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
