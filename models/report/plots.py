"""The figures of Medya et al. 2017 for any fitted model (matplotlib, no pyplot).

Every function returns a :class:`matplotlib.figure.Figure`; :func:`save_figure` writes
it as PNG or SVG (by the file suffix). The figures say what a reader needs to trust
them: the measurements beside every projection (median over runs and trials, a bar
from the lowest to the highest run), the network a projection is for, the level of
every band, which points the model was fitted on and which it never saw, where a
curve extrapolates, and units on every axis.

Artists a reader (or a test) looks for carry a ``gid``: ``measured``, ``band``,
``extrapolated``, ``in-sample``, ``held-out``, ``trusted``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..core.measured import measured_frame, measured_summary
from ..evaluation.crossval import BASELINE
from ..projection.derived import bandwidth_demand, completion_time_increment
from .labels import count_label, network_label, nodes_axis, same_network

__all__ = [
    "plot_bandwidth_demand",
    "plot_extrapolation_error",
    "plot_measured_vs_predicted",
    "plot_projection",
    "save_figure",
]

#: Shading of a range the model was not measured in.
EXTRAPOLATED = {"color": "0.93", "zorder": 0, "lw": 0}
#: How the measured points are named in a legend.
MEASURED_LABEL = "measured: median, bar from lowest to highest run"
#: The bandwidth (% of the link) of measurements made without throttling it.
FULL_BANDWIDTH = 100.0
#: Units of the scores a bar chart shows.
SCORE_UNITS = {"smape": "%", "mape": "%", "within_10": "share", "r2": "1"}


def save_figure(figure, path):
    """Save ``figure`` to ``path`` (``.png`` or ``.svg``) and return the Path."""
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ValueError(f"figures are written as .png or .svg; got {path.name!r}")
    figure.savefig(path, dpi=120, bbox_inches="tight")
    return path


def _level_text(level) -> str:
    return f"{100 * float(level):g} %"


# ------------------------------------------------------------ measured vs predicted


def plot_measured_vs_predicted(
    y,
    predicted,
    *,
    title="Measured vs predicted",
    color_by=None,
    label="nodes (count)",
    held_out=None,
    held_out_label="held out",
    quantity="time",
    units="s",
):
    """Measured against predicted values with the identity line (Fig. 5/6).

    The points the model was fitted on are labelled *in-sample*; points it never saw
    (``held_out``, e.g. the largest node count predicted by the model refitted
    without it) are drawn apart and labelled so.

    Parameters
    ----------
    y, predicted : array-like
        In-sample measurements and the predictions of the model fitted on them.
    title : str
    color_by : array-like, default=None
        Colour the in-sample points by this (e.g. node counts).
    label : str, default="nodes (count)"
        Colour-bar label.
    held_out : tuple of (array-like, array-like), default=None
        Measurements and predictions of points left out of the fit.
    held_out_label : str, default="held out"
        What was held out, for the legend.
    quantity, units : str
        The axes' quantity and its units (empty: not stated).

    Returns
    -------
    matplotlib.figure.Figure
    """
    y, predicted = np.asarray(y, float), np.asarray(predicted, float)
    fig = Figure(figsize=(6, 5.6), layout="constrained")
    ax = fig.subplots()
    points = ax.scatter(
        y,
        predicted,
        s=14,
        alpha=0.7,
        c=color_by,
        cmap="viridis" if color_by is not None else None,
        label="in-sample: the model was fitted on these",
        gid="in-sample",
    )
    if color_by is not None:
        fig.colorbar(points, ax=ax, label=label)
    every = [y, predicted]
    if held_out is not None:
        every += _held_out_points(ax, held_out, held_out_label)
    finite = np.concatenate(every)
    finite = finite[np.isfinite(finite)]
    low, high = finite.min(), finite.max()
    ax.plot([low, high], [low, high], "k--", lw=1, label="ideal (predicted = measured)")
    unit_text = f"({units})" if units else "(units not stated)"
    ax.set(
        xlabel=f"measured {quantity} {unit_text}",
        ylabel=f"predicted {quantity} {unit_text}",
        title=f"{title}, {'in-sample and held out' if held_out else 'in-sample'}",
    )
    if low > 0 and high / low > 100:  # times spanning decades read better on log axes
        ax.set(xscale="log", yscale="log")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig


def _held_out_points(ax, held_out, label):
    """The points the model never saw, apart from the in-sample ones."""
    held_y, held_predicted = (np.asarray(v, float) for v in held_out)
    ax.scatter(
        held_y,
        held_predicted,
        s=46,
        marker="D",
        facecolor="none",
        edgecolor="crimson",
        lw=1.4,
        label=f"held out: {label}",
        gid="held-out",
    )
    return [held_y, held_predicted]


# ------------------------------------------------------------------- projection


def _shown(projection):
    """The projection at one value of every axis but nodes and bandwidth."""
    data = projection
    for dim in list(projection.dims):
        if dim not in ("nodes", "bandwidth", "term"):
            data = data.isel({dim: 0})
    return data


def _links(projection):
    """The network of the projection and the one it was trained on (or None)."""
    attrs = projection.attrs
    target = None
    if "link_bandwidth" in attrs and "latency" in attrs:
        target = {
            "link_bandwidth": attrs["link_bandwidth"],
            "latency": attrs["latency"],
        }
    training = {}
    if attrs.get("training"):
        import json

        training = json.loads(attrs["training"])
    return target, training.get("link")


def _network_line(projection):
    """The second title line: the network (and the training one when it differs)."""
    target, trained = _links(projection)
    if target is None:
        text = "network of the measurements (link unknown)"
    elif trained is None or same_network(target, trained):
        text = f"network: {network_label(target)} (the measured one)"
    else:
        text = (
            f"projected to another network: {network_label(target)}\n"
            f"(measured on {network_label(trained)})"
        )
    if "scale" in projection.coords:
        text += f"; scale {float(np.atleast_1d(projection['scale'].values)[0]):g}"
    return text


def _measured_shown(projection, measured, target):
    """The measured rows at the projection's scale, ppn and parameters (raw
    measurements, one ``target`` value a row, are summarized first)."""
    if measured is None:
        measured = measured_frame(projection.attrs.get("training"))
    if measured is None or not len(measured):
        return None
    if "median" not in measured and target in measured:
        measured = measured_summary(measured.drop(columns=[target]), measured[target])
    ppn = projection.attrs.get("ppn")
    if ppn is not None and "ppn" in measured:
        measured = measured[np.isclose(measured["ppn"], float(ppn))]
    for dim in projection.coords:
        if dim in ("nodes", "bandwidth", "term") or dim not in measured:
            continue
        value = float(np.atleast_1d(projection[dim].values)[0])
        measured = measured[np.isclose(measured[dim].astype(float), value)]
    return measured if len(measured) else None


def plot_projection(projection, *, measured=None, ideal=None, title="Projection"):
    """Projected time (and GTEPS) over nodes per bandwidth, with the measurements.

    Parameters
    ----------
    projection : xarray.Dataset
        Output of :func:`scaleprobe.models.project` or
        :meth:`~scaleprobe.models.EnsembleFit.project`; other axes than ``nodes``
        and ``bandwidth`` are shown at their first value.
    measured : pandas.DataFrame, default=None
        Measured configurations (``nodes``, ``bandwidth``, ``median``, ``low``,
        ``high``; :func:`~scaleprobe.models.core.measured_summary`) or raw
        measurements (a feature frame with the target as a column), drawn as points
        with the range of their runs. Default: those the model's fit kept (the
        projection's ``training`` attribute), at the projection's scale, ppn and
        parameters.
    ideal : xarray.Dataset, default=None
        Projection of another model (e.g. the naive baseline), a dashed black line.
    title : str

    Returns
    -------
    matplotlib.figure.Figure
        The title names the network the projection is for; a projection to another
        network than the measured one says so, and the measurements are then drawn
        as hollow points of the training network.
    """
    target = projection.attrs.get("target", "time")
    projection, measured, ideal, count = _over_nodes(projection, measured, ideal)
    data = _shown(projection)
    has_teps = "teps_predicted" in data
    fig = Figure(figsize=(12 if has_teps else 7, 6.2), layout="constrained")
    axes = fig.subplots(1, 2 if has_teps else 1)
    ax_time, ax_teps = (axes[0], axes[1]) if has_teps else (axes, None)
    colours, banded = _projected_lines(ax_time, ax_teps, data, target)
    if ideal is not None:
        _ideal_line(ax_time, ideal, target)
    shown = _measured_shown(projection, measured, target)
    target_link, trained_link = _links(projection)
    other_network = not (
        trained_link is None or same_network(target_link, trained_link)
    )
    if shown is not None:
        _measured_points(
            ax_time,
            shown,
            colours,
            network_label(trained_link) if other_network else None,
        )
    _node_axes(
        [ax_time] + ([ax_teps] if ax_teps is not None else []),
        data["nodes"].values.astype(float),
        shown,
        _largest_measured(projection, shown),
        count,
    )
    level = projection.attrs.get("interval_level")
    extra = []
    if banded and level is not None:
        extra.append(
            Patch(
                color="0.6", alpha=0.3, label=f"{_level_text(level)} interval (shaded)"
            )
        )
    units = projection[f"{target}_predicted"].attrs.get("units", "s")
    ylabel = f"{target} ({units})" if units else f"{target} (units not stated)"
    ax_time.set(yscale="log", ylabel=ylabel)
    ax_time.set_title(
        f"{target}: {'measured and ' if shown is not None else ''}projected"
    )
    _legend(ax_time, extra)
    if ax_teps is not None:
        ax_teps.set(
            yscale="log",
            ylabel="GTEPS (10⁹ traversed edges/s)",
            title="GTEPS: projected",
        )
        _legend(ax_teps, [])
    fig.suptitle(f"{title}\n{_network_line(projection)}", fontsize=11)
    return fig


def _over_nodes(projection, measured, ideal):
    """A projection over ranks (a model of rank counts alone) and its measurements,
    their ranks in the place of nodes, and what the counts are: "node" or "rank".
    A projection of data without a bandwidth axis is drawn as one line, at the
    link as it was."""
    if "bandwidth" not in projection.dims:
        projection = projection.expand_dims(bandwidth=[FULL_BANDWIDTH])
    if ideal is not None and "bandwidth" not in ideal.dims:
        ideal = ideal.expand_dims(bandwidth=[FULL_BANDWIDTH])
    if "ranks" not in projection.dims or "nodes" in projection.dims:
        return projection, measured, ideal, "node"
    if measured is None:
        measured = measured_frame(projection.attrs.get("training"))
    if measured is not None and "nodes" not in measured:
        measured = measured.rename(columns={"ranks": "nodes"})
    if ideal is not None and "ranks" in ideal.dims:
        ideal = ideal.rename({"ranks": "nodes"})
    return projection.rename({"ranks": "nodes"}), measured, ideal, "rank"


def _node_axes(axes, nodes, shown, largest, count="node"):
    """Each axis' count ticks and grid, and the span beyond the largest measured
    count (none when nothing is extrapolated); ``count``: "node" or "rank"."""
    for ax in axes:
        if largest is not None and nodes.max() > largest:
            ax.axvspan(
                largest,
                nodes.max(),
                **EXTRAPOLATED,
                gid="extrapolated",
                label=f"extrapolated: beyond {count_label(largest, count)}",
            )
        every = (
            [nodes, shown["nodes"].to_numpy(float)] if shown is not None else [nodes]
        )
        nodes_axis(ax, np.concatenate(every), label=f"{count}s (count)")
        ax.grid(True, which="major", alpha=0.3)


def _legend(ax, extra):
    handles, labels = ax.get_legend_handles_labels()
    handles += extra
    labels += [h.get_label() for h in extra]
    ax.legend(
        handles,
        labels,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12),
        ncol=2,
    )


def _largest_measured(projection, shown):
    """The largest measured node count (from the points, else the fit's range)."""
    if shown is not None:
        return float(shown["nodes"].max())
    training = projection.attrs.get("training")
    if not training:
        return None
    import json

    nodes = json.loads(training).get("feature_ranges", {}).get("nodes")
    return float(nodes[1]) if nodes else None


def _projected_lines(ax_time, ax_teps, data, target):
    """One line (and interval band) per bandwidth, the latency floor at the full
    bandwidth, GTEPS beside; the colour of every bandwidth, and whether a band was
    drawn."""
    nodes = data["nodes"].values
    colours, banded = {}, False
    for bw in data["bandwidth"].values:
        one = data.sel(bandwidth=bw)
        label = f"projected{_at_bandwidth(data, bw)}"
        (line,) = ax_time.plot(nodes, one[f"{target}_predicted"], label=label)
        colours[float(bw)] = line.get_color()
        lower, upper = one[f"{target}_lower"].values, one[f"{target}_upper"].values
        if np.isfinite(lower).any():
            banded = True
            ax_time.fill_between(
                nodes,
                lower,
                upper,
                alpha=0.18,
                lw=0,
                color=line.get_color(),
                gid="band",
            )
        if f"{target}_floor" in one and float(bw) == float(data["bandwidth"].max()):
            floor = one[f"{target}_floor"].values
            ax_time.plot(
                nodes,
                np.where(floor > 0, floor, np.nan),
                ":",
                color="grey",
                label=f"latency floor at {bw:g} %",
            )
        if ax_teps is not None:
            ax_teps.plot(
                nodes, one["teps_predicted"] / 1e9, label=label, color=line.get_color()
            )
    return colours, banded


def _ideal_line(ax, ideal, target):
    """The reference model's line (the naive baseline) at its first bandwidth."""
    base = _shown(ideal)
    bandwidth = float(base["bandwidth"].values[0])
    one = base.sel(bandwidth=bandwidth)
    ax.plot(
        base["nodes"].values,
        one[f"{target}_predicted"],
        "k--",
        lw=1,
        label=f"naive baseline{_at_bandwidth(base, bandwidth)}",
    )


def _at_bandwidth(projection, bandwidth):
    """`` at 50 % bandwidth``, or nothing for a fit whose data have no bandwidth
    axis (its training's feature ranges)."""
    import json

    training = projection.attrs.get("training")
    ranges = json.loads(training).get("feature_ranges") if training else None
    if ranges is not None and "bandwidth" not in ranges:
        return ""
    return f" at {float(bandwidth):g} % bandwidth"


def _measured_points(ax, measured, colours, other_network):
    """The measured medians with the range of their runs, in the colour of their
    bandwidth (hollow and black when the projection is for another network, whose
    name ``other_network`` is then). Measurements without a bandwidth axis were
    made at the full link: the projection's 100 %."""
    first = True
    groups = (
        measured.groupby("bandwidth")
        if "bandwidth" in measured
        else [(FULL_BANDWIDTH, measured)]
    )
    for bw, group in groups:
        colour = colours.get(float(bw))
        if colour is None and not other_network:
            continue  # a bandwidth the projection does not show
        median = group["median"].to_numpy(float)
        spread = [
            median - group["low"].to_numpy(float),
            group["high"].to_numpy(float) - median,
        ]
        label = MEASURED_LABEL if first else "_nolegend_"
        if other_network:
            label = f"{MEASURED_LABEL},\non {other_network}" if first else label
            colour = "black"
        bars = ax.errorbar(
            group["nodes"],
            median,
            yerr=np.clip(spread, 0, None),
            fmt="o",
            ms=5,
            capsize=2.5,
            color=colour,
            mec="black",
            mew=0.6,
            mfc="white" if other_network else colour,
            label=label,
            zorder=5,
        )
        bars.lines[0].set_gid("measured")
        first = False


# -------------------------------------------------------------- bandwidth impact


def _ranges(model, measured_range):
    ranges = dict(model.fitted_ranges_ or {})
    ranges.update(measured_range or {})
    return ranges.get("bandwidth"), ranges.get("nodes")


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
    measured_range=None,
):
    """CTI over bandwidth per node count and bandwidth demand over nodes (Fig. 3).

    What lies outside the measured bandwidths and node counts is an extrapolation
    and marked so: shaded below the smallest measured bandwidth (and beyond the
    largest measured node count), dashed for node counts outside the measured ones.

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
    measured_range : dict, default=None
        ``{"bandwidth": (low, high), "nodes": (low, high)}`` that were measured;
        default: the model's fitted ranges.

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig = Figure(figsize=(12, 4.8), layout="constrained")
    ax_cti, ax_demand = fig.subplots(1, 2)
    bandwidth = np.asarray(bandwidth, float)
    measured_bw, measured_nodes = _ranges(model, measured_range)
    where = {"scale": scale, "ppn": ppn, "params": params}
    for n in nodes:
        cti = completion_time_increment(
            model, np.full(bandwidth.shape, n), bandwidth, **where
        )
        outside = measured_nodes is not None and not (
            measured_nodes[0] <= n <= measured_nodes[1]
        )
        label = count_label(n) + (" (extrapolated)" if outside else "")
        ax_cti.plot(bandwidth, 100 * cti, "--" if outside else "-", label=label)
    if measured_bw is not None and bandwidth.min() < measured_bw[0]:
        ax_cti.axvspan(
            bandwidth.min(),
            measured_bw[0],
            **EXTRAPOLATED,
            gid="extrapolated",
            label=f"extrapolated: below {measured_bw[0]:g} %",
        )
    ax_cti.set(
        xlabel="available bandwidth (% of the link)",
        ylabel="CTI (%)",
        title="Completion-time increment",
    )
    grid = np.unique(np.geomspace(min(nodes), max(nodes), 40).round())
    for cti in ctis:
        demand = bandwidth_demand(model, grid, cti, **where)
        ax_demand.plot(grid, demand, label=f"CTI {100 * cti:g} %")
    _demand_marks(ax_demand, grid, measured_bw, measured_nodes)
    nodes_axis(ax_demand, grid)
    ax_demand.set(ylabel="bandwidth demand (% of the link)", title="Bandwidth demand")
    for ax in (ax_cti, ax_demand):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7.5)
    fig.suptitle(title)
    return fig


def _demand_marks(ax, grid, measured_bw, measured_nodes):
    """Shade the demand panel where it extrapolates in bandwidth or node count."""
    if measured_bw is not None:
        ax.axhspan(
            0,
            measured_bw[0],
            **EXTRAPOLATED,
            gid="extrapolated",
            label=f"extrapolated: below {measured_bw[0]:g} %",
        )
    if measured_nodes is not None and grid.max() > measured_nodes[1]:
        ax.axvspan(
            measured_nodes[1],
            grid.max(),
            color="0.8",
            alpha=0.5,
            lw=0,
            zorder=0,
            gid="extrapolated",
            label=f"extrapolated: beyond {count_label(measured_nodes[1])}",
        )
    ax.set_ylim(0, 102)


# ------------------------------------------------------------- extrapolation error


def plot_extrapolation_error(scores, *, metric="smape", title=None, trusted=None):
    """Bar chart of the mean ``metric`` per model and splitter (from ``evaluate``).

    Parameters
    ----------
    scores : xarray.Dataset
        Output of :func:`~scaleprobe.models.evaluate`.
    metric : str, default="smape"
    title : str, default=None
    trusted : str, default=None
        The model scaleprobe trusts: its bars are outlined and its name marked.

    Returns
    -------
    matplotlib.figure.Figure
    """
    mean = scores[metric].mean(dim=("group", "fold"), skipna=True)
    models = [str(m) for m in mean["model"].values]
    splits = [str(c) for c in mean["cv"].values]
    units = SCORE_UNITS.get(metric, "")
    fig = Figure(figsize=(max(5.5, 1.4 * len(models) + 2.5), 4.6), layout="constrained")
    ax = fig.subplots()
    width = 0.8 / len(splits)
    x = np.arange(len(models))
    for i, split in enumerate(splits):
        values = mean.sel(cv=split).values
        bars = ax.bar(
            x + i * width - 0.4 + width / 2, values, width, label=f"{split} ({units})"
        )
        ax.bar_label(bars, labels=[_score_text(v, units) for v in values], fontsize=7)
        for name, bar in zip(models, bars, strict=True):
            if name == trusted:
                bar.set(edgecolor="black", linewidth=2, hatch="//", gid="trusted")
    names = [
        f"{m}\n(trusted)" if m == trusted else f"{m}\n(naive)" if m == BASELINE else m
        for m in models
    ]
    ax.set_xticks(x, names, rotation=20, ha="right")
    for tick, name in zip(ax.get_xticklabels(), models, strict=True):
        if name == trusted:
            tick.set_fontweight("bold")
    unit_text = f" ({units})" if units else ""
    default = f"{metric.upper()}{unit_text} by model and split, lower is better"
    ax.set(ylabel=f"{metric.upper()}{unit_text}", title=title or default)
    if trusted is not None:
        ax.legend(
            handles=[
                *ax.get_legend_handles_labels()[0],
                Patch(
                    facecolor="white",
                    edgecolor="black",
                    hatch="//",
                    label=f"trusted: {trusted}",
                ),
            ],
            fontsize=8,
        )
    else:
        ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def _score_text(value, units):
    if not np.isfinite(value):
        return ""
    return f"{value:.3g} {units}" if units == "%" else f"{value:.3g}"
