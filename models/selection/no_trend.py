"""Measurements without a trend beyond their noise, and what the ensemble does then.

A series whose centres wander up and down by as much as they move overall (weak
scaling measured once per count, a region that waits on a varying neighbour) gives
every law and the naive trend a slope that is the noise's: the law that best
predicts one held-out count wins the selection by chance, and its slope is continued
to thousands of processes. When no test finds a trend (:func:`~scaleprobe.models.
flat.trend_tests` on every configuration: the log-log slope, the order of the
centres and, with repeated runs, the spread between counts against the spread
within one), :func:`trust_flat` trusts the level of the measurements
(:class:`~scaleprobe.models.FlatTrend`) and keeps the model selected before as a
plausible alternative, whose interval joins the level's: a trend too small to show
in the data may still be there.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import xarray as xr
from scipy import stats

from ..core.warnings import NoTrendWarning, warn
from ..evaluation.crossval import evaluate, summarize
from ..evaluation.intervals import calibrate_interval
from ..evaluation.splitters import ExtrapolationSplit
from ..laws.flat import NO_TREND_LEVEL, FlatTrend, no_trend
from .rules import PLAUSIBLE_FACTOR, floor_model, floor_violation

__all__ = ["FLAT", "trust_flat"]

#: Name of the level of the measurements in a fit's models.
FLAT = "flat"


def _evidence(model):
    """The smallest p-value of each test over the groups (its strongest case for a
    trend), as text."""
    largest = {}
    for line in model.spread_.values():
        for test, value in line["tests"].items():
            largest[test] = min(largest.get(test, 1.0), value)
    names = {"slope": "slope", "rank": "rank order", "replicates": "between runs"}
    return ", ".join(f"{names[t]} p-value {v:.2f}" for t, v in sorted(largest.items()))


def _hidden_slope(model, level):
    """The largest log-log slope the data cannot reject, over the groups."""
    slopes = [
        abs(line["slope"])
        + stats.t.ppf(0.5 + level / 2, line["dof"])
        * line["sigma"]
        / np.sqrt(line["sxx"])
        for line in model.spread_.values()
        if line["dof"] >= 1 and line["sxx"] > 0
    ]
    return max(slopes) if slopes else np.nan


def trust_flat(
    verdict, models, scores, X, y, *, training, splitters, column, level, limit
):
    """Trust the level of the measurements when they show no trend in ``p``.

    Parameters
    ----------
    verdict : Verdict
        The verdict so far (after the change-of-regime check).
    models : dict of str to PerformanceModel
        The fitted models (a trusted one that is ``structural`` keeps its trust;
        the level must stay above the floor of the one that knows it).
    scores : xarray.Dataset
        Their cross-validation: the plausible alternatives are read from it.
    X : pandas.DataFrame
    y : ndarray
    training : dict
        The training metadata (for the latency floor's frames).
    splitters : dict of str to splitter
        The cross-validations the other models were scored on (``extrapolation``
        among them); the level is scored on the same.
    column : str
        The process-count column.
    level : float
        Interval level.
    limit : float
        Extrapolation SMAPE (percent) above which the level is not trusted either.

    Returns
    -------
    verdict : Verdict
        The level trusted (the model trusted before, and the plausible alternatives
        within :data:`~scaleprobe.models.selection.rules.PLAUSIBLE_FACTOR` of the
        level's SMAPE, join its interval), or the verdict given, with a note when
        the level was a candidate.
    answered : bool
        Whether the level now answers.

    Warns
    -----
    NoTrendWarning
        The level answers: the data cannot tell a trend from their noise.
    """
    trusted = verdict.trusted
    if trusted is not None and models[trusted].structural:
        return verdict, False
    model = FlatTrend(over=column).fit(X, y)
    if not no_trend(model, NO_TREND_LEVEL):
        return verdict, False
    try:
        flat_scores = evaluate(
            {FLAT: FlatTrend(over=column)},
            (X, y),
            cv=splitters,
            level=level,
            baseline=False,
        )
    except ValueError:
        return verdict, False
    table = summarize(flat_scores).set_index("cv")["smape"]
    smape = float(table.get("extrapolation", np.nan))
    evidence = _evidence(model)
    refusal = _refusal(model, models, training, (column, smape, limit), evidence)
    if refusal is not None:
        return replace(verdict, notes=(*verdict.notes, refusal)), False
    joined = xr.concat([scores, flat_scores], dim="model", join="outer")
    plausible = _plausible(verdict, summarize(joined), smape)
    level_trusted = _level(verdict, (X, y), column, level)
    reason = _reason(model, column, smape, plausible, evidence, level)
    warn(reason, NoTrendWarning, stacklevel=3)
    return replace(
        level_trusted,
        reason=reason,
        plausible=plausible,
        scores={**verdict.scores, FLAT: smape},
        models={**verdict.models, FLAT: model},
        added_scores=flat_scores,
    ), True


def _refusal(model, models, training, scored, evidence):
    """Why the level is not trusted although it shows no trend, or None."""
    column, smape, limit = scored
    shown = f"the measurements show no trend in {column} beyond their noise"
    if not smape <= limit:
        return (
            f"{shown} ({evidence}), but their level does not extrapolate either "
            f"(SMAPE {smape:.0f} %)"
        )
    nodes = floor_violation(model, floor_model(models), training)
    if nodes is not None:
        return (
            f"{shown} ({evidence}), but their level falls below the latency floor of "
            f"the measured traffic from {nodes:g} nodes"
        )
    return None


def _level(verdict, data, column, level):
    """The verdict trusting the level, with its calibrated interval (or a note why
    there is none)."""
    X, y = data
    notes, intervals = list(verdict.notes), dict(verdict.intervals)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            intervals[FLAT] = calibrate_interval(
                FlatTrend(over=column),
                X,
                y,
                level=level,
                cv=ExtrapolationSplit(column=column, n_splits=3),
            )
        except ValueError as error:
            notes.append(f"{FLAT}: no interval ({error})")
    return replace(verdict, trusted=FLAT, notes=tuple(notes), intervals=intervals)


def _plausible(verdict, summary, smape):
    """As the selection has them: the models whose extrapolation error is within
    PLAUSIBLE_FACTOR of the level's, among the one trusted before and its
    plausible alternatives (those not set aside)."""
    errors = summary.set_index(["model", "cv"])["smape"]
    candidates = [m for m in [verdict.trusted, *(verdict.plausible or ())] if m]
    return tuple(
        m
        for m in dict.fromkeys(candidates)
        if m != FLAT
        and float(errors.get((m, "extrapolation"), np.inf)) <= PLAUSIBLE_FACTOR * smape
    )


def _reason(model, column, smape, plausible, evidence, level):
    slope = _hidden_slope(model, level)
    joined = ""
    if plausible:
        joined = f"; the intervals of {', '.join(plausible)} join its own"
    return (
        f"the measurements show no trend in {column} beyond their noise ({evidence}): "
        f"every slope fitted to them is the noise's, so scaleprobe projects their "
        f"level, as for a program whose time does not change with the {column[:-1]} "
        f"count (SMAPE {smape:.1f} % on extrapolation to held-out {column[:-1]} "
        f"counts). It cannot tell a trend of up to {slope:.2f} in log-log slope "
        f"({2**slope:.2f}x per doubling) from the noise{joined} — measure larger "
        "counts, or repeat runs, to know more"
    )
