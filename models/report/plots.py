"""The figures of Medya et al. 2017 for any fitted model (matplotlib, no pyplot).

Every function returns a :class:`matplotlib.figure.Figure`; :func:`save_figure` writes
it as PNG or SVG (by the file suffix).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ..projection.derived import bandwidth_demand, completion_time_increment

__all__ = [
    "plot_bandwidth_demand",
    "plot_extrapolation_error",
    "plot_measured_vs_predicted",
    "plot_projection",
    "save_figure",
]


def save_figure(figure, path):
    """Save ``figure`` to ``path`` (``.png`` or ``.svg``) and return the Path."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ValueError(f"figures are written as .png or .svg; got {path.name!r}")
    figure.savefig(path, dpi=120, bbox_inches="tight")
    return path


def plot_measured_vs_predicted(
    y, predicted, *, title="Measured vs predicted", color_by=None, label="nodes"
):
    """Scatter of measured against predicted times with the identity line (Fig. 5/6).

    Parameters
    ----------
    y, predicted : array-like
    title : str
    color_by : array-like, default=None
        Colour the points by this (e.g. node counts).
    label : str
        Colour-bar label.
    """
    y, predicted = np.asarray(y, float), np.asarray(predicted, float)
    fig = Figure(figsize=(5, 4.5))
    ax = fig.subplots()
    points = ax.scatter(
        y,
        predicted,
        s=8,
        alpha=0.6,
        c=color_by,
        cmap="viridis" if color_by is not None else None,
    )
    if color_by is not None:
        fig.colorbar(points, ax=ax, label=label)
    low, high = (
        np.nanmin([y.min(), predicted.min()]),
        np.nanmax([y.max(), predicted.max()]),
    )
    ax.plot([low, high], [low, high], "k--", lw=1, label="ideal")
    ax.set(xlabel="measured time (s)", ylabel="predicted time (s)", title=title)
    if low > 0 and high / low > 100:  # times spanning decades read better on log axes
        ax.set(xscale="log", yscale="log")
    ax.legend(loc="upper left")
    return fig


def plot_projection(projection, *, measured=None, ideal=None, title="Projection"):
    """Projected completion time and GTEPS over nodes per bandwidth, log axes.

    Parameters
    ----------
    projection : xarray.Dataset
        Output of :func:`scaleprobe.models.project` with a ``bandwidth`` dim (and at
        most one ``scale``).
    measured : pandas.DataFrame, default=None
        Measured configuration centres (``nodes``, ``bandwidth``, ``time``), drawn
        as points in the colour of their bandwidth.
    ideal : xarray.Dataset, default=None
        Projection of another model (e.g. the naive baseline), a dashed black line.
    title : str
    """
    target = projection.attrs.get("target", "time")
    has_teps = "teps_predicted" in projection
    fig = Figure(figsize=(11 if has_teps else 6.5, 4.4))
    axes = fig.subplots(1, 2 if has_teps else 1)
    ax_time, ax_teps = (axes[0], axes[1]) if has_teps else (axes, None)
    data = projection.isel(scale=0) if "scale" in projection.dims else projection
    colours = _projected_lines(ax_time, ax_teps, data, target)
    if ideal is not None:
        base = ideal.isel(scale=0) if "scale" in ideal.dims else ideal
        one = base.sel(bandwidth=base["bandwidth"].values[0])
        ax_time.plot(
            base["nodes"].values,
            one[f"{target}_predicted"],
            "k--",
            lw=1,
            label="naive baseline",
        )
    if measured is not None and len(measured):
        _measured_points(ax_time, measured, target, colours)
    units = projection[f"{target}_predicted"].attrs.get("units", "s")
    ax_time.set(
        xscale="log",
        yscale="log",
        xlabel="nodes",
        ylabel=f"{target} ({units})",
        title=f"{target}: measured and projected",
    )
    axes_list = [ax_time] + ([ax_teps] if ax_teps is not None else [])
    if ax_teps is not None:
        ax_teps.set(xscale="log", xlabel="nodes", ylabel="GTEPS", title="GTEPS")
    for ax in axes_list:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return fig


def _projected_lines(ax_time, ax_teps, data, target):
    """One line (and interval band) per bandwidth, the latency floor at the full
    bandwidth, GTEPS beside; the colour of every bandwidth."""
    nodes = data["nodes"].values
    colours = {}
    for bw in data["bandwidth"].values:
        one = data.sel(bandwidth=bw)
        (line,) = ax_time.plot(nodes, one[f"{target}_predicted"], label=f"bw {bw:g}%")
        colours[float(bw)] = line.get_color()
        if np.isfinite(one[f"{target}_lower"]).any():
            ax_time.fill_between(
                nodes,
                one[f"{target}_lower"],
                one[f"{target}_upper"],
                alpha=0.15,
                color=line.get_color(),
            )
        if f"{target}_floor" in one and float(bw) == float(data["bandwidth"].max()):
            floor = one[f"{target}_floor"].values
            ax_time.plot(
                nodes,
                np.where(floor > 0, floor, np.nan),
                ":",
                color="grey",
                label="latency floor",
            )
        if ax_teps is not None:
            ax_teps.plot(
                nodes,
                one["teps_predicted"] / 1e9,
                label=f"bw {bw:g}%",
                color=line.get_color(),
            )
    return colours


def _measured_points(ax, measured, target, colours):
    """The measured configuration centres, in the colour of their bandwidth."""
    for bw, group in (
        measured.groupby("bandwidth") if "bandwidth" in measured else [(None, measured)]
    ):
        colour = colours.get(float(bw)) if bw is not None else "black"
        ax.plot(
            group["nodes"],
            group[target],
            "o",
            color=colour,
            ms=4,
            mec="black",
            mew=0.5,
        )
    ax.plot([], [], "o", color="white", mec="black", label="measured")


def plot_bandwidth_demand(
    model,
    *,
    nodes=(4, 9, 16, 25, 64, 256),
    bandwidth=tuple(range(10, 101, 2)),
    ctis=(0.05, 0.1, 0.2),
    scale=None,
    ppn=None,
    params=None,
    title="Bandwidth impact",
):
    """CTI over bandwidth per node count and bandwidth demand over nodes (Fig. 3).

    Parameters
    ----------
    model : fitted model with a bandwidth term
    nodes : sequence of int
    bandwidth : array-like
        Bandwidth percentages for the CTI curves.
    ctis : sequence of float
        Admissible increments for the demand curves (fractions).
    scale, ppn, params : see :func:`scaleprobe.models.completion_time_increment`
    title : str
    """
    fig = Figure(figsize=(11, 4.2))
    ax_cti, ax_demand = fig.subplots(1, 2)
    bandwidth = np.asarray(bandwidth, float)
    for n in nodes:
        cti = completion_time_increment(
            model,
            np.full(bandwidth.shape, n),
            bandwidth,
            scale=scale,
            ppn=ppn,
            params=params,
        )
        ax_cti.plot(bandwidth, 100 * cti, label=f"{n} nodes")
    ax_cti.set(
        xlabel="available bandwidth (%)",
        ylabel="CTI (%)",
        title="Completion-time increment",
    )
    grid = np.unique(np.geomspace(min(nodes), max(nodes), 40).round())
    for cti in ctis:
        demand = bandwidth_demand(model, grid, cti, scale=scale, ppn=ppn, params=params)
        ax_demand.plot(grid, demand, label=f"CTI {100 * cti:g}%")
    ax_demand.set(
        xscale="log",
        xlabel="nodes",
        ylabel="bandwidth demand (%)",
        title="Bandwidth demand",
    )
    for ax in (ax_cti, ax_demand):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return fig


def plot_extrapolation_error(scores, *, metric="smape", title=None):
    """Bar chart of the mean ``metric`` per model and splitter (from ``evaluate``)."""
    mean = scores[metric].mean(dim=("group", "fold"), skipna=True)
    models = [str(m) for m in mean["model"].values]
    splits = [str(c) for c in mean["cv"].values]
    fig = Figure(figsize=(max(5, 1.3 * len(models) + 2), 4))
    ax = fig.subplots()
    width = 0.8 / len(splits)
    x = np.arange(len(models))
    for i, split in enumerate(splits):
        ax.bar(
            x + i * width - 0.4 + width / 2,
            mean.sel(cv=split).values,
            width,
            label=split,
        )
    ax.set_xticks(x, models, rotation=20, ha="right")
    ax.set(ylabel=metric, title=title or f"{metric} by model and split")
    ax.legend()
    ax.grid(True, axis="y", alpha=0.3)
    return fig
