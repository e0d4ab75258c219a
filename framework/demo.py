"""The ``scaleprobe demo``: a throttled Graph500 sweep, a fitted law, a projection."""

from __future__ import annotations

import os
import sys

from .spec import load_spec

__all__ = ["DEMO_SPEC", "demo_output", "run_demo"]

DEMO_SPEC = os.path.join(os.path.dirname(__file__), "demo.yaml")
PROJECT_TO = (16, 32, 64, 128, 256, 512, 1024)


def _projection(ds, scale: float) -> str:
    """Fit the ensemble (as ``scaleprobe fit`` does) and project the trusted model."""
    from scaleprobe.models import fit_ensemble

    fit = fit_ensemble(ds)
    bandwidths = [float(b) for b in ds.bandwidth.values]
    lines = ["", fit.describe(), ""]
    name = fit.selected or "traffic"
    if name not in fit.models:
        return "\n".join(lines)
    proj = fit.project(name, nodes=list(PROJECT_TO), bandwidth=bandwidths, scale=scale)
    heading = "trusted" if fit.selected else "NOT trusted (see above)"
    lines.append(
        f"{name} ({heading}): BFS time per search, {proj.attrs['interval_level']:.0%} "
        "interval, latency floor and GTEPS:"
    )
    lines.append(f"{'nodes':>6} " + " ".join(f"{f'bw {b:g}%':>44}" for b in bandwidths))
    for n in PROJECT_TO:
        cells = []
        for b in bandwidths:
            point = proj.sel(nodes=n, bandwidth=b).squeeze()
            floor = (
                point["time_floor"].item() if "time_floor" in point else float("nan")
            )
            cells.append(
                f"{point.time_predicted.item():8.3g} s "
                f"[{point.time_lower.item():.2g}, {point.time_upper.item():.2g}] "
                f"floor {floor:.2g} {point.teps_predicted.item() / 1e9:5.3f}"
            )
        lines.append(f"{n:>6} " + " ".join(f"{c:>44}" for c in cells))
    if fit.cannot_tell_message(proj):
        lines.append(fit.cannot_tell_message(proj))
    others = []
    for other in fit.models:
        if other in (name, "baseline"):
            continue
        try:
            value = fit.project(
                other, nodes=[PROJECT_TO[-1]], bandwidth=[100.0], scale=scale
            )["time_predicted"].item()
        except ValueError:
            continue
        others.append(f"{other} {value:.3g} s")
    if others:
        lines.append(
            f"the other models at {PROJECT_TO[-1]} nodes, 100 % bandwidth: "
            + ", ".join(others)
        )
    return "\n".join(lines)


def demo_output(directory: str) -> str:
    """The store the demo in ``directory`` writes: ``<directory>/demo.zarr``.

    Examples
    --------
    >>> demo_output("/tmp/scaleprobe-demo")
    '/tmp/scaleprobe-demo/demo.zarr'
    """
    return os.path.join(os.path.abspath(directory), "demo.zarr")


def run_demo(directory: str, *, workers=None) -> str:
    """Run the demo campaign in ``directory`` and describe its results.

    Writes the demo spec there, runs the sweep on an embedded Dask cluster, fits
    the model ensemble exactly as ``scaleprobe fit`` does (the traffic-informed
    model, the laws of Medya et al. 2017, the normal-form search and the naive
    baseline) and projects the trusted model's BFS time, interval, latency floor and
    TEPS to 1024 nodes.

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
    from ._summary import summarize
    from .runner import run_sweep

    output = demo_output(directory)
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
