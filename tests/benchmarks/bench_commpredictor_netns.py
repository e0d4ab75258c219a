"""The communication predictor on real shaped links: network namespaces and TCP.

Papadopoulou et al. 2015 train their predictor on a random ping-pong benchmark and
predict the halo exchanges of programs on a real network. Here every node is a
network namespace of this host (``throttle: {mode: netns}``): MPICH talks TCP through
a veth pair and a bridge, each node's link shaped by ``htb`` to ``--link`` (100
Mbit/s by default, well below what this host's TCP path between namespaces carries),
its ranks share memory. Nothing of it is scaleprobe's link model: the times are what
the kernel, TCP and the shaper make of the bytes.

Everything goes through the command line, as a user would run it:

1. How many namespaces this host holds: a network of 8, 16, 32 and 64 namespaces
   is built and removed (``--namespaces``), with the time it took.
2. Training: ``scaleprobe run`` of the random non-blocking ping-pong
   (``commbench.random_pingpong``: every rank with 1-4 random partners at once) on 2
   and 4 nodes, 1-2 ranks per node, 128 B to 256 KiB, two seeds of the matchings.
3. ``scaleprobe fit --model commpredictor --metrics paper`` and ``--metrics
   paper+ntmax``.
4. Test: ``scaleprobe run`` of one ``stencil.jacobi3d`` and ``stencil.advection3d``
   phase per point at 8 nodes (2x the largest trained) with 1 and 2 ranks per node and
   at 16 nodes (4x) with 1, domains 64^3 to 256^3; each predicted with ``scaleprobe
   project MODEL --stencil K --shape D,D,D --nodes N --ppn P``, and its recorded
   pattern checked against the described one.

This host has two cores: 16 single-rank namespaces put 8 ranks on a core, so the
16-node phases measure CPU sharing as well as the links (the table says it per node
count). Results are kept in ``--workdir`` (a finished run is only read).

Printed: per model (the two predictors, Hockney, LogGP-like and gradient boosting
on the same training runs, as in ``bench_commpredictor.py``) the mean |relative
error|, the share within +-30 %, per area and stencil; per node count; every phase.
Usage::

    sudo python tests/benchmarks/bench_commpredictor_netns.py [--workdir DIR]
        [--link '100 Mbit/s'] [--iterations 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
import yaml
from scaleprobe.framework.netns import close_network, netns_unavailable, open_network
from scaleprobe.kernels.comm.pattern import METRICS
from scaleprobe.models.commpredictor.patterns import benchmark_frame, pattern_metrics

sys.path.insert(0, str(Path(__file__).parent))
from bench_commpredictor import baselines, table
from bench_commpredictor_smpi import quietly

SCALEPROBE = Path(sys.executable).with_name("scaleprobe")
#: (kernel, nodes, ppn, domain) of every test phase.
PHASES = [
    (kernel, nodes, ppn, domain)
    for kernel in ("jacobi3d", "advection3d")
    for nodes, ppn in ((8, 1), (8, 2), (16, 1))
    for domain in (64, 128, 256)
]


def namespaces(counts):
    """Build and remove a network of each size; the seconds it took, or the error."""
    print("\nnamespaces  build+remove s")
    for count in counts:
        start = time.monotonic()
        try:
            close_network(open_network(count))
        except Exception as error:
            print(f"{count:>10}  failed: {str(error)[:120]}")
            break
        print(f"{count:>10}  {time.monotonic() - start:.1f}")


def run(spec, workdir, name):
    """``scaleprobe run`` of a spec (skipped when its results exist); the Dataset."""
    output = Path(workdir) / f"{name}.zarr"
    if not output.exists():
        path = Path(workdir) / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**spec, "name": name}, sort_keys=False))
        done = subprocess.run(
            [SCALEPROBE, "run", path, "--output", output],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode:
            raise SystemExit(f"scaleprobe run {name}: {done.stderr[-1500:]}")
    ds = xr.open_zarr(output)
    bad = int((ds.status.values != "ok").sum())
    if bad:
        raise SystemExit(f"{name}: {bad} points failed: {set(ds.error.values.ravel())}")
    return ds


def training(workdir, throttle, iterations):
    """The random ping-pong runs; their results path, metrics and times."""
    spec = {
        "kernel": "commbench.random_pingpong",
        "params": {"iterations": iterations, "warmup": 2},
        "sweep": {
            "nodes": [2, 4],
            "ppn": [1, 2],
            "messages": [1, 2, 3, 4],
            "msg_bytes": [128, 2048, 16384, 65536, 262144],
            "seed": [0, 1],
        },
        "order": {"shuffle": True, "seed": 1},
        "throttle": throttle,
        "timeout": 900,
    }
    ds = run(spec, workdir, "training")
    X, y = benchmark_frame(ds)
    return Path(workdir) / "training.zarr", X, y


def fit(results, workdir):
    """The predictor fitted through the CLI on 13 metrics and with NTmax."""
    models = {}
    for name, choice in (("predictor", "paper"), ("predictor+NTmax", "paper+ntmax")):
        models[name] = Path(workdir) / f"comm_{choice.replace('+', '_')}.json"
        argv = ["fit", results, "--model", "commpredictor", "--metrics", choice]
        out = quietly([*argv, "--output", models[name]])
        print(f"\n$ scaleprobe fit TRAINING --model commpredictor --metrics {choice}")
        print("\n".join(line for line in out.splitlines() if "area" in line))
    return models


def measure(workdir, throttle, iterations):
    """``scaleprobe run`` of every test phase: its time and recorded metrics."""
    rows = []
    for kernel, nodes, ppn, domain in PHASES:
        spec = {
            "kernel": f"stencil.{kernel}",
            "params": {"nx": domain, "ny": domain, "nz": domain}
            | {"iterations": iterations},
            "sweep": {"nodes": [nodes], "ppn": [ppn]},
            "throttle": throttle,
            "timeout": 900,
        }
        ds = run(spec, workdir, f"{kernel}_{nodes}_{ppn}_{domain}")
        row = ds.to_dataframe().reset_index().iloc[0]
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def predict(models, workdir):
    """``scaleprobe project`` of every phase: predicted time and area per model."""
    output = Path(workdir) / "phase.csv"
    predictions, areas = {}, None
    for name, model in models.items():
        times, area = [], []
        for kernel, nodes, ppn, domain in PHASES:
            shape = f"{domain},{domain},{domain}"
            argv = ["project", model, "--stencil", kernel, "--shape", shape]
            quietly([*argv, "--nodes", nodes, "--ppn", ppn, "--output", output])
            row = pd.read_csv(output).iloc[0]
            times.append(float(row["time_predicted"]))
            area.append(str(row["area"]))
        predictions[name] = np.array(times)
        areas = np.array(area) if areas is None else areas
    return predictions, areas


def described(measured):
    """The described patterns' metrics, checked against what the phases recorded."""
    rows = []
    for kernel, nodes, ppn, domain in PHASES:
        description = {
            "pattern": {"stencil": kernel, "shape": [domain] * 3, "ranks": nodes * ppn},
            "mapping": {"ppn": ppn},
        }
        rows.append(pattern_metrics(description, [*METRICS, "NTmax"]))
    rows = pd.concat(rows, ignore_index=True)
    for name in ("S", "M", "NT", "NTmax"):
        assert np.allclose(rows[name], measured[name].astype(float)), name
    return rows


def report(predictions, observed, area, rows):
    """The tables: all phases, per stencil, per node count, every phase."""
    kernel = np.array([p[0] for p in PHASES])
    nodes = np.array([p[1] for p in PHASES])
    print(f"\n{len(PHASES)} halo phases, predicted through the CLI")
    table(predictions, observed, area, kernel)
    for label, mine in [(f"{k}:", kernel == k) for k in ("jacobi3d", "advection3d")] + [
        (f"{n} nodes:", nodes == n) for n in (8, 16)
    ]:
        print(f"\n{label}", end="")
        table({k: v[mine] for k, v in predictions.items()}, observed[mine], area[mine],
              kernel[mine])  # fmt: skip
    print(
        f"\n{'stencil':>11} {'N':>3} {'PPN':>3} {'domain':>6} {'area':>4} {'NT':>9} "
        f"{'measured s':>11} " + " ".join(f"{n[:12]:>12}" for n in predictions)
    )
    for i, (k, n, ppn, domain) in enumerate(PHASES):
        errors = " ".join(
            f"{100 * (p[i] - observed[i]) / observed[i]:>+11.0f}%"
            for p in predictions.values()
        )
        print(
            f"{k:>11} {n:>3} {ppn:>3} {domain:>6} {area[i]:>4} {rows['NT'][i]:>9.0f} "
            f"{observed[i]:>11.3e} {errors}"
        )
    for name in ("predictor", "predictor+NTmax"):
        error = np.abs(predictions[name] - observed) / observed
        unknown = int(np.isnan(error).sum())  # cannot tell: never within
        mean = np.nanmean(error) if unknown < len(error) else np.nan
        print(
            f"{name}: mean |err| {100 * mean:.1f} % of {len(error) - unknown} "
            f"predicted, {100 * np.mean(error <= 0.3):.0f} % of {len(error)} within "
            f"+-30 % ({unknown} cannot tell)"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", default="bench_commpredictor_netns")
    parser.add_argument("--link", default="100 Mbit/s")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument(
        "--namespaces", type=int, nargs="*", default=[8, 16, 32, 64]
    )  # fmt: skip
    args = parser.parse_args()
    why = netns_unavailable()
    if why:
        raise SystemExit(f"needs network namespaces: {why}")
    start = time.monotonic()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    namespaces(args.namespaces)
    throttle = {"mode": "netns", "link_bandwidth": args.link}
    results, X, y = training(workdir, throttle, args.iterations)
    print(
        f"\ntraining: {len(y)} random ping-pong runs, {time.monotonic() - start:.0f} s"
    )
    models = fit(results, workdir)
    measured = measure(workdir, throttle, args.iterations)
    rows = described(measured)
    predictions, area = predict(models, workdir)
    for name, f in baselines(X, y).items():
        predictions[name] = np.asarray(f(rows), dtype=float)
    report(predictions, measured["exchange_time"].to_numpy(float), area, rows)
    print(
        f"\nwall time {time.monotonic() - start:.0f} s, load average "
        f"{os.getloadavg()[0]:.1f}, link {args.link}"
    )


if __name__ == "__main__":
    main()
