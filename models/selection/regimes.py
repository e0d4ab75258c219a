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

import numpy as np

from ..core.warnings import RegimeChangeWarning, warn
from ..evaluation.crossval import evaluate, summarize
from ..evaluation.intervals import calibrate_interval
from ..evaluation.splitters import ExtrapolationSplit
from ..laws.baseline import RegimeTrend

__all__ = ["REGIME", "continue_regime"]

#: Name of the regime-aware trend in a fit's models.
REGIME = "regime"

#: Models that price what the program sends: a jump in its time is theirs to explain.
_STRUCTURAL = ("traffic", "fim")

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


def continue_regime(fit, X, y, selectable, level, smape_limit):
    """Warn of a jump over the last measured step and trust the trend beyond it.

    A jump is read as a change of regime only when the counts before it follow a
    trend that extrapolates within ``smape_limit`` (held out one count at a time);
    after noise, it is a note and the selection stands.

    Parameters
    ----------
    fit : EnsembleFit
        After selection; ``selected``, ``verdict``, ``models``, ``intervals`` and
        ``notes`` are updated.
    X : pandas.DataFrame
    y : ndarray
    selectable : bool
        Whether the fit could select a model at all (held-out node counts exist).
    level : float
        Interval level.
    smape_limit : float
        Extrapolation SMAPE (percent, within the old regime) above which the
        continued trend is not trusted either.

    Returns
    -------
    bool
        Whether the continued trend now answers (the selection was replaced).

    Warns
    -----
    RegimeChangeWarning
        Some configuration's last measured step is a change of regime.
    """
    column = fit.training["column"]
    model = RegimeTrend(over=column).fit(X, y)
    if not model.changes_:
        return False
    jumps = _jumps(model, column)
    if fit.selected in _STRUCTURAL:
        message = (
            f"{jumps} is a change of regime ({_CAUSES}); {fit.selected}, trusted, "
            "models what the program sends and does not extrapolate the jump as a "
            "trend"
        )
        fit.notes.append(message)
        warn(message, RegimeChangeWarning, stacklevel=3)
        return False
    first = min(change["after"] for change in model.changes_.values())
    earlier = (X[column] < first).to_numpy()
    cv = ExtrapolationSplit(column=column, n_splits=3)
    smape = np.nan
    if selectable:
        try:
            scores = evaluate(
                {REGIME: RegimeTrend(over=column)},
                (X[earlier], y[earlier]),
                cv={"extrapolation": cv},
                level=level,
                baseline=False,
            )
            smape = float(summarize(scores)["smape"].iloc[0])
        except ValueError:
            pass  # too few counts before the jump to hold one out
    if not smape <= smape_limit:
        # no trend before the jump to continue: a jump in noise is not a regime
        checked = f"SMAPE {smape:.0f} %" if np.isfinite(smape) else "too few counts"
        fit.notes.append(
            f"{jumps}: the counts before it follow no trend that can be checked "
            f"({checked}), so it is not read as a change of regime"
        )
        return False
    fit.models[REGIME] = model
    fit.selected = REGIME
    fit.training["plausible"] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # on the counts before the jump; the interval grows from the largest of
            # them, a step before the point the trend continues from (the new
            # regime's slope is borrowed, not measured)
            fit.intervals[REGIME] = calibrate_interval(
                RegimeTrend(over=column), X[earlier], y[earlier], level=level, cv=cv
            )
        except ValueError as error:
            fit.notes.append(f"{REGIME}: no interval ({error})")
    fit.verdict = (
        f"{jumps} is a change of regime ({_CAUSES}): every law fitted across it "
        f"extrapolates the jump itself. scaleprobe continues the trend from the "
        f"largest {column[:-1]} count with the slope measured before the jump (SMAPE "
        f"{smape:.1f} % extrapolating before it) and cannot tell whether another "
        "change follows — measure a larger count to confirm the new regime"
    )
    warn(fit.verdict, RegimeChangeWarning, stacklevel=3)
    return True
