"""The sweep page's plot: a Bokeh figure of time against nodes, and its projection.

The figure is built here once per sweep (:func:`sweep_figure`, a Bokeh
``json_item``) with one set of named data sources per series; the page fills the
sources from every poll of the page's data, so the plot grows as points land.

The live projection (:func:`live_projection`) is the automatic normal-form search
(:class:`~scaleprobe.models.PMNFSearch`) fitted per series over nodes, once a series
has three node counts. It is cheap (about 0.1 s a series, run off the event loop)
and has a band of its own: the range of every law of its family the measurements
cannot reject at 90 %. The ensemble that ``scaleprobe fit`` runs cross-validates
several families and takes seconds to minutes, too much to redo as each point
lands, and the naive baseline has no band without held-out node counts. The page
calls it a preview: the verdict is ``scaleprobe fit``'s.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "LEVEL",
    "LIVE_MODEL",
    "MIN_NODE_COUNTS",
    "live_projection",
    "node_ticks",
    "projection_nodes",
    "sweep_figure",
]

#: What the page calls the live projection.
LIVE_MODEL = "normal-form search (PMNF) per series"
#: Level of the live projection's band.
LEVEL = 0.9
#: Node counts a series needs before it is projected.
MIN_NODE_COUNTS = 3
#: How far the projection reaches beyond the largest planned node count.
REACH = 4
#: Colours of the series (Bokeh's Category10).
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def projection_nodes(smallest: float, planned_largest: float) -> list[float]:
    """Node counts of the live projection: from the smallest fitted count to
    :data:`REACH` times the largest planned one, 40 steps evenly spaced in log.

    Examples
    --------
    >>> nodes = projection_nodes(2, 8)
    >>> nodes[0], nodes[-1], len(nodes)
    (2.0, 32.0, 40)
    """
    top = REACH * max(float(planned_largest), float(smallest))
    return np.geomspace(float(smallest), top, 40).round(6).tolist()


def _fit_one(values, planned_largest):
    """One series' projection, or None with fewer than three node counts."""
    import pandas as pd
    from scaleprobe.models import PMNFSearch, describe_model
    from scaleprobe.models.core.warnings import quiet

    frame = pd.DataFrame(values, columns=["nodes", "run", "value"])
    frame = frame[frame["value"] > 0]
    counts = sorted(frame["nodes"].unique())
    if len(counts) < MIN_NODE_COUNTS:
        return None
    if sum(n > 1 for n in counts) >= MIN_NODE_COUNTS:
        frame = frame[frame["nodes"] > 1]  # one node has no inter-node traffic
    frame = frame.assign(trial=frame.groupby(["nodes", "run"]).cumcount())
    X = frame[["nodes", "run", "trial"]].astype(float).reset_index(drop=True)
    with quiet(), np.errstate(all="ignore"):  # a preview: the fit's warnings are not
        model = PMNFSearch(parameter="nodes").fit(X, frame["value"].to_numpy(float))
        grid = pd.DataFrame(
            {"nodes": projection_nodes(X["nodes"].min(), planned_largest)}
        )
        predicted = np.asarray(model.predict(grid), float)
        lower, upper = (
            np.asarray(b, float) for b in model.predict_interval(grid, level=LEVEL)
        )
    finite = np.isfinite(predicted) & np.isfinite(lower) & np.isfinite(upper)
    return {
        "nodes": grid["nodes"][finite].tolist(),
        "predicted": predicted[finite].tolist(),
        "lower": lower[finite].tolist(),
        "upper": upper[finite].tolist(),
        "law": describe_model(model),
        "node_counts": len(counts),
    }


def live_projection(series: list[dict], planned_largest: float) -> dict:
    """Fit the live projection of every series that has three node counts.

    Parameters
    ----------
    series : list of dict
        :func:`~scaleprobe.framework._sweep_state.series_data` of a sweep.
    planned_largest : float
        The largest node count of the sweep's plan.

    Returns
    -------
    dict
        ``model`` (:data:`LIVE_MODEL`), ``level`` and ``series``: per series
        ``None`` or ``nodes``, ``predicted``, ``lower``, ``upper``, ``law``,
        ``node_counts``. A series whose fit fails is None, with its reason in
        ``errors``.
    """
    fitted, errors = [], []
    for one in series:
        try:
            fitted.append(_fit_one(one["values"], planned_largest))
        except (ValueError, np.linalg.LinAlgError) as error:
            fitted.append(None)
            errors.append(f"{one['label']}: {str(error).splitlines()[0]}")
    return {"model": LIVE_MODEL, "level": LEVEL, "series": fitted, "errors": errors}


def _axis_label(metric, units):
    return f"median {metric or 'value'} ({units})" if units else f"median {metric}"


def node_ticks(planned) -> list[float]:
    """Ticks of the plot's node axis: the planned counts, then powers of two up to
    the projection's reach.

    Examples
    --------
    >>> node_ticks([1, 2, 3])
    [1.0, 2.0, 3.0, 4.0, 8.0]
    """
    planned = sorted({float(n) for n in planned if float(n) > 0})
    if not planned:
        return []
    top, power = REACH * planned[-1], 2.0 ** math.ceil(math.log2(planned[-1]))
    beyond = []
    while power <= top:
        if power > planned[-1]:
            beyond.append(power)
        power *= 2
    return planned + beyond


def sweep_figure(labels: list[str], metric: str, units: str, nodes=()) -> dict:
    """The plot of one sweep, as a Bokeh ``json_item`` with empty data sources.

    Per series ``i``: ``points-i`` (one glyph per measured point: ``nodes``,
    ``value``, ``run``), ``median-i`` (the line through the medians), ``band-i``
    and ``projection-i`` (the live projection's band and line); ``extrapolated`` is
    the box beyond the largest measured node count (hidden until a projection).

    Parameters
    ----------
    labels : list of str
        The series' labels.
    metric, units : str
        The measured quantity and its units.
    nodes : sequence of float, default=()
        The planned node counts (the axis' ticks).

    Returns
    -------
    dict
        The figure for ``Bokeh.embed.embed_item``.
    """
    from bokeh.embed import json_item
    from bokeh.models import HoverTool

    plot = _empty_figure(metric, units, nodes)
    glyphs = [
        _add_series(plot, i, label, PALETTE[i % len(PALETTE)])
        for i, label in enumerate(labels)
    ]
    plot.add_tools(
        HoverTool(
            renderers=glyphs,
            tooltips=[
                ("nodes", "@nodes"),
                ("run", "@run"),
                (_axis_label(metric, units), "@value{0.0000}"),
            ],
        )
    )
    legend = plot.legend[0]
    plot.center.remove(legend)  # beside the plot, where it hides no point
    plot.add_layout(legend, "right")
    legend.label_text_font_size = "8pt"
    legend.click_policy = "hide"
    return json_item(plot)


def _empty_figure(metric, units, nodes):
    """The figure with its log axes, their labels and ticks, and the hidden box
    of the extrapolated node counts."""
    from bokeh.models import BoxAnnotation, FixedTicker, PrintfTickFormatter
    from bokeh.plotting import figure

    plot = figure(
        x_axis_type="log",
        y_axis_type="log",
        width=760,
        height=420,
        title=f"median {metric or 'value'} ({units}) against nodes (log axes)",
        x_axis_label="nodes (count)",
        y_axis_label=_axis_label(metric, units),
        tools="pan,wheel_zoom,box_zoom,reset,save",
        name="sweep-plot",
    )
    if node_ticks(nodes):
        plot.xaxis.ticker = FixedTicker(ticks=node_ticks(nodes))
    plot.xaxis.formatter = PrintfTickFormatter(format="%g")
    plot.yaxis.formatter = PrintfTickFormatter(format="%.3g")
    plot.add_layout(
        BoxAnnotation(
            left=1,
            visible=False,
            fill_color="#bbbbbb",
            fill_alpha=0.25,
            name="extrapolated",
        )
    )
    return plot


def _add_series(plot, i, label, colour):
    """Series ``i``'s named sources and glyphs (band, projection, median line,
    points); returns the points' renderer."""
    from bokeh.models import ColumnDataSource

    band = ColumnDataSource({"nodes": [], "lower": [], "upper": []}, name=f"band-{i}")
    projected_label = f"{label}: projection, 90 % band"
    plot.varea(
        "nodes",
        "lower",
        "upper",
        source=band,
        fill_color=colour,
        fill_alpha=0.15,
        legend_label=projected_label,
    )
    projected = ColumnDataSource({"nodes": [], "predicted": []}, name=f"projection-{i}")
    plot.line(
        "nodes",
        "predicted",
        source=projected,
        color=colour,
        line_dash="dashed",
        legend_label=projected_label,
    )
    median = ColumnDataSource({"nodes": [], "value": []}, name=f"median-{i}")
    plot.line(
        "nodes",
        "value",
        source=median,
        color=colour,
        line_width=2,
        legend_label=f"{label}: median",
    )
    points = ColumnDataSource({"nodes": [], "value": [], "run": []}, name=f"points-{i}")
    return plot.scatter(
        "nodes",
        "value",
        source=points,
        size=8,
        color=colour,
        line_color="black",
        legend_label=f"{label}: runs",
        name=f"glyphs-{i}",
    )
