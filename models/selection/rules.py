"""Which model :func:`~scaleprobe.models.fit_ensemble` trusts, and why.

A model is set aside when its predictions ignore a parameter the sweep varies, when
it falls below the latency floor of the measured traffic, or (while anything else is
left) when its fit is degenerate. Among the rest the traffic-informed model, the
naive trend and the best time-only law are preferred in that order, each less
preferred one trusted only when it beats the others by :data:`BASELINE_MARGIN`; and
when nothing extrapolates within :data:`RELIABLE_SMAPE`, nothing is presented as a
winner. Every reason lands in the fit's notes and verdict.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.configs import configuration_keys
from ..core.warnings import (
    DegenerateFitWarning,
    InsufficientDataWarning,
    UnreliableModelWarning,
    warn,
)
from ..evaluation.crossval import BASELINE, select_model

__all__ = [
    "BASELINE_MARGIN",
    "PLAUSIBLE_FACTOR",
    "RELIABLE_SMAPE",
    "blind_to",
    "check_crossover",
    "select",
]

#: Extrapolation SMAPE (percent) above which no model is presented as a winner.
RELIABLE_SMAPE = 50.0

#: A model whose extrapolation SMAPE is within this factor of the selected one's is
#: a plausible alternative: its interval joins the selected model's.
PLAUSIBLE_FACTOR = 2.0

#: Share by which a time-only law must beat the naive baseline's extrapolation SMAPE
#: to be trusted over it (a law's extra assumptions have to earn their keep), and by
#: which the baseline must beat the traffic-informed model to be trusted over that.
BASELINE_MARGIN = 0.1


def blind_to(model, X):
    """The varying configuration keys a fitted model's predictions ignore.

    Bandwidth, scale and every application parameter of the sweep are checked: a
    model that predicts the same time at their smallest and largest values mixes
    configurations it cannot tell apart. A column the model takes as a feature of
    its own (``feature_names_in_``: a metric a term selection may leave out) is not
    a parameter it ignores; bandwidth always is checked.

    Parameters
    ----------
    model : estimator
        Fitted.
    X : pandas.DataFrame
        The training features.

    Returns
    -------
    list of str
        The columns whose smallest and largest values give the same prediction at
        the largest node count (or that the model cannot predict with).
    """
    own = set(getattr(model, "feature_names_in_", ())) - {"bandwidth"}
    varying = [
        c
        for c in configuration_keys(X)
        if c not in ("nodes", "ranks", "ppn", "D")
        and c not in own
        and pd.api.types.is_numeric_dtype(X[c])
        and X[c].nunique() > 1
    ]
    blind = []
    # at the largest node count, where every part of a time depends on its inputs
    # (on one node a bandwidth or a message size changes no traffic)
    count = "nodes" if "nodes" in X.columns else "ranks"
    largest = X.loc[[X[count].idxmax()]] if count in X.columns else X.iloc[:1]
    for column in varying:
        rows = largest.copy()
        low, high = float(X[column].min()), float(X[column].max())
        ends = []
        for value in (low, high):
            row = rows.assign(**{column: value})
            if column == "scale" and "D" in row:
                row["D"] = rows["D"] * 2.0 ** (value - rows["scale"])
            ends.append(row)
        try:
            if np.allclose(model.predict(ends[0]), model.predict(ends[1])):
                blind.append(column)
        except (ValueError, TypeError):
            blind.append(column)
    return blind


def _floor_violation(fit, name):
    """Smallest projected node count where ``name`` falls below the latency floor."""
    floor_model = fit.floor_model()
    if floor_model is None or name == "traffic":
        return None
    ranges = fit.training["feature_ranges"]
    largest = ranges.get("nodes", [1, 1])[1]
    top = max(1024, 32 * largest)
    nodes = 2.0 ** np.arange(np.ceil(np.log2(max(largest, 1))), np.log2(top) + 1)
    scales = ranges.get("scale")
    for scale in sorted(set(scales)) if scales else [None]:
        try:
            frame = fit.frame(
                nodes=nodes, bandwidth=ranges.get("bandwidth", [100])[1], scale=scale
            )
            if "scale" in frame and scales:
                frame = frame.assign(scale=scale)
            below = np.flatnonzero(
                fit.models[name].predict(frame) < floor_model.floor(frame)
            )
        except (ValueError, TypeError, KeyError):
            return None
        if below.size:  # the frame's rows: nodes x any application parameters
            return float(frame["nodes"].iloc[below].min())
    return None


def select(fit, X, splitters, degenerate):
    """Set ``fit.selected``, ``fit.verdict`` and the notes that explain them.

    Parameters
    ----------
    fit : EnsembleFit
        Fitted models and their cross-validation scores.
    X : pandas.DataFrame
        The training features (to probe which parameters a model ignores).
    splitters : dict of str to splitter
        The cross-validations that were run; ``extrapolation`` decides when present.
    degenerate : dict of str to str
        Models whose final fit was degenerate, with the warning it gave.

    Warns
    -----
    InsufficientDataWarning
        No model could be checked on held-out data.
    UnreliableModelWarning
        No model extrapolates within :data:`RELIABLE_SMAPE`, or the one trusted
        extrapolates worse than the naive baseline.
    """
    cv_name = "extrapolation" if "extrapolation" in splitters else next(iter(splitters))
    excluded = {}
    for name, model in fit.models.items():
        ignored = [] if name == BASELINE else blind_to(model, X)
        if ignored:
            excluded[name] = (
                f"ignores {', '.join(ignored)}, which "
                f"{'varies' if len(ignored) == 1 else 'vary'}"
            )
    for name in fit.models:
        nodes = _floor_violation(fit, name)
        if nodes is not None and name not in excluded:
            excluded[name] = (
                f"falls below the latency floor of the measured traffic from "
                f"{nodes:g} nodes"
            )
    sound = [
        n
        for n in fit.models
        if n not in excluded and n not in degenerate and n != BASELINE
    ]
    physics = dict(excluded)  # what cannot be right, whatever the scores say
    if sound:  # a degenerate law is only the answer when nothing else is left
        for name, message in degenerate.items():
            excluded.setdefault(name, f"degenerate fit ({message.split(':')[0]})")
    for name, reason in excluded.items():
        fit.notes.append(f"{name} is not selected: {reason}")
    blind = list(excluded)
    table = fit.summary.set_index(["model", "cv"])["smape"]
    try:
        best = select_model(fit.scores, cv=cv_name, exclude=blind)
    except ValueError:
        fit.verdict = (
            f"no model could be checked on held-out data ({cv_name}: every fold "
            "holds too few node counts): the laws are fitted, but none is presented "
            "as trustworthy — project one by name to see it, and measure more node "
            "counts"
        )
        warn(fit.verdict, InsufficientDataWarning, stacklevel=3)
        return
    baseline = float(table.get((BASELINE, cv_name), np.nan))
    what = (
        f"extrapolation to held-out {fit.training['column'][:-1]} counts"
        if cv_name == "extrapolation"
        else (f"{cv_name} cross-validation")
    )
    best, worse = _prefer(fit, table, cv_name, best, excluded, blind, what)
    smape = float(table.get((best, cv_name), np.nan))
    if not smape <= RELIABLE_SMAPE:
        fit.verdict = (
            f"no model extrapolates within {RELIABLE_SMAPE:.0f} % SMAPE (best: {best}, "
            f"{smape:.0f} % on {what}; naive baseline {baseline:.0f} %): the data "
            "cannot tell how this program scales, so no projection is presented as "
            "trustworthy — measure more (or larger) node counts"
        )
        warn(fit.verdict, UnreliableModelWarning, stacklevel=3)
        return
    fit.selected = best
    fit.training["plausible"] = [
        name
        for name in fit.models
        if name != best
        and name not in physics
        and float(table.get((name, cv_name), np.inf)) <= PLAUSIBLE_FACTOR * smape
    ]
    if best == BASELINE:
        fit.verdict = (
            f"no model beats the naive trend by a clear margin, so scaleprobe projects "
            f"the trend: a power law through the two largest measured "
            f"{fit.training['column'][:-1]} counts of each configuration (SMAPE "
            f"{smape:.1f} % on {what}). It knows no physics: no latency floor, no "
            "unmeasured bandwidth or scale — read far projections as the local trend "
            "continued, and measure larger counts to know more"
        )
        if worse is not None:
            warn(
                f"{worse[0]}, the best law, extrapolates worse than the naive baseline "
                f"(SMAPE {worse[1]:.1f} % against {baseline:.1f} %): scaleprobe "
                "projects the naive trend instead",
                UnreliableModelWarning,
                stacklevel=3,
            )
        return
    reason = (
        f"scaleprobe trusts {best}: SMAPE {smape:.1f} % on {what} "
        f"(naive baseline {baseline:.1f} %)"
    )
    if best == "traffic":
        reason += "; it models computation and traffic counts and prices them with "
        reason += "the link model, so it knows the latency floor"
    fit.verdict = reason
    if np.isfinite(baseline) and smape > baseline:
        warn(
            f"{best} extrapolates worse than the naive baseline (SMAPE {smape:.1f} % "
            f"against {baseline:.1f} %): read its projection with care",
            UnreliableModelWarning,
            stacklevel=3,
        )


def _prefer(fit, table, cv_name, best, excluded, blind, what):
    """Pick among the traffic model, the naive trend and the best time-only law.

    In that order of preference: the traffic-informed model carries the physics
    (floors, one node without traffic), the trend assumes least, a time-only law
    assumes a shape. A less preferred candidate is trusted only when it beats every
    more preferred one by :data:`BASELINE_MARGIN`.
    """

    def smape(name):
        return float(table.get((name, cv_name), np.nan))

    law = best
    if best == "traffic":
        try:
            law = select_model(fit.scores, cv=cv_name, exclude=[*blind, "traffic"])
        except ValueError:
            law = None
    order = [
        name
        for name in ("traffic", BASELINE)
        if name in fit.models and name not in excluded and np.isfinite(smape(name))
    ]
    if law is not None and np.isfinite(smape(law)):
        order.append(law)
    if not order:
        return best, None
    chosen = order[0]
    for i, name in enumerate(order[1:], start=1):
        if all(smape(name) < (1 - BASELINE_MARGIN) * smape(p) for p in order[:i]):
            chosen = name
    position = order.index(chosen)
    for i, name in enumerate(order):
        if i < position:
            fit.notes.append(
                f"{name} is not selected: {chosen} beats its SMAPE on {what} by more "
                f"than {BASELINE_MARGIN:.0%} ({smape(chosen):.1f} % against "
                f"{smape(name):.1f} %)"
            )
        elif i > position:
            rival = next(
                p
                for p in order[:i]
                if not smape(name) < (1 - BASELINE_MARGIN) * smape(p)
            )
            fit.notes.append(
                f"{name} is not selected: SMAPE {smape(name):.1f} % on {what} does not "
                f"beat {rival} ({smape(rival):.1f} %) by {BASELINE_MARGIN:.0%}"
            )
    baseline = smape(BASELINE)
    worse = None
    if chosen == BASELINE and law is not None and smape(law) > baseline:
        worse = (law, smape(law))
    return chosen, worse


def check_crossover(fit):
    """Warn when the selected time-only law has communication dominate already at
    the smallest measured node count (its computation term then collapsed).

    Parameters
    ----------
    fit : EnsembleFit

    Warns
    -----
    DegenerateFitWarning
    """
    name = fit.selected
    if name is None or name == "traffic":
        return
    model = fit.models[name]
    if not hasattr(model, "predict_components"):
        return
    smallest = fit.training["feature_ranges"][fit.training["column"]][0]
    try:
        frame = fit.frame(nodes=[smallest], bandwidth=100.0)
        parts = model.predict_components(frame)
    except (ValueError, TypeError, KeyError):
        return
    if float(parts["communication"].iloc[0]) >= float(parts["computation"].iloc[0]):
        warn(
            f"{name} puts the crossover (communication >= computation) at the "
            f"smallest measured node count ({smallest:g}): its computation term is "
            "too small to be trusted (a time-only law cannot see traffic)",
            DegenerateFitWarning,
            stacklevel=3,
        )
