"""A change of regime at the largest measured count, and what the ensemble does then.

When the time jumps over the last measured step (a collective's algorithm or
protocol switch, a working set leaving a cache), every law fitted across the jump
extrapolates the jump itself, and the extrapolation cross-validation cannot see it:
no fold trains on the new regime. :func:`continue_regime` finds such a jump with
:class:`~scaleprobe.models.RegimeTrend`, warns, and — unless the traffic-informed
model or FiM answers (they model what the program sends, not a shape of its time)
— trusts the trend continued from the new regime with the slope of the old one,
scored and calibrated on the counts before the jump.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from ..core.warnings import RegimeChangeWarning, warn
from ..evaluation.crossval import evaluate, summarize
from ..evaluation.intervals import calibrate_interval
from ..evaluation.splitters import ExtrapolationSplit
from ..laws.baseline import RegimeTrend

__all__ = ["REGIME", "continue_regime"]

#: Name of the regime-aware trend in a fit's models.
REGIME = "regime"

#: What a change of regime may be, in every message that names one.
_CAUSES = "an algorithm or protocol switch, a working set leaving a cache"


def _label(model, key):
    where = ", ".join(
        f"{c}={float(v):g}" for c, v in zip(model.group_columns_, key, strict=True)
    )
    return f" ({where})" if where else ""


def _jumps(model, column):
    counts = column[:-1]
    return "; ".join(
        f"the jump between {change['before']:g} and {change['after']:g} "
        f"{counts}s{_label(model, key)}, {change['factor']:.3g}x off the slope "
        f"before it (log-log slope {change['slope_last']:.2f} after "
        f"{change['slope_before']:.2f})"
        for key, change in model.changes_.items()
    )


def continue_regime(verdict, models, X, y, selectable, *, column, level, limit):
    """Read a jump over the last measured step; trust the trend beyond it.

    A jump is read as a change of regime only when the counts before it follow a
    trend that extrapolates within ``limit`` (held out one count at a time);
    after noise, it is a note and the verdict stands.

    Parameters
    ----------
    verdict : Verdict
        The verdict so far.
    models : dict of str to PerformanceModel
        The fitted models (a trusted one that is ``structural`` keeps its trust).
    X : pandas.DataFrame
    y : ndarray
    selectable : bool
        Whether a model could be judged at all (held-out node counts exist).
    column : str
        The process-count column.
    level : float
        Interval level.
    limit : float
        Extrapolation SMAPE (percent, within the old regime) above which the
        continued trend is not trusted either.

    Returns
    -------
    verdict : Verdict
        The continued trend trusted, or the verdict given with a note.
    answered : bool
        Whether the continued trend now answers.

    Warns
    -----
    RegimeChangeWarning
        Some configuration's last measured step is a change of regime (its trend
        is trusted, or a model of what the program sends is).
    """
    model = RegimeTrend(over=column).fit(X, y)
    if not model.changes_:
        return verdict, False
    jumps = _jumps(model, column)
    trusted = verdict.trusted
    if trusted is not None and models[trusted].structural:
        message = (
            f"{jumps} is a change of regime ({_CAUSES}); {trusted}, trusted, "
            "models what the program sends and does not extrapolate the jump as a "
            "trend"
        )
        warn(message, RegimeChangeWarning, stacklevel=3)
        return replace(verdict, notes=(*verdict.notes, message)), False
    first = min(change["after"] for change in model.changes_.values())
    earlier = (X[column] < first).to_numpy()
    smape = np.nan
    if selectable:
        smape = _earlier_smape(X[earlier], y[earlier], column, level)
    if not smape <= limit:
        # no trend before the jump to continue: a jump in noise is not a regime
        checked = f"SMAPE {smape:.0f} %" if np.isfinite(smape) else "too few counts"
        note = (
            f"{jumps}: the counts before it follow no trend that can be checked "
            f"({checked}), so it is not read as a change of regime"
        )
        return replace(verdict, notes=(*verdict.notes, note)), False
    continued = _continued(verdict, model, (X[earlier], y[earlier]), column, level)
    reason = (
        f"{jumps} is a change of regime ({_CAUSES}): every law fitted across it "
        f"extrapolates the jump itself. scaleprobe continues the trend from the "
        f"largest {column[:-1]} count with the slope measured before the jump (SMAPE "
        f"{smape:.1f} % extrapolating before it) and cannot tell whether another "
        "change follows — measure a larger count to confirm the new regime"
    )
    warn(reason, RegimeChangeWarning, stacklevel=3)
    return replace(continued, reason=reason), True


def _continued(verdict, model, earlier, column, level):
    """The verdict trusting the continued trend, with its interval calibrated on
    the counts before the jump (or a note why there is none)."""
    X, y = earlier
    notes, intervals = list(verdict.notes), dict(verdict.intervals)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # on the counts before the jump; the interval grows from the largest of
            # them, a step before the point the trend continues from (the new
            # regime's slope is borrowed, not measured)
            intervals[REGIME] = calibrate_interval(
                RegimeTrend(over=column),
                X,
                y,
                level=level,
                cv=ExtrapolationSplit(column=column, n_splits=3),
            )
        except ValueError as error:
            notes.append(f"{REGIME}: no interval ({error})")
    return replace(
        verdict,
        trusted=REGIME,
        notes=tuple(notes),
        plausible=(),
        models={**verdict.models, REGIME: model},
        intervals=intervals,
    )


def _earlier_smape(X, y, column, level):
    """Extrapolation SMAPE of the trend on the counts before the jump (NaN when too
    few counts to hold one out)."""
    try:
        scores = evaluate(
            {REGIME: RegimeTrend(over=column)},
            (X, y),
            cv={"extrapolation": ExtrapolationSplit(column=column, n_splits=3)},
            level=level,
            baseline=False,
        )
    except ValueError:
        return np.nan
    return float(summarize(scores)["smape"].iloc[0])
