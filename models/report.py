"""A self-contained report: scores, the selected model, projections and figures."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import clone

from .derived import crossover_nodes
from .ensemble import default_ensemble
from .evaluation import evaluate, select_model, summarize
from .features import make_features
from .intervals import conformal_interval
from .plots import (
    plot_bandwidth_demand,
    plot_extrapolation_error,
    plot_measured_vs_predicted,
    plot_projection,
)
from .projection import project

__all__ = ["write_report"]

_COLUMNS = ["model", "cv", "smape", "mape", "r2", "within_10", "coverage"]


def _figure_bytes(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def _table(frame, fmt):
    frame = frame.copy()
    for column in frame.columns:
        if pd.api.types.is_float_dtype(frame[column]):
            frame[column] = frame[column].map(lambda v: f"{v:.4g}")
    if fmt == "html":
        return frame.to_html(index=False, border=0)
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = [
        "| " + " | ".join(map(str, r)) + " |" for r in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *rows])


def write_report(
    dataset,
    path,
    *,
    models=None,
    cv=None,
    client=None,
    target="time",
    s0=25,
    level=0.9,
    project_to=None,
):
    """Evaluate an ensemble on a results Dataset and write an HTML or Markdown report.

    Parameters
    ----------
    dataset : xarray.Dataset
    path : str or Path
        ``.html`` (figures embedded, one file) or ``.md`` (PNG files beside it).
    models : dict of str to estimator, default=None
        Default :func:`default_ensemble`.
    cv : dict of str to splitter, default=None
        Default :func:`scaleprobe.models.evaluation.default_cv`.
    client : distributed.Client, default=None
    target : str, default="time"
    s0 : float, default=25
    level : float, default=0.9
        Interval level.
    project_to : int, default=None
        Largest node count of the projection (default 32 x the largest measured).

    Returns
    -------
    Path
    """
    path = Path(path)
    fmt = {".html": "html", ".md": "md"}.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"report path must end in .html or .md; got {path.name!r}")
    X, y = make_features(dataset, target=target, s0=s0)
    models = models or default_ensemble(X, s0=s0)
    scores = evaluate(models, (X, y), cv=cv, client=client, level=level)
    summary = summarize(scores)
    best_cv = (
        "extrapolation"
        if "extrapolation" in summary["cv"].values
        else str(summary["cv"].iloc[0])
    )
    best = select_model(scores, cv=best_cv)
    model = clone(models[best]).fit(X, y)
    interval = conformal_interval(models[best], X, y, level=level)
    largest = int(X["nodes"].max())
    nodes = np.unique(
        np.geomspace(max(1, X["nodes"].min()), project_to or 32 * largest, 40).round()
    )
    bandwidths = sorted({100.0, *np.quantile(X["bandwidth"], [0, 0.5])})[::-1]
    scale = float(X["scale"].max()) if "scale" in X.columns else None
    ppn = float(X["ppn"].median())
    projection = project(
        model,
        nodes=nodes,
        bandwidth=bandwidths,
        scale=scale,
        ppn=ppn,
        interval=interval,
    )
    figures = {
        "measured_vs_predicted": plot_measured_vs_predicted(
            y,
            model.predict(X),
            color_by=X["nodes"],
            title=f"{best}: measured vs predicted",
        ),
        "extrapolation_error": plot_extrapolation_error(scores),
        "projection": plot_projection(projection, title=f"{best}: projection"),
    }
    if "bandwidth" in X.columns and X["bandwidth"].nunique() > 1:
        figures["bandwidth_demand"] = plot_bandwidth_demand(
            model,
            nodes=sorted({*map(int, np.unique(X["nodes"])), largest * 8})[:6],
            scale=scale,
            ppn=ppn,
            title=f"{best}: bandwidth impact",
        )
    crossover = (
        crossover_nodes(model, scale=scale, ppn=ppn, max_nodes=10**6)
        if hasattr(model, "predict_components")
        else None
    )
    at = projection.sel(bandwidth=100.0)
    if "scale" in at.dims:
        at = at.isel(scale=0)
    table = (
        at[["time_predicted", "time_lower", "time_upper", "teps_predicted"]]
        .to_dataframe()
        .reset_index()
    )
    table = table[
        ["nodes", "time_predicted", "time_lower", "time_upper", "teps_predicted"]
    ].iloc[:: max(1, len(table) // 10)]
    images = {}
    for name, figure in figures.items():
        images[name] = _figure_bytes(figure)
        if fmt == "md":
            (path.parent / f"{path.stem}_{name}.png").write_bytes(images[name])
    terms = getattr(model, "terms_", None) or model.best_estimator_.terms_
    facts = [
        f"Points: {len(y)} (target `{target}`), node counts "
        f"{sorted(map(int, np.unique(X['nodes'])))}",
        f"Selected model (best mean SMAPE under `{best_cv}`): **{best}**, terms "
        f"{' + '.join(terms)}, coefficients {np.round(model.coef_, 6).tolist()}"
        + (f", alpha {model.alpha_:.4f}" if getattr(model, "alpha_", None) else ""),
        f"Communication dominates from {crossover} nodes (bandwidth 100 %)"
        if crossover
        else "Communication never dominates up to 10^6 nodes",
        f"{level:.0%} conformal interval: half-width "
        f"{interval.log_halfwidth:.3g} in log time, widening beyond "
        f"{interval.reference_nodes:g} nodes",
    ]
    sections = [
        (
            "Scores (mean over groups and folds)",
            _table(summary[[c for c in _COLUMNS if c in summary]], fmt),
        ),
        ("Projection at 100 % bandwidth", _table(table, fmt)),
    ]
    path.write_text(_render(fmt, facts, sections, images, path), encoding="utf-8")
    return path


def _render(fmt, facts, sections, images, path):
    if fmt == "md":
        parts = ["# scaleprobe model report", "", *[f"- {f}" for f in facts], ""]
        for title, body in sections:
            parts += [f"## {title}", "", body, ""]
        parts += ["## Figures", ""]
        parts += [f"![{n}]({path.stem}_{n}.png)" for n in images]
        return "\n".join(parts) + "\n"
    body = ["<h1>scaleprobe model report</h1>", "<ul>"]
    body += [f"<li>{html.escape(f).replace('**', '')}</li>" for f in facts] + ["</ul>"]
    for title, table in sections:
        body += [f"<h2>{html.escape(title)}</h2>", table]
    body.append("<h2>Figures</h2>")
    for name, data in images.items():
        encoded = base64.b64encode(data).decode("ascii")
        body.append(
            f'<figure><img alt="{name}" src="data:image/png;base64,{encoded}">'
            f"<figcaption>{name.replace('_', ' ')}</figcaption></figure>"
        )
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:auto}"
        "table{border-collapse:collapse}td,th{padding:2px 8px;text-align:right}"
        "img{max-width:100%}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>scaleprobe "
        f"report</title><style>{style}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )
