"""A call path cannot take longer than its caller: the nesting of inclusive metrics.

An inclusive metric of a call path (its time with everything it calls) is at most
its caller's: ``main->MPI_Barrier`` runs inside ``main``. Each series of a profile is
fitted alone, so a projection can break that order: on LULESH's Caliper profile (27 to
343 ranks) the barrier's law ``p^3.2``, fitted on 0.2-14 ms, reaches 133 s at 8000
ranks, above ``main``'s 50 s. Both cannot be right.

Whether a metric nests is read from the measurements: a metric nests when it has at
least :data:`MIN_PAIRS` call-path/caller pair measured at the same counts and every
child is at most its caller at every one of them (an exclusive metric, a caller's own
time without its callees, has children above their caller). One pair is enough: a
profile of a region and its communication (``r`` and ``r->comm``) is held to the
order. What one pair cannot tell is an exclusive metric whose only callee happens to
stay below its caller, so a metric whose name says it is exclusive (``exc``,
``exclusive``, ``self``), or whose inclusive twin is in the profile (``time`` beside
``time (inc)``, ``sum#time.duration`` beside ``inclusive#sum#time.duration``), is
never held to it.
:func:`conflicts` then lists every projected child above its caller, from the first
count where it happens; :meth:`~scaleprobe.models.profiles.ProfileFit.project` warns
with a :class:`~scaleprobe.models.PhysicalLimitWarning` and ``scaleprobe project``
and ``report`` list them.
"""

from __future__ import annotations

import re

import numpy as np

from .table import SEPARATOR

__all__ = [
    "MIN_PAIRS",
    "callers",
    "conflicts",
    "describe",
    "marked_exclusive",
    "nested_metrics",
]

#: Call-path/caller pairs a metric needs measured before its nesting is believed.
MIN_PAIRS = 1
#: A word of a metric's name that says it is exclusive.
_EXCLUSIVE = re.compile(r"\b(exc|exclusive|self)\b", re.IGNORECASE)
#: What marks a metric's name as inclusive (Hatchet's `` (inc)``, Caliper's
#: ``inclusive#``, Extra-P's and others' ``inc``/``inclusive`` words).
_INCLUSIVE = re.compile(r"\s*\(inc\)|inclusive#|\binc(lusive)?\b", re.IGNORECASE)
#: Relative slack of the measured order (averages over ranks are rounded in files).
_SLACK = 1e-6


def _key(model, callpath):
    return (model.metric, tuple(sorted(model.parameters.items())), callpath)


def callers(models):
    """Each series' caller among ``models``: the same metric and parameters, its
    call path without the last frame.

    Parameters
    ----------
    models : list of SeriesModel

    Returns
    -------
    dict of int to int
        Index of a child series to the index of its caller's series.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> m = [S(metric="t", parameters={}, callpath=c) for c in ("main", "main->f")]
    >>> callers(m)
    {1: 0}
    """
    index = {_key(m, m.callpath): i for i, m in enumerate(models)}
    out = {}
    for i, model in enumerate(models):
        if SEPARATOR not in model.callpath:
            continue
        parent = model.callpath.rsplit(SEPARATOR, 1)[0]
        j = index.get(_key(model, parent))
        if j is not None:
            out[i] = j
    return out


def _below(child, caller):
    """Whether the child's measured centre is at most the caller's at every count
    both were measured at (None when they share none)."""
    shared, mine, theirs = np.intersect1d(child.x, caller.x, return_indices=True)
    if shared.size == 0:
        return None
    upper = np.asarray(caller.centre, dtype=float)[theirs] * (1 + _SLACK)
    return bool(np.all(np.asarray(child.centre, dtype=float)[mine] <= upper))


def marked_exclusive(metric, metrics):
    """Whether a metric's name, or an inclusive twin among ``metrics``, says the
    metric is exclusive.

    Parameters
    ----------
    metric : str
    metrics : iterable of str
        Every metric of the profile.

    Returns
    -------
    bool

    Examples
    --------
    >>> marked_exclusive("time (exc)", ["time (exc)"])
    True
    >>> marked_exclusive("time", ["time", "time (inc)"])
    True
    >>> marked_exclusive("time", ["time"]), marked_exclusive("time (inc)", ["time"])
    (False, False)
    """
    if _EXCLUSIVE.search(metric):
        return True
    return any(
        other != metric and _INCLUSIVE.search(other)
        for other in metrics
        if _INCLUSIVE.sub("", other).strip() == metric.strip()
    )


def nested_metrics(models, pairs=None):
    """The metrics whose measurements show every call path within its caller.

    Parameters
    ----------
    models : list of SeriesModel
    pairs : dict of int to int, optional
        :func:`callers` of ``models``.

    Returns
    -------
    set of str
        Metrics with at least :data:`MIN_PAIRS` measured pairs, each child at most
        its caller at every shared count, and no name that says they are exclusive
        (:func:`marked_exclusive`).
    """
    pairs = callers(models) if pairs is None else pairs
    seen, broken = {}, set()
    for child, caller in pairs.items():
        below = _below(models[child], models[caller])
        if below is None:
            continue
        metric = models[child].metric
        seen[metric] = seen.get(metric, 0) + 1
        if not below:
            broken.add(metric)
    metrics = {m.metric for m in models}
    return {
        m
        for m, n in seen.items()
        if n >= MIN_PAIRS and m not in broken and not marked_exclusive(m, metrics)
    }


def conflicts(projection):
    """Projected call paths above their callers, for the metrics that nest.

    Parameters
    ----------
    projection : ProfileProjection

    Returns
    -------
    list of dict
        One per child above its caller, neither of them refused (a refused
        law's projection claims nothing): ``series``, ``caller``, ``metric``, ``at``
        (the first projected count where it is above), ``predicted`` and
        ``caller_predicted`` there, and ``measured``, the smallest and largest
        counts both were measured at; sorted by how far above.
    """
    models = projection.models
    pairs = callers(models)
    nested = nested_metrics(models, pairs)
    out = []
    for child, caller in pairs.items():
        if models[child].metric not in nested:
            continue
        if "refused" in (models[child].status, models[caller].status):
            continue  # a refused law's projection claims nothing to contradict
        mine, theirs = projection.predicted[child], projection.predicted[caller]
        above = np.flatnonzero(mine > theirs * (1 + _SLACK))
        if above.size == 0:
            continue
        first = above[0]
        both = (models[child].x, models[caller].x)
        out.append(
            {
                "series": models[child].name,
                "caller": models[caller].name,
                "metric": models[child].metric,
                "at": float(projection.at[first]),
                "predicted": float(mine[first]),
                "caller_predicted": float(theirs[first]),
                "measured": (max(x[0] for x in both), min(x[-1] for x in both)),
            }
        )
    return sorted(
        out, key=lambda r: -r["predicted"] / max(r["caller_predicted"], 1e-300)
    )


def describe(found, axis, *, limit=3):
    """One sentence on the conflicts: how many, the worst ``limit`` of them.

    Parameters
    ----------
    found : list of dict
        :func:`conflicts`.
    axis : str
        ``ranks`` or ``nodes`` (or the parameter counted).
    limit : int, default=3

    Returns
    -------
    str
    """
    shown = "; ".join(
        f"{r['series']} {r['predicted']:.4g} > {r['caller']} "
        f"{r['caller_predicted']:.4g} from {r['at']:g} {axis}"
        for r in found[:limit]
    )
    more = f" and {len(found) - limit} more" if len(found) > limit else ""
    return (
        f"{len(found)} call path(s) projected above their caller, where every "
        f"measurement of the metric had each call path within its caller: {shown}"
        f"{more}. Both cannot be right: " + "; ".join(_why(found))
    )


def _why(found):
    """Why a child may be above its caller, by where that first happens: beyond,
    below or inside the counts both were measured at."""
    where = {
        "beyond"
        if r["at"] > r["measured"][1]
        else "below"
        if r["at"] < r["measured"][0]
        else "inside"
        for r in found
    }
    why = []
    if "beyond" in where:
        why.append(
            "the child's law is extrapolated past what its caller allows (measure "
            "a larger count to tell)"
        )
    if "below" in where:
        why.append(
            "below the measured counts the child's law is extrapolated past what "
            "its caller allows (measure a smaller count to tell)"
        )
    if "inside" in where:
        why.append(
            "inside the measured counts, where the measurements keep each call path "
            "within its caller, the laws miss their measurements (take the "
            "measurements there)"
        )
    return why
