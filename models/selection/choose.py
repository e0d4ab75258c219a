"""Where scaleprobe chooses the model it trusts for a projection.

:func:`choose_model` is the one decision: it takes the fitted models and their
cross-validation scores and returns a :class:`Verdict`, the model trusted (or
none) with every reason. Nothing changes a verdict afterwards; the fit, the command
line, the report and the demo print it with :func:`render_verdict`.

The rules, in order:

1. **What cannot be right** (:func:`~scaleprobe.models.selection.rules.set_aside`):
   a model blind to a parameter the sweep varies, one that falls below the latency
   floor of the measured traffic, and (while anything else is left) a degenerate
   fit are set aside.
2. **Preference** (:func:`~scaleprobe.models.selection.rules.prefer`): among the
   models that extrapolate within
   :data:`~scaleprobe.models.selection.limits.RELIABLE_SMAPE` on held-out node
   counts, the traffic-informed model, the naive trend and the best time-only law,
   in that order; a less preferred one is trusted only when it beats the others'
   SMAPE by :data:`~scaleprobe.models.selection.limits.BASELINE_MARGIN`. A model
   above the limit is never preferred, so no note can say that a law lost to a
   trend the verdict then finds unreliable.
3. **Honesty**: when no model extrapolates within the limit, the naive trend is
   trusted as a fallback if it held its own held-out check (the largest count held
   out, SMAPE within the limit; the verdict says so); otherwise, or when nothing can
   be checked on held-out node counts, no model is trusted.
4. **A change of regime** at the largest measured count
   (:mod:`~scaleprobe.models.selection.regimes`): unless a model of what the
   program sends is trusted, the trend continued from the new regime is.
5. **No trend beyond the noise** (:mod:`~scaleprobe.models.selection.no_trend`):
   unless a model of what the program sends is trusted, the level of the
   measurements is.
6. **A crossover at the smallest count**: a trusted time-only law whose
   communication already dominates there warns
   (:class:`~scaleprobe.models.DegenerateFitWarning`).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping

import numpy as np

from ..core.warnings import (
    DegenerateFitWarning,
    InsufficientDataWarning,
    UnreliableModelWarning,
    warn,
)
from ..evaluation.crossval import BASELINE, summarize
from .no_trend import trust_flat
from .regimes import continue_regime
from .rules import (
    PLAUSIBLE_FACTOR,
    RELIABLE_SMAPE,
    crossover_warning,
    percent,
    prefer,
    select_model,
    set_aside,
)

__all__ = ["Verdict", "choose_model", "render_verdict"]


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Which model scaleprobe trusts for a projection, and why.

    Parameters
    ----------
    trusted : str or None
        The model trusted; None when none can be.
    reason : str
        Why, in one paragraph (or why none is).
    refused : tuple of (str, str), default=()
        Every candidate set aside or not preferred, with its reason, in the order
        the rules found them.
    notes : tuple of str, default=()
        What else the rules found (a jump read as noise, a level that does not
        extrapolate, an interval that could not be calibrated).
    plausible : tuple of str or None, default=None
        The alternatives whose intervals join the trusted model's (their SMAPE
        within :data:`~scaleprobe.models.selection.rules.PLAUSIBLE_FACTOR` of its
        own); None when no model was judged on its scores.
    cv : str or None, default=None
        The cross-validation whose scores decided.
    scores : dict of str to float, default={}
        The SMAPE (percent) of every model under ``cv``.
    models : dict of str to estimator, default={}
        Models the decision fitted itself (the trend continued from a new regime,
        the level of the measurements), which the fit joins to its own.
    intervals : dict of str to PredictionInterval, default={}
        Their calibrated intervals.
    added_scores : xarray.Dataset or None, default=None
        Their cross-validation scores, joined to the fit's.
    fallback : bool, default=False
        The trusted model is the naive trend as a fallback: no model extrapolated
        within :data:`~scaleprobe.models.selection.limits.RELIABLE_SMAPE`, but the
        trend held its own held-out check.

    Examples
    --------
    >>> verdict = Verdict("pmnf", "scaleprobe trusts pmnf: SMAPE 2.0 %",
    ...                   refused=(("base", "ignores bandwidth, which varies"),))
    >>> verdict.lines()
    ['base is not selected: ignores bandwidth, which varies']
    """

    trusted: str | None
    reason: str
    refused: tuple = ()
    notes: tuple = ()
    plausible: tuple | None = None
    cv: str | None = None
    scores: Mapping = dataclasses.field(default_factory=dict)
    models: Mapping = dataclasses.field(default_factory=dict)
    intervals: Mapping = dataclasses.field(default_factory=dict)
    added_scores: object = None
    fallback: bool = False

    def lines(self):
        """The refusals (``"<model> is not selected: <why>"``) and notes, in order.

        Returns
        -------
        list of str
        """
        refused = [f"{name} is not selected: {why}" for name, why in self.refused]
        return refused + list(self.notes)

    def to_dict(self):
        """The decision as a JSON-ready dict (the fitted models and scores left out).

        Returns
        -------
        dict
        """
        return {
            "trusted": self.trusted,
            "reason": self.reason,
            "refused": [list(pair) for pair in self.refused],
            "notes": list(self.notes),
            "plausible": None if self.plausible is None else list(self.plausible),
            "cv": self.cv,
            "scores": {k: float(v) for k, v in self.scores.items()},
            "fallback": self.fallback,
        }

    @classmethod
    def from_dict(cls, data):
        """Inverse of :meth:`to_dict`.

        Parameters
        ----------
        data : dict

        Returns
        -------
        Verdict
        """
        plausible = data.get("plausible")
        return cls(
            trusted=data.get("trusted"),
            reason=data.get("reason", ""),
            refused=tuple(tuple(pair) for pair in data.get("refused", ())),
            notes=tuple(data.get("notes", ())),
            plausible=None if plausible is None else tuple(plausible),
            cv=data.get("cv"),
            scores=dict(data.get("scores") or {}),
            fallback=bool(data.get("fallback", False)),
        )


def render_verdict(verdict):
    """The verdict as the command line, the report and the demo print it.

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    str
        The trusted model (or none) and why, the scores it was judged on, every
        candidate not trusted with its reason, the notes and the plausible
        alternatives.

    Examples
    --------
    >>> print(render_verdict(Verdict(
    ...     "pmnf", "scaleprobe trusts pmnf: SMAPE 2.0 % on extrapolation",
    ...     refused=(("base", "ignores bandwidth, which varies"),),
    ...     cv="extrapolation", scores={"pmnf": 2.0, "base": 9.5})))
    trusted: pmnf
    scaleprobe trusts pmnf: SMAPE 2.0 % on extrapolation
    SMAPE (%) on extrapolation: pmnf 2, base 9.5
    not trusted:
      base: ignores bandwidth, which varies
    """
    label = verdict.trusted or "none"
    if verdict.fallback:
        label += " (fallback: the naive trend held its own held-out check)"
    lines = [f"trusted: {label}", verdict.reason]
    if verdict.scores:
        ranked = sorted(verdict.scores.items(), key=lambda item: _order(item[1]))
        scores = ", ".join(f"{name} {value:.3g}" for name, value in ranked)
        lines.append(f"SMAPE (%) on {verdict.cv}: {scores}")
    if verdict.refused:
        lines.append("not trusted:")
        lines += [f"  {name}: {why}" for name, why in verdict.refused]
    lines += [f"note: {note}" for note in verdict.notes]
    if verdict.plausible:
        lines.append(
            f"plausible alternatives (their intervals join): "
            f"{', '.join(verdict.plausible)}"
        )
    return "\n".join(lines)


def _order(value):
    return value if np.isfinite(value) else np.inf


def choose_model(
    models,
    scores,
    X,
    y,
    *,
    training,
    splitters,
    degenerate=None,
    level=0.9,
    checkable=True,
):
    """Choose the model scaleprobe trusts for a projection: the one decision.

    Parameters
    ----------
    models : dict of str to PerformanceModel
        Every model fitted on all data, the naive baseline (``baseline``) included.
    scores : xarray.Dataset
        Their cross-validation (:func:`~scaleprobe.models.evaluate`).
    X : pandas.DataFrame
        The training features (to probe which parameters a model ignores).
    y : ndarray
        The measurements.
    training : dict
        The training metadata (``column``, feature ranges, ppn, ``s0``,
        parameters): the latency floor is checked on its frames.
    splitters : dict of str to splitter
        The cross-validations that were run; ``extrapolation`` decides when present.
    degenerate : dict of str to str, default=None
        Models whose final fit was degenerate, with the warning it gave.
    level : float, default=0.9
        Level of the intervals of the models the decision fits itself.
    checkable : bool, default=True
        False when no held-out node count could check a model (too few counts and
        no cross-validation given): then nothing is trusted.

    Returns
    -------
    Verdict

    Warns
    -----
    InsufficientDataWarning
        No model could be checked on held-out data.
    UnreliableModelWarning
        No model extrapolates within :data:`RELIABLE_SMAPE`, or the one trusted
        extrapolates worse than the naive baseline.
    RegimeChangeWarning
        A change of regime at the largest count (its trend is trusted, or a model of
        what the program sends is).
    NoTrendWarning
        The measurements show no trend beyond their noise: their level is trusted.
    DegenerateFitWarning
        The trusted time-only law puts the crossover at the smallest count.
    """
    column = training["column"]
    where = {"column": column, "level": level, "limit": RELIABLE_SMAPE}
    if not checkable:
        verdict = Verdict(trusted=None, reason=_unchecked(X, column))
        return continue_regime(verdict, models, X, y, False, **where)[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        verdict = _by_scores(models, scores, X, training, splitters, degenerate)
    verdict, answered = continue_regime(verdict, models, X, y, True, **where)
    if not answered:
        context = {"training": training, "splitters": splitters, **where}
        verdict, answered = trust_flat(verdict, models, scores, X, y, **context)
    for item in caught:  # unless a change of regime or the level answered
        if not (answered and issubclass(item.category, UnreliableModelWarning)):
            warnings.warn_explicit(
                item.message, item.category, item.filename, item.lineno
            )
    if verdict.trusted is not None:
        model = verdict.models.get(verdict.trusted, models.get(verdict.trusted))
        message = crossover_warning(model, verdict.trusted, training)
        if message is not None:
            warn(message, DegenerateFitWarning, stacklevel=2)
    return verdict


def _unchecked(X, column):
    return (
        f"with {X[column].nunique()} {column} count(s) no model can be checked on "
        f"held-out {column[:-1]} counts: the laws are fitted (project one by name to "
        f"see it), but none is presented as trustworthy — measure a third "
        f"{column[:-1]} count"
    )


def _by_scores(models, scores, X, training, splitters, degenerate):
    """Rules 1-3: the verdict of the scores (which warns where it cannot trust)."""
    cv = "extrapolation" if "extrapolation" in splitters else next(iter(splitters))
    excluded, physics = set_aside(models, X, training, degenerate or {})
    refused = tuple(excluded.items())
    table = summarize(scores).set_index(["model", "cv"])["smape"]
    scored = {
        str(name): float(value) for (name, split), value in table.items() if split == cv
    }

    def smape(name):
        return float(table.get((name, cv), np.nan))

    common = {"refused": refused, "cv": cv, "scores": scored}
    try:
        best = select_model(scores, cv=cv, exclude=list(excluded))
    except ValueError:
        if not _all_set_aside(scored, excluded):
            count = training["column"][:-1]
            reason = (
                f"no model could be checked on held-out data ({cv}: every fold "
                f"holds too few {count} counts): the laws are fitted, but none is "
                "presented as trustworthy — project one by name to see it, and "
                f"measure more {count} counts"
            )
            warn(reason, InsufficientDataWarning, stacklevel=3)
            return Verdict(None, reason, **common)
        best = None  # every scored law was set aside: the trend alone is left
    what = (
        f"extrapolation to held-out {training['column'][:-1]} counts"
        if cv == "extrapolation"
        else f"{cv} cross-validation"
    )
    law = best
    if best == "traffic":
        try:
            law = select_model(scores, cv=cv, exclude=[*excluded, "traffic"])
        except ValueError:
            law = None
    candidates = [
        name
        for name in ("traffic", BASELINE)
        if name in models and name not in excluded
    ]
    # only what extrapolates within the limit may be preferred: a note that a law
    # does not beat an unreliable baseline would contradict the verdict
    unreliable = _unreliable(smape, [*candidates, law], what)
    chosen, beaten = prefer(
        smape,
        [n for n in candidates if n not in unreliable],
        None if law in unreliable else law,
        what,
    )
    common["refused"] = refused + tuple(beaten) + tuple(unreliable.items())
    if chosen is None:
        return _fallback(scores, cv, smape, what, common)
    worse = None
    if chosen == BASELINE and law is not None and smape(law) > smape(BASELINE):
        worse = law
    judged = {"what": what, "column": training["column"], "worse": worse}
    return _judged(models, chosen, smape, physics, judged, common)


def _all_set_aside(scored, excluded):
    """True when laws were scored on held-out data but every one was set aside."""
    laws = [n for n, v in scored.items() if n != BASELINE and np.isfinite(v)]
    return bool(laws) and all(n in excluded for n in laws)


def _unreliable(smape, names, what):
    """The candidates whose SMAPE is above :data:`RELIABLE_SMAPE`, with why."""
    return {
        name: (
            f"SMAPE {smape(name):.1f} % on {what} is above the "
            f"{RELIABLE_SMAPE:.0f} % limit"
        )
        for name in dict.fromkeys(names)
        if name is not None
        and np.isfinite(smape(name))
        and not smape(name) <= RELIABLE_SMAPE
    }


def _last_fold(scores, cv, name):
    """SMAPE of ``name`` on the first fold of ``cv`` (extrapolation: the largest
    count held out, the others trained on), or NaN."""
    if name not in scores["model"].values or cv not in scores["cv"].values:
        return np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = scores["smape"].sel(model=name, cv=cv).isel(fold=0).mean("group")
    return float(value)


def _fallback(scores, cv, smape, what, common):
    """No model within the limit: the naive trend, when it held its own held-out
    check (the largest count, held out), labelled as a fallback; else nothing."""
    scored = {n: v for n, v in common["scores"].items() if np.isfinite(v)}
    best = min(scored, key=scored.get) if scored else BASELINE
    own = _last_fold(scores, cv, BASELINE) if cv == "extrapolation" else np.nan
    summary = (
        f"no model extrapolates within {RELIABLE_SMAPE:.0f} % SMAPE (best: {best}, "
        f"{smape(best):.0f} % on {what}"
    )
    if own <= RELIABLE_SMAPE:
        reason = (
            f"{summary}), but the naive trend held its own held-out check (SMAPE "
            f"{own:.1f} % on the largest count, held out): scaleprobe projects it as "
            "a fallback — a power law through the two largest measured counts, the "
            "local trend continued, no law; measure larger counts to know more"
        )
        return Verdict(BASELINE, reason, plausible=(), fallback=True, **common)
    own_text = (
        f"; the naive trend missed its own check by {own:.0f} %"
        if np.isfinite(own)
        else ""
    )
    reason = (
        f"{summary}{own_text}): the data cannot tell how this program scales, so no "
        "projection is presented as trustworthy — measure more (or larger) node "
        "counts"
    )
    warn(reason, UnreliableModelWarning, stacklevel=4)
    return Verdict(None, reason, **common)


def _judged(models, best, smape, physics, judged, common):
    """Rule 3 and the reason of the verdict of the scores."""
    what, worse = judged["what"], judged["worse"]
    baseline, score = smape(BASELINE), smape(best)
    plausible = tuple(
        name
        for name in models
        if name != best
        and name not in physics
        and float(np.nan_to_num(smape(name), nan=np.inf)) <= PLAUSIBLE_FACTOR * score
    )
    if best == BASELINE:
        reason = (
            f"no model beats the naive trend by a clear margin, so scaleprobe "
            f"projects the trend: a power law through the two largest measured "
            f"{judged['column'][:-1]} counts of each configuration (SMAPE "
            f"{score:.1f} % on {what}). It knows no physics: no latency floor, no "
            "unmeasured bandwidth or scale — read far projections as the local trend "
            "continued, and measure larger counts to know more"
        )
        if worse is not None:
            warn(
                f"{worse}, the best law, extrapolates worse than the naive "
                f"baseline (SMAPE {percent(smape(worse))} % against "
                f"{percent(baseline)} %): "
                "scaleprobe projects the naive trend instead",
                UnreliableModelWarning,
                stacklevel=4,
            )
    else:
        reason = (
            f"scaleprobe trusts {best}: SMAPE {percent(score)} % on {what} "
            f"(naive baseline {percent(baseline)} %)"
        )
        if models[best].has_floor:
            reason += "; it models computation and traffic counts and prices them "
            reason += "with the link model, so it knows the latency floor"
        if np.isfinite(baseline) and score > baseline:
            warn(
                f"{best} extrapolates worse than the naive baseline (SMAPE "
                f"{percent(score)} % against {percent(baseline)} %): read its "
                "projection with care",
                UnreliableModelWarning,
                stacklevel=4,
            )
    return Verdict(best, reason, plausible=plausible, **common)
