"""Fit every series of a profile as one Dask graph.

:func:`fit_profile` splits the series into a few chunks; each chunk is one task that
groups its series by their measured counts and searches every candidate law of
every series at once (:mod:`~scaleprobe.models.profiles.search`): fits on every
prefix of the counts, held-out errors, the choice, and the same choice made on
shorter prefixes (whose errors on the counts after them calibrate the intervals).
One last task pools those errors over the whole profile, widens every interval by
what they call for (:func:`interval_rate`) and gives each series its verdict
(:func:`judge`).
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..laws.regime import find_jumps, past_break
from ..selection.limits import RELIABLE_SMAPE, smape_of_log
from .model import FLOOR, interval_scale
from .search import (
    HORIZON,
    Candidate,
    SeriesGroup,
    default_candidates,
    no_trend,
    predict,
    search_group,
    select,
)

__all__ = [
    "fit_profile",
    "interval_rate",
    "judge",
    "search_chunk",
]

#: Series per task of the graph, at most (and as many tasks as workers, at least).
CHUNK = 2000
# Shorter prefixes whose choice calibrates the intervals (nested), at most.
_NESTED = 3
# Noise margin of the choice: this many standard errors of a centre.
_NOISE_MARGIN = 2.0
# Alternatives kept for the interval: the extremes at these factors beyond.
_SPAN = (2.0, 4.0, 16.0, HORIZON)
#: The factor of a profile too short to calibrate (three counts or fewer): the
#: median factor of the profiles of ``tests/benchmarks/bench_external.py``.
UNCALIBRATED = 2.0


def _centres(values):
    """Mean, count and the pooled log standard deviation of repetitions."""
    centre = np.array([np.mean(v) for v in values])
    count = np.array([v.size for v in values], dtype=float)
    dof = sum(v.size - 1 for v in values)
    if dof <= 0:
        return centre, count, 0.0
    squares = sum(float(np.sum(np.log(v / np.mean(v)) ** 2)) for v in values)
    return centre, count, math.sqrt(squares / dof)


#: Why a series with a value of zero or less is left out.
_LOW = "values that are zero or negative"
#: Why a series that never took any time (or count) is left out.
_NEVER = "every value zero (the call path never ran)"


def _usable(series, axis="ranks"):
    """The series a law can be fitted to, the others by reason, and notes that
    name each value left out (the series, the count and the value).

    Counts at the start of a series where every repetition is zero are where its
    call path did not run yet (an MPI call on one rank): the series starts at its
    first count with a value. Any other zero or negative value leaves the series
    out, as does a series that is zero everywhere."""
    usable, skipped, not_finite, not_positive, late = [], {}, [], [], []
    for index, item in enumerate(series):
        values = [np.asarray(v, dtype=float) for v in item.values]
        not_finite += [
            f"{item.name} {value:g} at {x:g} {axis}"
            for x, v in zip(item.x, values, strict=True)
            for value in v[~np.isfinite(v)]
        ]
        values = [v[np.isfinite(v)] for v in values]
        keep = [i for i, v in enumerate(values) if v.size]
        values = [values[i] for i in keep]
        x = np.asarray(item.x, dtype=float)[keep]
        if values and not any(np.any(v) for v in values):
            skipped.setdefault(_NEVER, []).append(index)
            continue
        start = next((i for i, v in enumerate(values) if np.any(v)), 0)
        if start:
            late.append(f"{item.name} from {x[start]:g} {axis}")
            values, x = values[start:], x[start:]
        low = [
            (c, v[v <= 0][0]) for c, v in zip(x, values, strict=True) if np.any(v <= 0)
        ]
        if low:
            skipped.setdefault(_LOW, []).append(index)
            not_positive.append(f"{item.name} {low[0][1]:g} at {low[0][0]:g} {axis}")
        elif x.size < 2:
            skipped.setdefault("fewer than two counts", []).append(index)
        else:
            usable.append((index, x, *_centres(values)))
    return usable, skipped, _value_notes(not_finite, not_positive, late)


def _value_notes(not_finite, not_positive, late):
    """What :func:`_usable` left out or began later, in words."""
    notes = []
    if not_finite:
        notes.append(
            f"{len(not_finite)} value(s) left out as not finite numbers (NaN or "
            f"inf): {_listed(not_finite)}"
        )
    if not_positive:
        notes.append(
            f"{len(not_positive)} series left out for a value that is zero or "
            "negative after their first value (a law of positive values cannot "
            f"follow it): {_listed(not_positive)}"
        )
    if late:
        notes.append(
            f"{len(late)} series begin at their first count with a value (zero "
            f"before: the call path did not run there): {_listed(late)}"
        )
    return notes


def _listed(items, limit=3):
    """The first ``limit`` items, and how many more."""
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return "; ".join(items[:limit]) + more


def search_chunk(items):
    """Search the laws of a chunk of series: one task of the graph.

    Parameters
    ----------
    items : list of tuple
        ``(index, x, centre, count, noise)`` per series.

    Returns
    -------
    list of dict
        Per series: its ``index``, the law ``chosen`` (an index of
        :func:`~scaleprobe.models.profiles.search.default_candidates`, -1 for none),
        ``coef``, ``score`` (mean |log error| held out), ``best`` (the law with the
        best score), the plausible ``alternatives``, ``trend`` (the naive trend's
        log error on the largest count held out), ``rates`` (the nested errors
        with their scales, :func:`_nested`), ``across_breaks`` (the nested errors
        left out because they lie across a break) and ``jumps``.
    """
    laws = default_candidates()
    order = np.arange(len(laws))
    groups = {}
    for item in items:
        groups.setdefault(tuple(item[1]), []).append(item)
    out = []
    for members in groups.values():
        out += _search_members(members, laws, order)
    return out


def _search_members(members, laws, order):
    x = members[0][1]
    group = SeriesGroup(
        x=x,
        centre=np.column_stack([m[2] for m in members]),
        count=np.column_stack([m[3] for m in members]),
        noise=np.array([m[4] for m in members]),
    )
    found = search_group(group, laws)
    margin = _NOISE_MARGIN * group.noise / np.sqrt(group.count.mean(axis=0))
    m = x.size
    # the series without a trend on each prefix the choices see
    flats = {k: no_trend(group, k, found.jumps) for k in range(max(1, m - 3), m + 1)}
    flat = flats[m]
    chosen, score, eligible = select(found, laws, m, margin, order, flat)
    rates, checks, dropped = _nested(found, laws, group, margin, order, flats)
    # the check of the counts before a jump at the largest one
    before, before_score, _ = select(found, laws, m - 1, margin, order, flats[m - 1])
    naive = laws.index(Candidate("power", window=2))
    far = predict(laws, found.coef, x[-1] * np.asarray(_SPAN))
    out = []
    for s, member in enumerate(members):
        trend = np.nan
        if m - 1 in found.errors:
            trend = float(found.errors[m - 1][naive, s, m - 1])
        scores = np.full(len(laws), np.nan) if score is None else score[:, s]
        best = int(np.nanargmin(scores)) if np.isfinite(scores).any() else -1
        out.append(
            {
                "index": member[0],
                "chosen": int(chosen[s]),
                "coef": found.coef[:, s, :],
                "score": float(checks[s])
                if np.isfinite(checks[s])
                else (float(scores[chosen[s]]) if chosen[s] >= 0 else np.nan),
                "best": best,
                "best_score": float(scores[best]) if best >= 0 else np.nan,
                "alternatives": _extremes(eligible[:, s], far[:, s, :], chosen[s]),
                "trend": trend,
                "before_jump": float(before_score[before[s], s])
                if before_score is not None and before[s] >= 0
                else np.nan,
                "rates": rates[s],
                "across_breaks": int(dropped[s]),
                "jumps": found.jumps[s],
                "no_trend": bool(flat[s])
                and chosen[s] >= 0
                and laws[chosen[s]].kind == "constant",
            }
        )
    return out


def _extremes(eligible, far, chosen):
    """The plausible laws whose predictions bound the others' beyond the data."""
    indices = np.flatnonzero(eligible & np.all(np.isfinite(far), axis=1))
    if indices.size == 0:
        return []
    picked = {int(indices[np.argmin(far[indices, j])]) for j in range(far.shape[1])}
    picked |= {int(indices[np.argmax(far[indices, j])]) for j in range(far.shape[1])}
    picked.discard(int(chosen))
    return sorted(picked)


def _nested(found, laws, group, margin, order, flats):
    """The choice made again on shorter prefixes, judged on the counts after them.

    Returns, per series, one record per count after a prefix — ``(|log error|,
    spread, doublings, standard error)``: how wrong the law chosen on the prefix
    was there, the spread (log) of the plausible laws there, how far beyond the
    prefix, and the standard error of a centre — the interval's calibration
    (:func:`interval_rate`); and the weighted mean |log error| at the next count
    (the honest check of the choice: laws chosen among many by their fit to the
    same counts look better than they are).

    A count at or after a break the series shows beyond the prefix
    (:func:`~scaleprobe.models.laws.regime.find_jumps`) gives no record: its error
    is the break's, which the fit names and widens that series for, not how far a
    law strays when it extrapolates; pooled over the profile, one such error set
    the factor of every series (the 90 % quantile of 14 errors is their largest).
    The third result counts, per series, the errors so left out. ``flats`` gives,
    per prefix length, the series without a trend (:func:`no_trend`).
    """
    m = group.x.size
    records = [[] for _ in range(group.size)]
    dropped = np.zeros(group.size, dtype=int)
    total, weight = np.zeros(group.size), np.zeros(group.size)
    standard = group.noise / np.sqrt(group.count.mean(axis=0))
    for rank, length in enumerate(range(m - 1, max(2, m - 1 - _NESTED), -1)):
        chosen, score, eligible = select(
            found, laws, length, margin, order, flats[length]
        )
        if score is None:
            continue
        distance = np.log2(group.x[length:] / group.x[length - 1])
        errors = found.errors[length][:, :, length:]
        for s in np.flatnonzero(chosen >= 0):
            error = errors[chosen[s], s]
            plausible = errors[eligible[:, s], s]
            spread = np.nanmax(plausible, axis=0) - np.nanmin(plausible, axis=0)
            ok = np.isfinite(error) & np.isfinite(spread)
            past = past_break(found.jumps[s], length, m)
            dropped[s] += int(np.sum(ok & past))
            ok &= ~past
            records[s] += [
                (abs(float(e)), float(w), float(d), float(standard[s]))
                for e, w, d in zip(error[ok], spread[ok], distance[ok], strict=True)
            ]
            if np.isfinite(error[0]):
                total[s] += 0.5**rank * abs(error[0])
                weight[s] += 0.5**rank
    with np.errstate(invalid="ignore"):
        checks = np.where(weight > 0, total / weight, np.nan)
    return records, checks, dropped


def interval_rate(records, level):
    """The factor every interval of a profile takes on its scale, from the errors
    the choice showed where it extrapolated inside the data.

    The errors the choice, made on shorter prefixes, showed on the counts after
    them (:func:`_nested`), pooled over the series of the profile (split-conformal
    over its series), are divided by their ``"combined"`` scale
    (:func:`~scaleprobe.models.profiles.model.interval_scale`); the ``level``
    conformal quantile of those ratios is the factor. One rule for every profile:
    nothing is tuned to a data set.

    Parameters
    ----------
    records : list of list of tuple
        Per series, ``(|log error|, spread, doublings, standard error)`` per
        held-out count.
    level : float

    Returns
    -------
    form : str
        ``"combined"``; ``"spread"`` without any error to calibrate on, when the
        factor is :data:`UNCALIBRATED`.
    factor : float
    count : int
        Errors behind the factor.

    Examples
    --------
    Errors of 0.1 times the scale, where the laws agree (no spread, no noise):

    >>> one = [(0.1 * (d**0.5 + FLOOR * d), 0.0, d, 0.0) for d in (1.0, 2.0, 4.0)]
    >>> form, factor, count = interval_rate([one] * 4, 0.9)
    >>> form, round(factor, 3), count
    ('combined', 0.1, 12)
    >>> interval_rate([[], []], 0.9)
    ('spread', 2.0, 0)
    """
    table = np.asarray([r for series in records for r in series], dtype=float)
    if table.size == 0:
        return "spread", UNCALIBRATED, 0
    table = table.reshape(-1, 4)
    scale = interval_scale("combined", *table[:, 1:].T)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(table[:, 0] > 0, table[:, 0] / scale, 0.0)
    ratio = np.sort(np.nan_to_num(ratio, nan=np.inf, posinf=np.inf))
    rank = min(math.ceil((ratio.size + 1) * level), ratio.size)
    factor = float(ratio[rank - 1])
    if not math.isfinite(factor):
        return "spread", UNCALIBRATED, int(ratio.size)
    return "combined", factor, int(ratio.size)


def judge(partial, x, centre):
    """The verdict on one series: the law to project, its status and why.

    Parameters
    ----------
    partial : dict
        The series' result of :func:`search_chunk`.
    x, centre : ndarray
        Its counts and centres.

    Returns
    -------
    law_index : int
        -1 for the regime trend (built from the jump).
    status : {"trusted", "fallback", "refused"}
    reason : str
    """
    laws = default_candidates()
    check = smape_of_log(partial["score"])
    trend = smape_of_log(partial["trend"])
    jumps = partial["jumps"]
    if jumps and jumps[-1]["index"] == x.size - 1:
        return _regime_verdict(jumps[-1], smape_of_log(partial["before_jump"]))
    if partial["chosen"] >= 0 and check <= RELIABLE_SMAPE:
        law = laws[partial["chosen"]]
        held = f"{law.label} held its held-out check (SMAPE {check:.1f} %)"
        if partial.get("no_trend"):
            held = (
                f"its counts show no trend beyond their noise, so its level is "
                f"projected ({held}); a trend too small to show may remain, and the "
                "laws it would have had otherwise stay in its interval"
            )
        return partial["chosen"], "trusted", held
    naive = laws.index(Candidate("power", window=2))
    if np.isfinite(trend) and trend <= RELIABLE_SMAPE:
        why = (
            f"no law held within {RELIABLE_SMAPE:.0f} % SMAPE; "
            if np.isfinite(check)
            else ""
        )
        return (
            naive,
            "fallback",
            (
                f"{why}the naive trend held its own held-out check (SMAPE "
                f"{trend:.1f} % at {x[-1]:g}): it is projected as a fallback — the "
                "local trend continued, no law"
            ).strip(),
        )
    best = partial["best"] if partial["best"] >= 0 else naive
    if x.size < 3:
        return (
            best,
            "refused",
            (f"{x.size} counts: no law can be checked on a held-out count"),
        )
    return best, "refused", _refusal(laws[best].label, check, partial, trend)


def _refusal(label, check, partial, trend):
    """Why a series is refused, in terms that agree with the verdict: the check is
    the choice made again without the largest counts; the best law's own score is
    on the counts that chose it, so a low one does not contradict the refusal."""
    if np.isfinite(check):
        missed = (
            f"the law chosen without the largest counts missed them by {check:.0f} % "
            "SMAPE"
        )
    else:
        missed = "no law could be chosen and checked on a held-out count"
    return (
        f"no law held its held-out check within {RELIABLE_SMAPE:.0f} % SMAPE: "
        f"{missed} (best here: {label}, {smape_of_log(partial['best_score']):.0f} % "
        f"on the counts that chose it) and the naive trend missed its own by "
        f"{trend:.0f} %"
    )


def _regime_verdict(jump, check):
    what = (
        f"a jump between {jump['before']:g} and {jump['after']:g} "
        f"({jump['factor']:.3g}x off the slope before it)"
    )
    if np.isfinite(check) and check <= RELIABLE_SMAPE:
        return (
            -1,
            "trusted",
            (
                f"{what}: a change of regime; the trend before it is continued from "
                f"{jump['after']:g} (the counts before it held their check, SMAPE "
                f"{check:.1f} %)"
            ),
        )
    return (
        -1,
        "refused",
        (f"{what}: a change of regime, and the counts before it hold no trend"),
    )


def fit_profile(table, *, level=0.9, client=None, chunk=CHUNK):
    """Fit every series of a profile: one Dask graph over chunks of series.

    Parameters
    ----------
    table : ProfileTable
    level : float, default=0.9
        Level of the intervals.
    client : distributed.Client, default=None
        Run the graph there; default: Dask's threaded scheduler in this process.
    chunk : int, default=CHUNK
        Series per task, at most.

    Returns
    -------
    ProfileFit
    """
    import dask

    from .result import ProfileFit

    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    start = time.perf_counter()
    series = table.series()
    usable, skipped, notes = _usable(series, table.axis)
    if not usable:
        raise ValueError(
            f"no series of {table.source.get('path', 'the profile')} can be modelled: "
            + "; ".join(
                [f"{len(v)} with {k}" for k, v in skipped.items() if k != _LOW] + notes
            )
        )
    tasks = [dask.delayed(search_chunk)(part) for part in _chunks(usable, chunk)]
    final = dask.delayed(_finish)(tasks, usable, level)
    if client is not None:
        models, calibration = client.compute(final).result()
    else:
        # a callable scheduler: naming one makes Dask look for (and import)
        # distributed, a second of start-up for a command that does not use it
        from dask.local import get_sync
        from dask.threaded import get

        models, calibration = final.compute(
            scheduler=get if len(tasks) > 1 else get_sync
        )
    by_index = dict(zip((u[0] for u in usable), models, strict=True))
    return ProfileFit.build(
        table,
        series,
        by_index,
        skipped,
        level=level,
        calibration=calibration,
        seconds=time.perf_counter() - start,
        notes=notes,
    )


def _chunks(usable, chunk):
    """Chunks of at most ``chunk`` series, keeping series of one grid together
    where they fit."""
    ordered = sorted(usable, key=lambda item: tuple(item[1]))
    size = max(
        1,
        min(
            int(chunk),
            math.ceil(len(ordered) / 2) if len(ordered) > 400 else len(ordered),
        ),
    )
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]


def _trend_neighbours(laws, partial):
    """What a fallback's interval spans besides the naive trend: the power law
    through the last three counts. No law held its check, so the trend of the
    last two counts is projected; how far its slope moved from the last three's
    is what the data say of that slope (LULESH's MPI_Allreduce, 0.67, 1.5 and 4.6
    ms at 125, 216 and 343 ranks: 8.3 s at 8000 ranks on the last two counts'
    slope, 2.4; 1.8 s on the last three's, 1.9)."""
    three = laws.index(Candidate("power", window=3))
    coef = np.asarray(partial["coef"][three], dtype=float)
    return [(laws[three], coef)] if np.all(np.isfinite(coef)) else []


def _finish(results, usable, level):
    """Pool the nested errors, widen the intervals, judge every series."""
    partials = {p["index"]: p for part in results for p in part}
    records = [p["rates"] for p in partials.values()]
    form, kappa, count = interval_rate(records, level)
    laws = default_candidates()
    models = []
    for index, x, centre, counts, noise in usable:
        partial = partials[index]
        law_index, status, reason = judge(partial, x, centre)
        if law_index < 0:
            jump = partial["jumps"][-1]
            slope = jump["slope_before"]
            law = Candidate("regime")
            coef = np.array([math.log(centre[-1]) - slope * math.log(x[-1]), slope])
        else:
            law, coef = laws[law_index], partial["coef"][law_index]
        alternatives = (
            _trend_neighbours(laws, partial)
            if status == "fallback"
            else [
                (laws[i], partial["coef"][i])
                for i in partial["alternatives"]
                if i != law_index
            ]
        )
        models.append(
            {
                "law": law,
                "coef": coef,
                "alternatives": alternatives,
                "status": status,
                "reason": reason,
                "check": _percent(
                    partial["score"] if law_index >= 0 else partial["before_jump"]
                ),
                "trend_check": _percent(partial["trend"]),
                "kappa": kappa,
                "floor": FLOOR,
                "form": form,
                "jumps": partial["jumps"] or find_jumps(x, np.log(centre)),
                "no_trend": bool(partial.get("no_trend")) and status == "trusted",
                "noise": noise,
                "x": x,
                "centre": centre,
                "count": counts,
            }
        )
    return models, {
        "kappa": kappa,
        "form": form,
        "floor": FLOOR,
        "residuals": count,
        "reach": _reach(records),
        "across_breaks": sum(p.get("across_breaks", 0) for p in partials.values()),
        "level": level,
    }


def _reach(records):
    """The farthest distance (doublings beyond the counts fitted) of a held-out
    error behind the calibration, or None without any."""
    distances = [d for series in records for (_, _, d, _) in series if math.isfinite(d)]
    return float(max(distances)) if distances else None


def _percent(log_error):
    value = float(smape_of_log(log_error))
    return round(value, 3) if np.isfinite(value) else None
