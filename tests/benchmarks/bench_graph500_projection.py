"""Does a projection fitted on small node counts hold at larger, measured ones?

Runs (or reads) two emulated Graph500 sweeps: a training sweep on nodes 2, 3, 4, 6, 8
(and 1) at ppn 1, two scales and bandwidths 100/50/25 %, and a test sweep on 16 and 32
nodes with the same settings (virtual time makes 32 ranks on 2 cores honest). The
ensemble is fitted on the training sweep exactly as ``scaleprobe fit`` does, and every
model predicts the test configurations. The table gives, per model, the MAPE on the
16- and 32-node configurations and the share held by its 90 % interval, then the
traffic-informed model's prediction for every test configuration.

Run: ``python tests/benchmarks/bench_graph500_projection.py --directory DIR``
(``--train`` / ``--test`` read existing result stores instead of running the sweeps;
``--train-nodes "[1, 2, 4, 8, 12, 16]" --test-nodes "[32, 64]"`` moves the split;
``--fit-max 8`` fits on the training counts up to 8 and holds out the larger ones too).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd

SPEC = """
name: {name}
kernel: graph500
params: {{nbfs: {nbfs}, variant: {variant}}}
sweep:
  nodes: {nodes}
  ppn: 1
  scale: {scales}
  bandwidth: [100, 50, 25]
  run: {runs}
admissible: any
order: {{shuffle: true, seed: 3}}
throttle: {{mode: emulated, link_bandwidth: 1 Gbit/s, latency: 5 us}}
timeout: 1800
output: {output}
"""


def _sweep(directory, name, nodes, args):
    from scaleprobe.framework import run_sweep

    path = os.path.join(directory, f"{name}.yaml")
    output = os.path.join(directory, f"{name}.zarr")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(
            SPEC.format(
                name=name,
                nodes=nodes,
                scales=args.scales,
                runs=args.runs,
                nbfs=args.nbfs,
                variant=args.variant,
                output=output,
            )
        )
    return run_sweep(path, workers=1)


def _centres(ds):
    from scaleprobe.models import make_features
    from scaleprobe.models.core.configs import reduce_configurations

    X, y = make_features(ds)
    configs = reduce_configurations(X, y).frame
    return configs.rename(columns={"y": "time"})


def _split(train, test, fit_max=None):
    """The training Dataset to fit (its counts up to ``fit_max``) and the held-out
    configurations' centres: the test sweep's, and the training's beyond
    ``fit_max``."""
    held = _centres(test)
    if fit_max is None:
        return train, held
    nodes = train["nodes"].values
    if np.any(nodes > fit_max):
        beyond = _centres(train.sel(nodes=nodes[nodes > fit_max]))
        held = pd.concat([beyond, held], ignore_index=True)
    return train.sel(nodes=nodes[nodes <= fit_max]), held


def main(argv=None):
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--directory", default="g500-projection")
    parser.add_argument("--train", help="existing training results (.zarr)")
    parser.add_argument("--test", help="existing test results (.zarr)")
    parser.add_argument("--scales", default="[12, 14]")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--nbfs", type=int, default=8)
    parser.add_argument("--variant", default="simple")
    parser.add_argument(
        "--train-nodes", default="[1, 2, 3, 4, 6, 8]", help="training node counts"
    )
    parser.add_argument("--test-nodes", default="[16, 32]", help="held-out counts")
    parser.add_argument(
        "--fit-max",
        type=float,
        help="fit on the training counts up to this one; the larger ones are held out "
        "with the test sweep's",
    )
    args = parser.parse_args(argv)
    from scaleprobe.framework import open_results
    from scaleprobe.models import fit_ensemble

    start = time.perf_counter()
    os.makedirs(args.directory, exist_ok=True)
    train = (
        open_results(args.train)
        if args.train
        else _sweep(args.directory, "train", args.train_nodes, args)
    )
    test = (
        open_results(args.test)
        if args.test
        else _sweep(args.directory, "test", args.test_nodes, args)
    )
    measured = time.perf_counter() - start
    train, held = _split(train.load(), test.load(), args.fit_max)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_ensemble(train)
    rows, detail = [], None
    for name, model in fit.models.items():
        frame = held[["nodes", "ppn", "bandwidth", "scale"]].astype(float)
        frame["ranks"] = frame["nodes"] * frame["ppn"]
        try:
            predicted = model.predict(frame)
        except ValueError as error:
            print(f"{name}: cannot predict ({error})")
            continue
        error = predicted / held["time"].to_numpy() - 1
        row = {"model": name, "selected": name == fit.selected}
        for n in sorted(held["nodes"].unique()):
            at = held["nodes"].to_numpy() == n
            row[f"MAPE {n:g} nodes %"] = 100 * float(np.mean(np.abs(error[at])))
        row["MAPE all %"] = 100 * float(np.mean(np.abs(error)))
        interval = fit.intervals.get(name)
        if interval is not None:
            low, high = interval.bounds(model, frame, prediction=predicted)
            inside = (held["time"] >= low) & (held["time"] <= high)
            row["coverage (90 %)"] = float(inside.mean())
            row["upper/lower"] = float(np.median(high / low))
        rows.append(row)
        if name == "traffic":
            detail = held[["nodes", "bandwidth", "scale", "time"]].copy()
            detail["predicted"] = predicted
            detail["error %"] = 100 * error
            if interval is not None:
                detail["lower"], detail["upper"] = low, high
    print(
        f"training: nodes {[int(n) for n in train['nodes'].values]}, "
        f"test: nodes {sorted(int(n) for n in held['nodes'].unique())}; "
        f"sweeps {measured:.0f} s"
    )
    print(fit.verdict.reason)
    for note in fit.notes:
        print(f"note: {note}")
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    if detail is not None:
        print("\ntraffic-informed model on the test configurations:")
        print(detail.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    kinds = sorted({w.category.__name__ for w in caught})
    print(f"\nwarnings raised by the fit: {', '.join(kinds) or 'none'}")


if __name__ == "__main__":
    main()
