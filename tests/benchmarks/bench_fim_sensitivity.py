"""FiM's sensitivity to one parameter at a time, in the spirit of Bhimani et al.
2019's Figs. 7 and 8: K-means measured and predicted as the data size, the
iterations, the clusters or the process count grows, the others held.

FiM is fitted (:class:`scaleprobe.models.FiM`) on a small K-means sweep (two sizes,
two iteration counts, two cluster counts on 1, 2 and 4 emulated nodes, one rank each,
1 Gbit/s), then every parameter in turn is swept beyond the training from the fixed
point (the largest training values on 4 nodes), measured, and predicted. Printed per
parameter: its value, the measured time and FiM's, the error, and the computation
and communication measured and predicted (Fig. 7 shows both parts). Fig. 9's
hardware configurations have no counterpart on one host.

Sweeps are kept in ``--workdir`` (a rerun resumes them). Run:
``python tests/benchmarks/bench_fim_sensitivity.py`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np
import pandas as pd

#: The training sweep, and the fixed point each sensitivity starts from.
TRAIN = {"points": [4096, 16384], "iterations": [3, 6], "clusters": [4, 8]}
FIXED = {"points": 16384, "iterations": 6, "clusters": 8, "nodes": 4}
#: The values each parameter takes beyond the training, the others at FIXED.
SWEEPS = {
    "points": [65536, 262144],
    "iterations": [12, 24],
    "clusters": [16, 32],
    "nodes": [1, 2, 4, 8],
}


def _run(client, workdir, name, sweep, runs):
    import xarray as xr
    from scaleprobe.framework import run_sweep
    from scaleprobe.models import make_features

    spec = {
        "name": name,
        "kernel": "iterative.kmeans",
        "params": {},
        "sweep": {"ppn": 1, "run": runs, **sweep},
        "throttle": {"mode": "emulated", "link_bandwidth": "1 Gbit/s"},
        "timeout": 900,
        "output": os.path.join(workdir, f"{name}.zarr"),
    }
    run_sweep(spec, client, progress=False)
    X, y = make_features(xr.open_zarr(spec["output"]), fim=True)
    return X, y


def _sensitivity(model, X, y, parameter):
    """Median measured and predicted parts per value of ``parameter``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parts = model.predict_components(X)
    comm = [c for c in X.columns if c.endswith("_time") and c[:-5] in parts.columns]
    table = pd.DataFrame(
        {
            parameter: X[parameter].to_numpy(),
            "measured": y.to_numpy(),
            "fim": parts.drop(columns="communication").sum(axis=1).to_numpy(),
            "comp measured": X["comp_time_iterations"].to_numpy(),
            "comp fim": parts["computation"].to_numpy(),
            "comm measured": X[comm].sum(axis=1).to_numpy(),
            "comm fim": parts["communication"].to_numpy(),
        }
    )
    table = table.groupby(parameter).median()
    table.insert(2, "error %", 100 * (table["fim"] / table["measured"] - 1))
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="runs of every point")
    parser.add_argument("--workdir", default="fim_sensitivity_sweeps")
    args = parser.parse_args()
    from distributed import Client, LocalCluster
    from scaleprobe.models import FiM

    os.makedirs(args.workdir, exist_ok=True)
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as c,
        Client(c) as client,
    ):
        X, y = _run(
            client, args.workdir, "train", {"nodes": [1, 2, 4], **TRAIN}, args.runs
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = FiM(link_bandwidth=1.25e8).fit(X, y)
        print(model.describe(), "\n")
        errors = {}
        for parameter, values in SWEEPS.items():
            sweep = {k: [v] for k, v in FIXED.items()}
            sweep[parameter] = values
            tX, ty = _run(client, args.workdir, f"vary-{parameter}", sweep, args.runs)
            table = _sensitivity(model, tX, ty, parameter)
            errors[parameter] = float(table["error %"].abs().mean())
            print(f"K-means, {parameter} varied (others {FIXED}):")
            print(table.to_string(float_format=lambda v: f"{v:.4g}"), "\n")
    print("mean |error| %: " + ", ".join(f"{k} {v:.3g}" for k, v in errors.items()))
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
