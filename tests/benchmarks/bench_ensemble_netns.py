"""The regression ensemble of Medya et al. 2017 on really shaped links, beside emulated.

Medya et al. 2017 throttle a real interconnect (InterSense) and fit Graph500's
completion time CT with the ensemble of their Eq. 1-7. Here the same kind of sweep
(nodes, scale, bandwidth percentage; Graph500 ``simple``, ppn 1) runs twice on this
host: once with ``throttle: netns`` (every node a network namespace, its veth link
shaped by ``tc``; see ``docs/deployments/netns.md``) and once emulated with the same
link. Printed, for both side by side:

1. the measured median CT (BFS time) per point and the netns / emulated ratio;
2. Tables II-IV: the coefficients of Eq. 2 and Eq. 6 per scale and of Eq. 3 and Eq. 7
   over all scales (``ScalingLaw``, NNLS, ``alpha`` searched in [1, 3]), with R^2 and
   MSE on the training points, as the paper reports them;
3. Table V: the node count from which the communication term is at least the
   computation term (``crossover_nodes``, at 100 % bandwidth and the largest scale),
   per equation, and the ensemble's verdict (``fit_ensemble``, what ``scaleprobe fit``
   runs) with its selected model.

Run (root, for the namespaces)::

    sudo python tests/benchmarks/bench_ensemble_netns.py [--directory DIR]
        [--nodes 2 4 8] [--scales 13 14] [--bandwidths 100 50 25] [--runs 1]
        [--link '100 Mbit/s']

The stores in ``DIR`` are resumed when the command runs again (a killed sweep loses
no point). All ranks share this host's cores: netns times include CPU contention
that the emulated mode, which charges CPU time, does not.
"""

from __future__ import annotations

import argparse
import os
import warnings

import numpy as np

#: The link: slow enough that the shaper, not the host's TCP path between namespaces,
#: sets the transfer time (docs/deployments/netns.md: within 4 % at 100 Mbit/s).
LINK = "100 Mbit/s"
#: The emulated link's latency: the netns path's one-way latency on this host
#: (veth pair and TCP, ``bench_netns.py`` table 1); netns injects none.
LATENCY = "30 us"
FORMS = {
    "Eq. 2": "base",
    "Eq. 6": "refined",
    "Eq. 3": "generalized",
    "Eq. 7": "generalized_refined",
}


def sweep(directory: str, mode: str, args) -> object:
    """Run (or resume) the Graph500 sweep in one throttle mode; its Dataset."""
    from scaleprobe.framework import run_sweep

    throttle = {"mode": mode, "link_bandwidth": args.link}
    if mode == "emulated":
        throttle["latency"] = LATENCY
    spec = {
        "name": f"ensemble-{mode}",
        "kernel": "graph500",
        "params": {"nbfs": args.nbfs, "variant": "simple"},
        "sweep": {
            "nodes": args.nodes,
            "ppn": 1,
            "scale": args.scales,
            "bandwidth": args.bandwidths,
            "run": args.runs,
        },
        "admissible": "any",
        "throttle": throttle,
        "timeout": 900,
        "output": os.path.join(directory, f"ensemble-{mode}.zarr"),
    }
    ds = run_sweep(spec, progress=False, workers=1).load()
    bad = int((ds.status.values != "ok").sum())
    if bad:
        errors = sorted(set(map(str, ds.error.values.ravel())) - {"", "nan"})
        raise SystemExit(f"{mode}: {bad} points failed: {errors[:3]}")
    return ds


def medians(ds):
    """Median CT per (nodes, scale, bandwidth) over runs and searches."""
    from scaleprobe.models import make_features

    X, y = make_features(ds)
    frame = X[["nodes", "scale", "bandwidth"]].copy()
    frame["time"] = np.asarray(y)
    return frame.groupby(["nodes", "scale", "bandwidth"])["time"].median()


def fit_forms(ds):
    """Tables II-IV rows: (equation, scale label, C1, C2, alpha, R^2, MSE, model)."""
    from scaleprobe.models import ScalingLaw, make_features

    X, y = make_features(ds)
    y = np.asarray(y, dtype=float)
    rows = []
    for equation, form in FORMS.items():
        per_scale = form in ("base", "refined")
        groups = sorted(X["scale"].unique()) if per_scale else [None]
        for scale in groups:
            keep = np.ones(len(X), bool) if scale is None else (X["scale"] == scale)
            keep = np.asarray(keep)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = ScalingLaw(form=form, over="nodes", loss="absolute")
                model.fit(X[keep], y[keep])
            predicted = model.predict(X[keep])
            residual = y[keep] - predicted
            mse = float(np.mean(residual**2))
            r2 = 1 - mse / float(np.var(y[keep]))
            label = f"{scale:g}" if scale is not None else "all"
            rows.append((equation, label, *model.coef_, model.alpha_, r2, mse, model))
    return rows


def crossover(model, scale) -> str:
    """Table V cell: the crossover node count at 100 % bandwidth, or 'none'."""
    from scaleprobe.models import crossover_nodes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nodes = crossover_nodes(model, bandwidth=100, scale=scale, max_nodes=10**6)
    return "none" if nodes is None else str(nodes)


def print_times(results, link) -> None:
    """Table 1: median CT per point in both modes and their ratio."""
    netns, emulated = (medians(results[m]) for m in ("netns", "emulated"))
    print(f"\n## 1. Median CT (s per BFS), Graph500 simple, ppn 1, link {link}\n")
    print("| nodes | scale | bandwidth % | netns | emulated | netns / emulated |")
    print("|---|---|---|---|---|---|")
    for key, value in netns.items():
        other = float(emulated.get(key, np.nan))
        nodes, scale, bandwidth = key
        print(
            f"| {nodes:g} | {scale:g} | {bandwidth:g} | {value:.4f} | {other:.4f} "
            f"| {value / other:.2f} |"
        )


def print_tables(results) -> None:
    """Tables II-V, netns and emulated side by side, and the ensemble's verdicts."""
    fits = {mode: fit_forms(ds) for mode, ds in results.items()}
    largest = float(results["netns"].scale.max())
    print("\n## 2. Tables II-IV: NNLS coefficients, alpha, R^2, MSE (training)\n")
    print(
        "| equation | scale | netns C1 | C2 | alpha | R^2 | MSE | emulated C1 | C2 "
        "| alpha | R^2 | MSE |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for ours, theirs in zip(fits["netns"], fits["emulated"], strict=True):
        cells = []
        for row in (ours, theirs):
            c1, c2, alpha, r2, mse = row[2:7]
            shown = "-" if alpha is None else f"{alpha:.3f}"
            cells.append(f"{c1:.4g} | {c2:.4g} | {shown} | {r2:.3f} | {mse:.2e}")
        print(f"| {ours[0]} | {ours[1]} | {cells[0]} | {cells[1]} |")
    print(
        f"\n## 3. Table V: crossover node count, bandwidth 100 %, scale {largest:g}\n"
    )
    print("| equation | netns | emulated |")
    print("|---|---|---|")
    for ours, theirs in zip(fits["netns"], fits["emulated"], strict=True):
        if ours[1] not in ("all", f"{largest:g}"):
            continue
        print(
            f"| {ours[0]} | {crossover(ours[-1], largest)} | "
            f"{crossover(theirs[-1], largest)} |"
        )
    print_verdicts(results, largest)


def print_verdicts(results, largest) -> None:
    """The ensemble's own fit (``scaleprobe fit``) in each mode."""
    from scaleprobe.models import fit_ensemble

    print("\n## 4. The ensemble (fit_ensemble): verdict and selected model\n")
    for mode, ds in results.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = fit_ensemble(ds)
        selected = fit.selected
        cell = "-"
        if selected is not None:
            try:
                cell = crossover(fit.models[selected], largest)
            except ValueError:
                cell = "no split"
        print(f"- {mode}: selected {selected}; crossover {cell}. {fit.verdict.reason}")


def main(argv=None) -> None:
    """Run both sweeps (or resume them) and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--directory", default="ensemble-netns")
    parser.add_argument("--nodes", nargs="+", type=int, default=[2, 4, 8])
    parser.add_argument("--scales", nargs="+", type=int, default=[13, 14])
    parser.add_argument("--bandwidths", nargs="+", type=int, default=[100, 50, 25])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--link", default=LINK, help="link bandwidth of both modes")
    parser.add_argument("--nbfs", type=int, default=4)
    args = parser.parse_args(argv)
    from scaleprobe.framework.netns import netns_unavailable

    reason = netns_unavailable()
    if reason:
        raise SystemExit(f"throttle netns is not available here: {reason}")
    os.makedirs(args.directory, exist_ok=True)
    results = {
        mode: sweep(args.directory, mode, args) for mode in ("netns", "emulated")
    }
    print(f"load average {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    print_times(results, args.link)
    print_tables(results)


if __name__ == "__main__":
    main()
