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

import numpy as np
import xarray as xr
from scipy import stats

from ..core.warnings import NoTrendWarning, warn
from ..evaluation.crossval import evaluate, summarize
from ..evaluation.intervals import calibrate_interval
from ..evaluation.splitters import ExtrapolationSplit
from ..laws.flat import NO_TREND_LEVEL, FlatTrend, no_trend
from .rules import PLAUSIBLE_FACTOR, _floor_violation

__all__ = ["FLAT", "trust_flat"]

#: Name of the level of the measurements in a fit's models.
FLAT = "flat"

#: Models that price what the program sends: a level is not theirs to replace.
_STRUCTURAL = ("traffic", "fim")


def _evidence(model):
    """The smallest p-value of each test over the groups (its strongest case for a
    trend), as text."""
    largest = {}
    for line in model.spread_.values():
        for test, value in line["tests"].items():
            largest[test] = min(largest.get(test, 1.0), value)
    names = {"slope": "slope", "rank": "rank order", "replicates": "between runs"}
    return ", ".join(f"{names[t]} p = {v:.2f}" for t, v in sorted(largest.items()))


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


def trust_flat(fit, X, y, splitters, level, smape_limit):
    """Trust the level of the measurements when they show no trend in ``p``.

    Parameters
    ----------
    fit : EnsembleFit
        After selection (and the change-of-regime check); ``selected``,
        ``verdict``, ``models``, ``intervals``, ``notes`` and the plausible models
        are updated.
    X : pandas.DataFrame
    y : ndarray
    splitters : dict of str to splitter
        The cross-validations the other models were scored on (``extrapolation``
        among them); the level is scored on the same.
    level : float
        Interval level.
    smape_limit : float
        Extrapolation SMAPE (percent) above which the level is not trusted either.

    Returns
    -------
    bool
        Whether the level now answers (the selection was replaced).

    Warns
    -----
    NoTrendWarning
        The level answers: the data cannot tell a trend from their noise.
    """
    if fit.selected in _STRUCTURAL:
        return False
    column = fit.training["column"]
    model = FlatTrend(over=column).fit(X, y)
    if not no_trend(model, NO_TREND_LEVEL):
        return False
    try:
        scores = evaluate(
            {FLAT: FlatTrend(over=column)},
            (X, y),
            cv=splitters,
            level=level,
            baseline=False,
        )
    except ValueError:
        return False
    table = summarize(scores).set_index("cv")["smape"]
    smape = float(table.get("extrapolation", np.nan))
    evidence = _evidence(model)
    if not smape <= smape_limit:
        fit.notes.append(
            f"the measurements show no trend in {column} beyond their noise "
            f"({evidence}), but their level does not extrapolate either (SMAPE "
            f"{smape:.0f} %)"
        )
        return False
    fit.models[FLAT] = model
    nodes = _floor_violation(fit, FLAT)
    if nodes is not None:
        del fit.models[FLAT]
        fit.notes.append(
            f"the measurements show no trend in {column} beyond their noise "
            f"({evidence}), but their level falls below the latency floor of the "
            f"measured traffic from {nodes:g} nodes"
        )
        return False
    before = fit.selected
    fit.scores = xr.concat([fit.scores, scores], dim="model", join="outer")
    fit.summary = summarize(fit.scores)
    # as the selection has them: the models whose extrapolation error is within
    # PLAUSIBLE_FACTOR of the level's, among those that were not set aside
    errors = fit.summary.set_index(["model", "cv"])["smape"]
    candidates = [m for m in [before, *fit.training.get("plausible", [])] if m]
    fit.training["plausible"] = [
        m
        for m in dict.fromkeys(candidates)
        if m != FLAT
        and float(errors.get((m, "extrapolation"), np.inf)) <= PLAUSIBLE_FACTOR * smape
    ]
    fit.selected = FLAT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fit.intervals[FLAT] = calibrate_interval(
                FlatTrend(over=column),
                X,
                y,
                level=level,
                cv=ExtrapolationSplit(column=column, n_splits=3),
            )
        except ValueError as error:
            fit.notes.append(f"{FLAT}: no interval ({error})")
    slope = _hidden_slope(model, level)
    joined = fit.training["plausible"]
    joined = f"; the intervals of {', '.join(joined)} join its own" if joined else ""
    fit.verdict = (
        f"the measurements show no trend in {column} beyond their noise ({evidence}): "
        f"every slope fitted to them is the noise's, so scaleprobe projects their "
        f"level, as for a program whose time does not change with the {column[:-1]} "
        f"count (SMAPE {smape:.1f} % on extrapolation to held-out {column[:-1]} "
        f"counts). It cannot tell a trend of up to {slope:.2f} in log-log slope "
        f"({2**slope:.2f}x per doubling) from the noise{joined} — measure larger "
        "counts, or repeat runs, to know more"
    )
    warn(fit.verdict, NoTrendWarning, stacklevel=3)
    return True
