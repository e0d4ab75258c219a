"""The ``scaleprobe demo``: a throttled Graph500 sweep, the fitted models, a
projection with its interval, the report and its figures."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings

from .spec import load_spec

__all__ = ["DEMO_SPEC", "demo_output", "run_demo"]

DEMO_SPEC = os.path.join(os.path.dirname(__file__), "demo.yaml")
PROJECT_TO = (16, 32, 64, 128, 256, 512, 1024)


def _projection_table(proj) -> str:
    """The projection as a table whose every column names its unit."""
    level = proj.attrs.get("interval_level", 0.9)
    point = proj.isel(scale=0, drop=True) if "scale" in proj.dims else proj
    names = ["time_predicted", "time_lower", "time_upper", "time_floor"]
    names += ["teps_predicted"]
    frame = point[[n for n in names if n in point]].to_dataframe().reset_index()
    table = frame[["nodes", "bandwidth", "time_predicted"]].copy()
    table["interval"] = [
        f"[{low:.3g}, {high:.3g}]"
        for low, high in zip(frame["time_lower"], frame["time_upper"], strict=True)
    ]
    if "time_floor" in frame:
        table["floor"] = frame["time_floor"]
    if "teps_predicted" in frame:
        table["gteps"] = frame["teps_predicted"] / 1e9
    table = table.rename(
        columns={
            "bandwidth": "bandwidth (%)",
            "time_predicted": "time (s)",
            "interval": f"{level:.0%} interval (s)",
            "floor": "latency floor (s)",
            "gteps": "GTEPS",
        }
    )
    return table.to_string(index=False, float_format=lambda v: f"{v:.3g}")


def _others(fit, name, scale) -> str:
    """What the other models project at the largest node count, for comparison."""
    others = []
    for other in fit.models:
        if other in (name, "baseline"):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the table's model warned already
                value = fit.project(
                    other, nodes=[PROJECT_TO[-1]], bandwidth=[100.0], scale=scale
                )["time_predicted"].item()
        except ValueError:
            continue
        others.append(f"{other} {value:.3g} s")
    if not others:
        return ""
    return f"the other models at {PROJECT_TO[-1]} nodes, 100 % bandwidth: " + ", ".join(
        others
    )


def _network(fit) -> str:
    """The network the demo measured on, in words."""
    link = fit.training.get("link") or {}
    if not {"link_bandwidth", "latency"} <= set(link):
        return "measured network"
    return (
        f"measured network ({link['link_bandwidth'] * 8 / 1e9:g} Gbit/s, "
        f"{link['latency'] * 1e6:g} us)"
    )


def _projection(fit, ds, scale: float):
    """The trusted model's projection in words and a table, and the projection."""
    bandwidths = [float(b) for b in ds.bandwidth.values]
    lines = ["", fit.describe(), ""]
    name = fit.selected or "traffic"
    if name not in fit.models:
        return "\n".join(lines), None
    proj = fit.project(name, nodes=list(PROJECT_TO), bandwidth=bandwidths, scale=scale)
    heading = "trusted" if fit.selected else "NOT trusted (see above)"
    lines.append(
        f"{name} ({heading}): BFS time per search on the {_network(fit)}, its "
        f"{proj.attrs.get('interval_level', 0.9):.0%} interval, the latency floor and "
        "the traversed edges per second:"
    )
    lines.append(_projection_table(proj))
    for line in (fit.unchecked_message(proj), fit.cannot_tell_message(proj)):
        if line:
            lines.append(line)
    others = _others(fit, name, scale)
    if others:
        lines.append(others)
    return "\n".join(lines), proj


def _outputs(fit, ds, proj, directory: str) -> list[str]:
    """The report (HTML) and the figures (PNG); their paths."""
    from scaleprobe.models.report.document import write_report
    from scaleprobe.models.report.plots import (
        plot_extrapolation_error,
        plot_projection,
        save_figure,
    )

    written = [str(write_report(ds, os.path.join(directory, "report.html"), fit=fit))]
    if proj is not None:
        name = proj.attrs["model_name"]
        nodes = sorted({*(int(n) for n in ds.nodes.values), *PROJECT_TO})
        scale = proj["scale"].values.tolist() if "scale" in proj.coords else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the table's projection warned already
            whole = fit.project(
                name, nodes=nodes, bandwidth=proj["bandwidth"].values, scale=scale
            )
        runs = ds["time"].median([d for d in ("run", "trial") if d in ds["time"].dims])
        measured = runs.to_dataframe(name="time").reset_index()
        title = f"{name} projection, 1 rank per node"  # the network: a line below
        figure = plot_projection(whole, measured=measured, title=title)
        written.append(
            str(save_figure(figure, os.path.join(directory, "projection.png")))
        )
    figure = plot_extrapolation_error(fit.scores, trusted=fit.selected)
    written.append(
        str(save_figure(figure, os.path.join(directory, "extrapolation_error.png")))
    )
    return written


def _write_spec(directory: str) -> str:
    """The demo's spec, beside its results: ``plan`` on it finds every point stored."""
    with open(DEMO_SPEC, encoding="utf-8") as f:
        text = f.read()
    # a relative output belongs beside its spec file, wherever it is run from
    text = re.sub(r"(?m)^output: .*$", "output: demo.zarr", text)
    path = os.path.join(directory, "demo.yaml")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


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
    baseline), projects the trusted model's BFS time, interval, latency floor and
    TEPS to 1024 nodes, and writes the report (``report.html``) and its figures
    (PNG). Run again, it measures nothing: the written spec finds every point
    stored.

    Parameters
    ----------
    directory : str
        Where the spec, the results, the report and the figures go.
    workers : int, optional
        Workers of the embedded LocalCluster.

    Returns
    -------
    str
        The summary to print, ending with the paths of what was written.
    """
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    spec_path = _write_spec(directory)
    from scaleprobe.models import fit_ensemble

    from ._summary import summarize
    from .runner import run_sweep

    spec = load_spec(spec_path)
    print(
        f"scaleprobe demo: {spec.name}: {len(spec.sweep['nodes'])} node counts x "
        f"{len(spec.sweep['bandwidth'])} bandwidths x {len(spec.sweep['run'])} runs",
        file=sys.stderr,
    )
    with warnings.catch_warnings():
        # the dashboard takes another port when 8787 is taken: not the user's concern
        warnings.filterwarnings("ignore", "Port .* is already in use")
        ds = run_sweep(spec, workers=workers)
    text = summarize(ds, path=spec.output)
    written = []
    try:
        fit = fit_ensemble(ds)
    except ValueError as exc:  # too few successful points to fit
        text += f"\nno projection: {exc}"
    else:
        scale = float(spec.params.get("scale", 0))
        described, proj = _projection(fit, ds, scale)
        text += described
        with contextlib.suppress(ValueError):  # a report needs a fit that projects
            written = _outputs(fit, ds, proj, directory)
    files = "".join(
        f"\n{'report:' if path.endswith('.html') else 'figure:'}  {path}"
        for path in written
    )
    return (
        f"{text}\n\nresults: {spec.output}\nspec:    {spec_path}{files}\n"
        f"next:    scaleprobe fit {spec.output} --output {directory}/models.json"
    )
