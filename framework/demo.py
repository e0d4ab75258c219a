"""The ``scaleprobe demo``: a throttled Graph500 sweep, a fitted law, a projection."""

from __future__ import annotations

import os
import sys

from ._summary import summarize
from .runner import run_sweep
from .spec import load_spec

__all__ = ["DEMO_SPEC", "run_demo"]

DEMO_SPEC = os.path.join(os.path.dirname(__file__), "demo.yaml")
PROJECT_TO = (16, 32, 64, 128, 256, 512, 1024)


def _projection(ds, scale: float) -> str:
    """Fit Medya's refined law on the multi-node points and project it."""
    from scaleprobe.models import (
        ScalingLaw,
        conformal_interval,
        crossover_nodes,
        make_features,
        project,
    )

    # One node has no inter-node traffic: the law's communication term starts at two.
    multi = ds.sel(nodes=[n for n in ds.nodes.values if n >= 2])
    X, y = make_features(multi)
    law = ScalingLaw(form="refined").fit(X, y)
    interval = conformal_interval(ScalingLaw(form="refined"), X, y)
    bandwidths = [float(b) for b in ds.bandwidth.values]
    proj = project(
        law,
        nodes=list(PROJECT_TO),
        bandwidth=bandwidths,
        scale=scale,
        interval=interval,
    )
    c1, c2 = law.coef_
    lines = [
        "",
        f"fitted law (Medya et al. Eq. 6): time = {c1:.4g}/p + {c2:.4g} * "
        f"{law.alpha_:.3f}^(100/bw) / sqrt(p)",
        f"projected BFS time per search, {interval.level:.0%} interval, and GTEPS:",
        f"{'nodes':>6} " + " ".join(f"{f'bw {b:g}%':>34}" for b in bandwidths),
    ]
    for n in PROJECT_TO:
        cells = []
        for b in bandwidths:
            point = proj.sel(nodes=n, bandwidth=b).squeeze()
            cells.append(
                f"{point.time_predicted.item():9.4g} s "
                f"[{point.time_lower.item():.3g}, {point.time_upper.item():.3g}] "
                f"{point.teps_predicted.item() / 1e9:6.3f}"
            )
        lines.append(f"{n:>6} " + " ".join(f"{c:>34}" for c in cells))
    for b in bandwidths:
        n = crossover_nodes(law, bandwidth=b)
        lines.append(f"communication dominates from {n} node(s) at {b:g}% bandwidth")
    return "\n".join(lines)


def run_demo(directory: str, *, workers=None) -> str:
    """Run the demo campaign in ``directory`` and describe its results.

    Writes the demo spec there, runs the sweep on an embedded Dask cluster, fits the
    refined scaling law of seed 000 (Eq. 6) to the multi-node points and projects the
    BFS time and TEPS to 1024 nodes.

    Parameters
    ----------
    directory : str
        Where the spec and the results go.
    workers : int, optional
        Workers of the embedded LocalCluster.

    Returns
    -------
    str
        The summary to print.
    """
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    with open(DEMO_SPEC, encoding="utf-8") as f:
        text = f.read()
    spec_path = os.path.join(directory, "demo.yaml")
    with open(spec_path, "w", encoding="utf-8") as f:
        f.write(text)
    output = os.path.join(directory, "demo.zarr")
    spec = load_spec(spec_path)
    print(
        f"scaleprobe demo: {spec.name}: {len(spec.sweep['nodes'])} node counts x "
        f"{len(spec.sweep['bandwidth'])} bandwidths x {len(spec.sweep['run'])} runs",
        file=sys.stderr,
    )
    ds = run_sweep(spec, output=output, workers=workers)
    text = summarize(ds)
    try:
        text += _projection(ds, float(spec.params.get("scale", 0)))
    except ValueError as exc:  # too few successful points to fit
        text += f"\nno projection: {exc}"
    return (
        f"{text}\n\nresults: {output}\nspec:    {spec_path}\n"
        f"next:    scaleprobe fit {output} --output {directory}/models.json"
    )
