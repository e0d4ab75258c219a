"""A self-contained report: scores, the trusted model (or none), projection, figures."""

from __future__ import annotations

import base64
import html
import io
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import clone

from ..core.configs import reduce_configurations
from ..core.features import make_features, measurement_sets
from ..core.interface import describe_model
from ..core.measured import measured_summary
from ..core.warnings import quiet
from ..ensemble.fit import fit_ensemble
from ..selection.choose import render_verdict
from .labels import count_label
from .plots import (
    plot_bandwidth_demand,
    plot_extrapolation_error,
    plot_measured_vs_predicted,
    plot_projection,
)

__all__ = ["projection_nodes", "write_report"]


def captions(count="node", bandwidths=True, floor=True):
    """What each figure shows, under it, in the words of the data.

    Parameters
    ----------
    count : {"node", "rank"}, default="node"
        The process axis of the data.
    bandwidths : bool, default=True
        The projection has a line per measured bandwidth.
    floor : bool, default=True
        The projection draws the link model's latency floor.

    Returns
    -------
    dict of str to str
        Figure name -> caption.

    Examples
    --------
    >>> captions("rank", bandwidths=False, floor=False)["projection"][:64]
    'The projection with its interval (shaded) and the naive baseline'
    """
    lines = ("at every measured bandwidth, " if bandwidths else "") + (
        "the latency floor " if floor else ""
    )
    return {
        "projection": f"The projection with its interval (shaded) {lines}and the "
        "naive baseline; points are the measurements (median over runs and trials, "
        "bar from the lowest to the highest run); the grey span is extrapolated "
        f"beyond the largest measured {count} count.",
        "measured_vs_predicted": "In-sample: the measured configurations against "
        f"the model fitted on them. Held out: the largest {count} count against the "
        "model refitted without it, the extrapolation a projection makes.",
        "bandwidth_impact": "Completion-time increment over the available bandwidth "
        f"and the bandwidth a {count} count needs to stay within an increment; "
        "shaded: below the smallest measured bandwidth or beyond the largest "
        f"measured {count} count (extrapolated); dashed: {count} counts that were "
        "not measured.",
        "extrapolation_error": "Mean error of every model per cross-validation "
        "(extrapolation: trained on the smaller counts, tested on the larger); "
        "the trusted model is outlined, the naive baseline is the bar to beat.",
    }


def projection_nodes(largest, project_to=None, smallest=1):
    """Powers of two from ``smallest`` to ``project_to`` (default: at least 1024).

    Examples
    --------
    >>> projection_nodes(8).tolist()[-3:]
    [256, 512, 1024]
    """
    top = project_to or max(1024, 32 * int(largest))
    exponent = math.ceil(math.log2(top))
    low = max(math.floor(math.log2(max(smallest, 1))), 0)
    return np.array([2**k for k in range(low, exponent + 1)])


def _figure_bytes(figure):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return buffer.getvalue()


def _table(frame, fmt):
    frame = frame.copy()
    # text (model names, laws) reads from the left, numbers line up on the right
    text = [not pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    for column in frame.columns:
        if pd.api.types.is_float_dtype(frame[column]):
            # a score a model has none of (the baseline's interval) is not a number
            frame[column] = frame[column].map(
                lambda v: "—" if np.isnan(v) else f"{v:.4g}"
            )
    if fmt == "html":
        return _html_table(frame, text)
    header = "| " + " | ".join(map(str, frame.columns)) + " |"
    rule = "|" + "---|" * len(frame.columns)
    rows = [
        "| " + " | ".join(map(str, r)) + " |" for r in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *rows])


def _html_table(frame, text):
    """An HTML table of ``frame``'s cells, the columns flagged in ``text`` left."""
    marks = [' class="text"' if left else "" for left in text]

    def cells(tag, values):
        return "".join(
            f"<{tag}{mark}>{html.escape(str(value))}</{tag}>"
            for value, mark in zip(values, marks, strict=True)
        )

    rows = [f"<tr>{cells('th', frame.columns)}</tr>"]
    rows += [f"<tr>{cells('td', row)}</tr>" for row in frame.itertuples(index=False)]
    return "<table>\n" + "\n".join(rows) + "\n</table>"


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
    ppn=None,
    verdict_to=None,
    fit=None,
):
    """Fit the ensemble on a results Dataset and write an HTML or Markdown report.

    The report states which model scaleprobe trusts and why (or that none can be
    trusted), the scores of every model next to the naive baseline, the
    projection with its interval and the latency floor over measured points (log
    axes), bandwidth impact, and every warning the fit raised.

    Parameters
    ----------
    dataset : xarray.Dataset
    path : str or Path
        ``.html`` (figures embedded, one file) or ``.md`` (PNG files beside it).
    models : dict of str to estimator, default=None
        Default :func:`~scaleprobe.models.default_ensemble`.
    cv : dict of str to splitter, default=None
    client : distributed.Client, default=None
    target : str, default="time"
    s0 : float, default=25
    level : float, default=0.9
        Interval level.
    project_to : int, default=None
        Largest node count of the projection (default: at least 1024; powers of two).
    ppn : int, default=None
        Ranks per node for Datasets without one.
    verdict_to : file-like, default=None
        Also print the verdict there, as :func:`~scaleprobe.models.render_verdict`
        renders it (the command line passes standard output).
    fit : EnsembleFit, default=None
        The ensemble already fitted on ``dataset`` (with these options): not fitted
        again.

    Returns
    -------
    Path
    """
    path = Path(path)
    fmt = {".html": "html", ".md": "md"}.get(path.suffix.lower())
    if fmt is None:
        raise ValueError(f"report path must end in .html or .md; got {path.name!r}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit or fit_ensemble(
            dataset,
            models=models,
            cv=cv,
            client=client,
            target=target,
            s0=s0,
            level=level,
            ppn=ppn,
        )
        X, y = make_features(
            dataset, target=target, s0=s0, ppn=ppn, **measurement_sets(dataset)
        )
        figures, sections, words = _projection_parts(fit, (X, y), project_to)
    figures["extrapolation_error"] = plot_extrapolation_error(
        fit.scores, trusted=fit.selected
    )
    sections = [*_fit_sections(fit, fmt), *sections]
    words["count"] = "rank" if fit.ranks_only else "node"
    _write(path, fmt, _facts(fit, X, caught), sections, (figures, captions(**words)))
    if verdict_to is not None:
        print(render_verdict(fit.verdict), file=verdict_to)
    return path


def _fit_sections(fit, fmt):
    """The verdict, the scores and the laws, as the report's first sections."""
    laws = pd.DataFrame(
        {
            "model": list(fit.models),
            "law": [describe_model(m) for m in fit.models.values()],
        }
    )
    return [
        (
            "Which model is trusted, and why",
            _preformatted(render_verdict(fit.verdict), fmt),
        ),
        (
            "Scores (mean over folds; naive baseline for reference)",
            _table(fit.score_table(), fmt),
        ),
        ("Laws fitted on all data", _table(laws, fmt)),
    ]


def _write(path, fmt, facts, sections, drawn):
    """The report file (and, for Markdown, its PNG figures beside it): ``drawn``
    is the figures and their captions."""
    figures, words = drawn
    images = {}
    for name, figure in figures.items():
        images[name] = _figure_bytes(figure)
        if fmt == "md":
            (path.parent / f"{path.stem}_{name}.png").write_bytes(images[name])
    text = _render(fmt, facts, sections, (images, words), path)
    path.write_text(text, encoding="utf-8")


def _facts(fit, X, caught):
    """The report's opening list: what was fitted, the verdict's headline, the notes
    the verdict does not show and every warning the fit gave."""
    target, column = fit.training["target"], fit.training["column"]
    counts = sorted(int(v) for v in np.unique(X[column]))
    facts = [
        f"Fitted on {fit.training['configurations']} configurations, "
        f"{fit.training['runs']} runs ({fit.training['measurements']} values of "
        f"`{target}`); measured {column}: {counts}",
        f"Verdict: {fit.verdict.reason}",
    ]
    spread = fit.training.get("run_spread")
    if spread is not None and np.isfinite(spread):
        facts.append(f"Repeated runs spread by {spread:.1%} (median max/min - 1)")
    shown = set(fit.verdict.lines())
    facts += [f"Note: {note}" for note in fit.notes if note not in shown]
    seen = set()
    for item in caught:
        text = f"{item.category.__name__}: {item.message}"
        if text not in seen and issubclass(item.category, UserWarning):
            seen.add(text)
            facts.append(f"Warning — {text}")
    return facts


def _preformatted(text, fmt):
    if fmt == "html":
        return f"<pre>{html.escape(text)}</pre>"
    return "```text\n" + text + "\n```"


def _projection_parts(fit, data, project_to):
    """The projection's figures (projection, measured vs predicted, bandwidth
    impact), its sections (the table, how far the interval was checked, where the
    data cannot tell) and what its figure shows (:func:`captions`' ``bandwidths``
    and ``floor``)."""
    X, y = data
    name = fit.selected or "baseline"
    where = _where(fit, X, project_to)
    if fit.ranks_only:  # rank counts without a ppn: projected over ranks
        where["ranks"] = where.pop("nodes")
    projection = fit.project(name, **where).squeeze(list(where["params"]), drop=False)
    with quiet():  # a reference line in a figure, not a projection anyone trusts
        baseline = fit.project(
            "baseline", **{**where, "bandwidth": where["bandwidth"][:1]}
        ).squeeze(list(where["params"]), drop=False)
    title = (
        f"{name}: projection"
        if fit.selected
        else "no trusted model: naive baseline shown"
    )
    figures = {
        "projection": plot_projection(
            projection,
            measured=measured_summary(X, y),
            ideal=baseline,
            title=title,
        ),
        "measured_vs_predicted": _measured_vs_predicted(fit, name, X, y),
    }
    sections = _projection_sections(fit, name, projection, where)
    if "bandwidth" in X.columns and X["bandwidth"].nunique() > 1 and fit.selected:
        try:
            figures["bandwidth_impact"] = _bandwidth_impact(fit, name, X, where)
        except ValueError as exc:  # a naive trend knows the measured bandwidths only
            sections.append(
                (
                    "Bandwidth impact",
                    f"not drawn: {name} cannot price a bandwidth it was not "
                    f"measured at ({exc})",
                )
            )
    shown = {
        "bandwidths": projection.sizes.get("bandwidth", 1) > 1,
        "floor": f"{fit.training['target']}_floor" in projection,
    }
    return figures, sections, shown


def _where(fit, X, project_to):
    """Where the report projects: powers of two beyond the measured node counts, at
    every measured bandwidth (largest first), the largest scale and the largest
    value of each application parameter."""
    column = fit.training["column"]
    nodes = projection_nodes(
        float(X[column].max()), project_to, smallest=float(X[column].min())
    )
    bandwidths = (
        sorted({float(b) for b in X["bandwidth"].unique()}, reverse=True)
        if ("bandwidth" in X.columns)
        else [100.0]
    )
    scale = float(X["scale"].max()) if "scale" in X.columns else None
    params = {k: v[-1:] for k, v in (fit.training.get("parameters") or {}).items()}
    return {"nodes": nodes, "bandwidth": bandwidths, "scale": scale, "params": params}


def _measured_vs_predicted(fit, name, X, y):
    """In-sample configurations against the model fitted on all data, and the
    largest node count against the model refitted without it (held out)."""
    column = fit.training["column"]
    model = fit.models[name]
    low, high = (model.fitted_ranges_ or {}).get(column, (-np.inf, np.inf))
    inside = X[column].between(low, high).to_numpy()
    configs = reduce_configurations(X[inside], y[inside]).frame
    target = fit.training["target"]
    held_out, held_label = _held_out(model, X[inside], y[inside], column)
    return plot_measured_vs_predicted(
        configs["y"].to_numpy(),
        model.predict(configs),
        color_by=configs[column],
        label=f"{column} (count)",
        held_out=held_out,
        held_out_label=held_label,
        title=f"{name}: measured vs predicted",
        quantity=target,
        units=fit.training.get("units", {}).get(target, "s"),
    )


def _held_out(model, X, y, column):
    """The largest measured count predicted by ``model`` refitted without it (the
    extrapolation a projection makes), or None with fewer than three counts."""
    counts = np.unique(X[column])
    if counts.size < 3:
        return None, ""
    train = (X[column] < counts[-1]).to_numpy()
    try:
        with quiet(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            refitted = clone(model).fit(X[train].reset_index(drop=True), y[train])
            configs = reduce_configurations(X[~train], y[~train]).frame
            predicted = refitted.predict(configs)
    except ValueError:  # the smaller counts do not identify the model
        return None, ""
    label = (
        f"{count_label(counts[-1], column[:-1])}, predicted by the model refitted "
        f"on {counts[0]:g} to {count_label(counts[-2], column[:-1])}"
    )
    return (configs["y"].to_numpy(), predicted), label


def _bandwidth_impact(fit, name, X, where):
    """CTI and bandwidth demand of the trusted model (Fig. 3 of Medya et al. 2017)."""
    counts = sorted({int(n) for n in np.unique(X["nodes"])})
    return plot_bandwidth_demand(
        fit.models[name],
        nodes=sorted({*counts, counts[-1] * 8})[:6],
        scale=where["scale"],
        ppn=fit.training["ppn"][0] if fit.training.get("ppn") else None,
        params={k: v[0] for k, v in where["params"].items()},
        title=f"{name}: bandwidth impact",
        measured_range={
            "bandwidth": (float(X["bandwidth"].min()), float(X["bandwidth"].max())),
            "nodes": (float(counts[0]), float(counts[-1])),
        },
    )


def _projection_sections(fit, name, projection, where):
    """The projection table at the largest bandwidth, how far beyond the data the
    interval's widening was checked, and where the data cannot tell."""
    target = fit.training["target"]
    bandwidth = where["bandwidth"][0]
    at = (
        projection.sel(bandwidth=bandwidth)
        if "bandwidth" in projection.dims
        else projection
    )
    if "scale" in at.dims:
        at = at.isel(scale=0)
    columns = [f"{target}_predicted", f"{target}_lower", f"{target}_upper"]
    columns += [c for c in (f"{target}_floor", "teps_predicted") if c in at]
    table = at[columns].to_dataframe().reset_index()
    table = table[["ranks" if "ranks" in at.dims else "nodes", *columns]]
    heading = f"Projection of {name}"
    if "bandwidth" in fit.training.get("feature_ranges", {"bandwidth": None}):
        heading += f" at {bandwidth:g} % bandwidth"
    if where["scale"] is not None:
        heading += f", scale {where['scale']:g}"
    for key, values in where["params"].items():
        heading += f", {key} {values[0]:g}"
    sections = [(heading, table)]
    unchecked = fit.unchecked_message(projection)
    if unchecked:
        sections.append(("How far the interval was checked", unchecked))
    horizon = fit.cannot_tell_message(projection)
    if horizon:
        sections.append(("Where the data cannot tell", horizon))
    return sections


def _render(fmt, facts, sections, drawn, path):
    images, words = drawn
    sections = [(t, b if isinstance(b, str) else _table(b, fmt)) for t, b in sections]
    if fmt == "md":
        parts = ["# scaleprobe model report", "", *[f"- {f}" for f in facts], ""]
        for title, body in sections:
            parts += [f"## {title}", "", body, ""]
        parts += ["## Figures", ""]
        for n in images:
            parts += [f"![{n}]({path.stem}_{n}.png)", "", f"*{words.get(n, n)}*", ""]
        return "\n".join(parts) + "\n"
    body = ["<h1>scaleprobe model report</h1>", "<ul>"]
    body += [f"<li>{html.escape(f).replace('`', '')}</li>" for f in facts] + ["</ul>"]
    for title, table in sections:
        body += [f"<h2>{html.escape(title)}</h2>", table]
    body.append("<h2>Figures</h2>")
    for name, data in images.items():
        encoded = base64.b64encode(data).decode("ascii")
        caption = f"{name.replace('_', ' ')}: {words.get(name, '')}"
        body.append(
            f'<figure><img alt="{name}" src="data:image/png;base64,{encoded}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:auto}"
        "table{border-collapse:collapse}td,th{padding:2px 8px;text-align:right}"
        ".text{text-align:left}"
        "img{max-width:100%}pre{white-space:pre-wrap}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>scaleprobe "
        f"report</title><style>{style}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )
