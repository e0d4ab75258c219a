"""What a profile's fit says: one summary per kind of finding, the ranked tables and
the advice on which measurement would tell more.

A fit of hundreds of series must not print a warning per series: :func:`findings`
gathers what the fit found into one line per kind ("6 of 70 series are refused"),
each with the series it concerns, which ``--verbose`` lists; :func:`emit` issues
them as one warning each. :func:`rank` sorts the series of a projection by what
matters at the target count: those that will dominate, those that grow fastest,
those the data cannot tell (with :func:`advice`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..core.warnings import (
    InsufficientDataWarning,
    NoTrendWarning,
    RegimeChangeWarning,
    UnreliableModelWarning,
    warn,
)
from .result import CANNOT_TELL, doublings_words, geometric_middle

__all__ = [
    "EARLIER",
    "Finding",
    "advice",
    "breaks_left_out",
    "emit",
    "few_errors",
    "findings",
    "rank",
    "reach_words",
    "render_fit",
    "render_ranking",
    "scale_words",
    "series_count",
    "short_name",
    "unchecked_words",
    "verdict_words",
]

# Run-to-run spread (log sd) above which more repetitions are the advice.
_NOISY = 0.1
#: Counts asked for before the largest whose predicted values ``project`` shows
#: beside the ranking, at most (the last ones; all of them are in ``--output``).
EARLIER = 3


@dataclass(frozen=True)
class Finding:
    """One kind of finding of a fit, with every series it concerns.

    Attributes
    ----------
    category : type
        The warning class it is issued as (None: a note, not a warning).
    summary : str
        One line: what, and on how many series.
    series : tuple of str
        ``name: detail`` per series, listed with ``--verbose``.
    """

    category: type | None
    summary: str
    series: tuple = field(default_factory=tuple)


def scale_words(calibration):
    """What a profile's intervals are a multiple of, in words.

    Parameters
    ----------
    calibration : dict
        :attr:`ProfileFit.calibration`.

    Returns
    -------
    str

    Examples
    --------
    >>> scale_words({"form": "combined"})
    "the plausible laws' spread plus the square root of the doublings beyond the data"
    >>> scale_words({"floor": 0.05})
    "the plausible laws' spread, never under 5.1 % either side per doubling"
    """
    words = "the plausible laws' spread"
    if calibration.get("form") == "combined":
        words += " plus the square root of the doublings beyond the data"
    floor = float(calibration.get("floor") or 0.0)
    if floor > 0:
        percent = 100 * math.expm1(floor)
        words += f", never under {percent:.2g} % either side per doubling"
    return words


def breaks_left_out(calibration):
    """The clause that says how many held-out errors lay across a break and were
    left out of the calibration ("" when none were).

    Parameters
    ----------
    calibration : dict
        :attr:`ProfileFit.calibration`.

    Returns
    -------
    str

    Examples
    --------
    >>> breaks_left_out({"across_breaks": 3})
    ' (3 more lay across a break in their series and are left out)'
    >>> breaks_left_out({"across_breaks": 1}), breaks_left_out({})
    (' (1 more lay across a break in its series and is left out)', '')
    """
    n = int(calibration.get("across_breaks") or 0)
    if n == 0:
        return ""
    if n == 1:
        return " (1 more lay across a break in its series and is left out)"
    return f" ({n} more lay across a break in their series and are left out)"


def reach_words(calibration):
    """The clause that says how far beyond the counts fitted the held-out errors
    behind the calibration lay ("" when it saw none, or the file predates it).

    Parameters
    ----------
    calibration : dict
        :attr:`ProfileFit.calibration`.

    Returns
    -------
    str

    Examples
    --------
    >>> reach_words({"reach": 2.0}), reach_words({"reach": 1.0}), reach_words({})
    (', at most 2 doublings out', ', at most 1 doubling out', '')
    """
    reach = calibration.get("reach")
    return "" if reach is None else f", at most {doublings_words(reach)} out"


def unchecked_words(projection):
    """The line that says when the largest count projected to lies farther beyond
    the data than the calibration of the intervals checked their growth ("" when
    it does not).

    Parameters
    ----------
    projection : ProfileProjection

    Returns
    -------
    str
    """
    found = projection.unchecked()
    if found is None:
        return ""
    largest, _ = found
    at = float(np.max(projection.at))
    out = doublings_words(math.log2(at / largest))
    return (
        f"({at:g} {projection.axis} lies {out} past "
        f"the largest measured, {largest:g}; the intervals' growth with distance "
        f"is extrapolated past {doublings_words(projection.reach)}, the farthest "
        "held-out error behind their calibration)"
    )


def few_errors(calibration):
    """The clause that says when the held-out errors are too few for the level:
    the conformal quantile of ``n`` errors at level ``q`` is the
    ``ceil((n + 1) q)``-th smallest, which ``n`` errors hold only from
    ``n >= q / (1 - q)`` on (9 at 90 %); below, the factor is their largest and the
    level is not assured ("" otherwise, and for a profile too short to calibrate).

    Parameters
    ----------
    calibration : dict
        :attr:`ProfileFit.calibration`.

    Returns
    -------
    str

    Examples
    --------
    >>> print(few_errors({"form": "combined", "residuals": 3, "level": 0.9}))
    ... # doctest: +NORMALIZE_WHITESPACE
    ; 3 are fewer than the 9 needed for the 90% interval: the factor is their
    largest and the level is not assured
    >>> few_errors({"form": "combined", "residuals": 9, "level": 0.9})
    ''
    """
    n = int(calibration.get("residuals") or 0)
    level = float(calibration.get("level", 0.9))
    needed = math.ceil(level / (1.0 - level) - 1e-9)
    if calibration.get("form") != "combined" or n == 0 or n >= needed:
        return ""
    return (
        f"; {n} are fewer than the {needed} needed for the {level:.0%} interval: "
        "the factor is their largest and the level is not assured"
    )


def _shape_findings(fit, total):
    """The findings on the shape of the series: no trend beyond the noise, jumps."""
    found = []
    level = [m for m in fit.models if m.no_trend]
    if level:
        found.append(
            Finding(
                NoTrendWarning,
                f"{len(level)} of {total} series show no trend beyond their noise: "
                "their level is projected, and the laws they would have had "
                "otherwise stay in their intervals (measure larger counts, or "
                "repeat runs, to know more)",
                tuple(m.name for m in level),
            )
        )
    jumped = [m for m in fit.models if m.jumps]
    if jumped:
        found.append(
            Finding(
                RegimeChangeWarning,
                f"{len(jumped)} of {total} series jump between two counts (a change "
                "of regime: an algorithm or protocol switch, a working set leaving a "
                "cache); their laws use the counts after the last jump",
                tuple(f"{m.name}: {_jumps(m)}" for m in jumped),
            )
        )
    return found


def findings(fit):
    """Every kind of finding of a profile's fit, one :class:`Finding` each.

    Parameters
    ----------
    fit : ProfileFit

    Returns
    -------
    list of Finding
    """
    total = len(fit.models) + sum(len(v) for v in fit.skipped.values())
    kept = "their laws are kept, to project by name"
    short = [m for m in fit.models if m.x.size < 3]
    found = []
    for status, category, what in (
        (
            "refused",
            UnreliableModelWarning,
            "refused: no law held its held-out check and the naive trend missed "
            f"its own ({kept})",
        ),
        (
            "fallback",
            None,
            "project the naive trend as a fallback: it held its own "
            "held-out check where no law did",
        ),
    ):
        # a series of two counts had no check to miss: it is told below
        chosen = [m for m in fit.models if m.status == status and m.x.size >= 3]
        if chosen:
            found.append(
                Finding(
                    category,
                    f"{len(chosen)} of {total} series {what}",
                    tuple(f"{m.name}: {m.reason}" for m in chosen),
                )
            )
    found += _shape_findings(fit, total)
    if short:
        refused = all(m.status == "refused" for m in short)
        found.append(
            Finding(
                UnreliableModelWarning if refused else InsufficientDataWarning,
                f"{len(short)} of {total} series have fewer than three counts: no law "
                "can be checked on a held-out count"
                + (f", so they are refused ({kept})" if refused else ""),
                tuple(f"{m.name}: {m.x.size} counts" for m in short),
            )
        )
    for reason, names in fit.skipped.items():
        found.append(
            Finding(
                InsufficientDataWarning,
                f"{len(names)} of {total} series are left out: {reason}",
                tuple(names),
            )
        )
    if fit.models and not fit.calibration.get("residuals"):
        factor = fit.calibration.get("kappa", 0)
        found.append(
            Finding(
                InsufficientDataWarning,
                "no series has enough counts to calibrate the intervals on held-out "
                f"counts (four are needed): they take {factor:g} times the plausible "
                "laws' spread",
            )
        )
    return found


def _jumps(model):
    return "; ".join(
        f"{j['before']:g} -> {j['after']:g} ({j['factor']:.3g}x off the slope before)"
        for j in model.jumps
    )


def emit(fit):
    """Issue each finding of a fit that is a warning, once.

    Parameters
    ----------
    fit : ProfileFit
    """
    for finding in findings(fit):
        if finding.category is not None:
            warn(finding.summary, finding.category, stacklevel=2)


def advice(model, target):
    """Which measurement would tell the value of a series at ``target``.

    Parameters
    ----------
    model : SeriesModel
    target : float
        The count projected to.

    Returns
    -------
    str
        More repetitions when run-to-run noise dominates; beyond the data, a count
        between the largest measured and the target (where the plausible laws
        part); at a measured count, the measurement; below or between the
        measured counts, the target itself.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> m = S(x=[32.0, 64.0, 128.0], centre=[4.0, 2.1, 1.2], count=[3, 3, 3],
    ...       noise=0.01, status="refused")
    >>> advice(m, 4096.0)
    'measure at 1024: the plausible laws part there'
    >>> advice(m, 64.0)
    'measured at 64: 2.1 (no law of this series is vouched for; take the measurement)'
    >>> advice(m, 4.0)
    'measure at 4: below the smallest measured count (32) the plausible laws part'
    """
    x = np.asarray(model.x, dtype=float)
    largest = float(x[-1])
    nearest = int(np.argmin(np.abs(np.log(x / target))))
    runs = int(model.count[nearest])
    if model.noise > _NOISY:
        where = " at the largest counts" if target > largest else ""
        return (
            f"repeat the runs{where} (now {runs} at {x[nearest]:g}): their spread "
            f"({model.noise:.0%}) hides the trend"
        )
    repeat = (
        f" and repeat the runs (now {runs} at {x[nearest]:g})"
        if runs < 2 and model.status == "refused"
        else ""
    )
    if target > largest:
        middle = geometric_middle(largest, max(target, 2 * largest), x)
        if repeat:
            return f"measure at {middle:g}{repeat}"
        return f"measure at {middle:g}: the plausible laws part there"
    if np.isclose(x[nearest], target):
        return (
            f"measured at {target:g}: {float(model.centre[nearest]):.4g} (no law of "
            "this series is vouched for; take the measurement)"
        )
    if target < x[0]:
        where = f"below the smallest measured count ({x[0]:g})"
    else:
        above = int(np.searchsorted(x, target))
        where = f"between the measured {x[above - 1]:g} and {x[above]:g}"
    return f"measure at {target:g}{repeat}: {where} the plausible laws part"


def rank(projection, *, top=10):
    """The series of a projection sorted by what matters at its last count.

    Parameters
    ----------
    projection : ProfileProjection
    top : int, default=10
        Rows per table.

    Returns
    -------
    dict of str to list of dict
        ``dominant`` (largest predicted values, per metric), ``fastest`` (largest
        growth over the largest measured count), both among the series the data
        can tell (``before``: the predicted values at the other counts asked
        for); ``cannot_tell`` (interval wider than
        :data:`~scaleprobe.models.profiles.result.CANNOT_TELL`, or refused, with
        the advice): a centre the data cannot tell is not ranked as if known (a
        barrier of 0.2-14 ms on 27-343 ranks, its law ``p^3.2``, would have led
        the table at 8000 ranks with 133 s, above its caller's 50 s).
    """
    target = float(projection.at[-1])
    rows = []
    wide = projection.cannot_tell()[:, -1]
    growth = projection.growth()
    for i, model in enumerate(projection.models):
        rows.append(
            {
                "series": model.name,
                "metric": model.metric,
                "predicted": float(projection.predicted[i, -1]),
                "before": [float(v) for v in projection.predicted[i, :-1]],
                "lower": float(projection.lower[i, -1]),
                "upper": float(projection.upper[i, -1]),
                "growth": float(growth[i]),
                "status": model.status,
                "law": model.law.label,
                "unclear": bool(wide[i]) or model.status == "refused",
                "advice": advice(model, target),
            }
        )
    clear = [r for r in rows if not r["unclear"]]
    dominant = []
    for metric in dict.fromkeys(r["metric"] for r in clear):
        own = [r for r in clear if r["metric"] == metric]
        dominant += sorted(own, key=lambda r: -_finite(r["predicted"]))[:top]
    fastest = sorted(clear, key=lambda r: -_finite(r["growth"]))[:top]
    unclear = [r for r in rows if r["unclear"]]
    unclear = sorted(unclear, key=lambda r: -_finite(r["predicted"]))
    return {"dominant": dominant, "fastest": fastest, "cannot_tell": unclear}


def _finite(value):
    return value if np.isfinite(value) else -np.inf


def _table(rows, columns):
    """A plain text table of ``rows`` with the given ``(key, header, format)``."""
    cells = [[header for _, header, _ in columns]]
    for row in rows:
        cells.append([fmt(row[key]) for key, _, fmt in columns])
    widths = [max(len(c[i]) for c in cells) for i in range(len(columns))]
    lines = []
    for cell in cells:
        parts = [
            text.ljust(width) if i == 0 else text.rjust(width)
            for i, (text, width) in enumerate(zip(cell, widths, strict=True))
        ]
        lines.append("  ".join(parts).rstrip())
    return lines


def _name(width=48, *, verbose=False):
    """A series' name for a table cell: whole with ``verbose``, else cut to
    ``width`` so the names of one profile stay apart (:func:`short_name`)."""

    def cut(text):
        return text if verbose else short_name(text, width)

    return cut


_SUFFIX = re.compile(r"^(.*?)((?: \[[^\]]*\])?(?: \([^()]*\))?)$", re.S)


def short_name(name, width=48):
    """A series' name cut to ``width`` characters, keeping what tells it apart.

    A name is a call path, then its metric in brackets and its parameters in
    parentheses when a profile has several. Series of one profile share their
    call paths' roots and their metrics' endings, so the call path keeps its root
    and as many of its last regions as fit, and the metric (with the parameters)
    keeps its ends, at most a third of the width.

    Parameters
    ----------
    name : str
        The series' name (``ProfileModel.name``).
    width : int, default=48

    Returns
    -------
    str
        ``name`` when it fits, else at most ``width`` characters.

    Examples
    --------
    >>> short_name("main->lulesh.cycle->LagrangeLeapFrog->LagrangeElements"
    ...            "->CalcQForElems->MPI_Wait [min#inclusive#sum#time.duration]")
    'main->…->CalcQForElems->MPI_Wait [min#in…ration]'
    >>> short_name("region=main->lulesh.cycle->LagrangeLeapFrog->LagrangeNodal"
    ...            "->CalcAccelerationForNodes")
    'region=main->…->CalcAccelerationForNodes'
    """
    if len(name) <= width:
        return name
    path, suffix = _SUFFIX.match(name).groups()
    suffix = _middle(suffix, min(len(suffix), max(width // 3, 12)))
    return _path(path, width - len(suffix)) + suffix


def _middle(text, width):
    """``text`` cut in the middle to ``width`` characters."""
    if len(text) <= width:
        return text
    tail = (width - 1) // 2
    return text[: width - 1 - tail] + "…" + text[len(text) - tail :]


def _path(path, width):
    """A call path cut to ``width``: its root, then its last regions that fit."""
    if len(path) <= width:
        return path
    regions = path.split("->")
    kept = []
    for region in reversed(regions[1:]):
        if len("->".join([regions[0], "…", region, *kept])) > width:
            break
        kept.insert(0, region)
    if kept:
        return "->".join([regions[0], "…", *kept])
    leaf = "…->" + regions[-1]
    if len(regions) > 1 and len(leaf) <= width:
        return leaf
    return "…" + path[len(path) - width + 1 :]


def _earlier_columns(projection, number):
    """Columns of the predicted values at the last :data:`EARLIER` counts asked
    for before the largest (each reads its count from a row's ``before``)."""
    counts = list(projection.at[:-1])[-EARLIER:]
    first = len(projection.at) - 1 - len(counts)
    return [
        ("before", f"at {value:g}", lambda before, j=j: number(before[j]))
        for j, value in enumerate(counts, start=first)
    ]


def render_ranking(projection, *, top=10, verbose=False):
    """The ranked tables ``project`` prints: ranked at the largest count asked
    for, with the predicted values at up to :data:`EARLIER` other counts beside.

    Parameters
    ----------
    projection : ProfileProjection
    top : int, default=10
    verbose : bool, default=False
        Every series, not the first ``top`` of each table.

    Returns
    -------
    str
    """
    count = len(projection.models) if verbose else top
    ranked = rank(projection, top=count)
    at = projection.at[-1]
    axis = projection.axis
    number = "{:.4g}".format
    earlier = _earlier_columns(projection, number)
    value = [
        ("series", "series", _name(verbose=verbose)),
        *earlier,
        ("predicted", f"at {at:g}" if earlier else "predicted", number),
        ("lower", "lower", number),
        ("upper", "upper", number),
        ("growth", "growth", lambda v: f"{v:.3g}x"),
        ("status", "status", str),
    ]
    lines = [
        f"at {at:g} {axis} ({projection.level:.0%} intervals; growth over the "
        "largest measured count):",
    ]
    unchecked = unchecked_words(projection)
    if unchecked:
        lines.append(unchecked)
    hidden = len(projection.at) - 1 - len(earlier)
    if earlier:
        lines.append(
            "(ranked there; the predicted values at "
            + ", ".join(header.removeprefix("at ") for _, header, _ in earlier)
            + f" {axis} beside"
            + (f"; {hidden} more count(s) in --output" if hidden else "")
            + ")"
        )
    for title, key in (("will dominate:", "dominant"), ("grow fastest:", "fastest")):
        lines += ["", title]
        if ranked[key]:
            lines += ["  " + line for line in _table(ranked[key], value)]
        else:
            lines.append(
                f"  none: the data cannot tell any series at {at:g} {axis} (below)"
            )
    lines += _conflict_lines(projection, verbose, top)
    unclear = ranked["cannot_tell"]
    if not unclear:
        lines += ["", f"the data tell every series (intervals within {CANNOT_TELL:g}x)"]
        return "\n".join(lines)
    lines += [
        "",
        f"the data cannot tell ({len(unclear)} series: interval wider than "
        f"{CANNOT_TELL:g}x, or refused; not ranked above):",
    ]
    shown = unclear if verbose else unclear[:top]
    lines += [
        "  " + line
        for line in _table(
            shown,
            [
                ("series", "series", _name(verbose=verbose)),
                ("advice", "what would tell", str),
            ],
        )
    ]
    if len(unclear) > len(shown):
        lines.append(f"  ... {len(unclear) - len(shown)} more (--verbose lists them)")
    return "\n".join(lines)


def _conflict_lines(projection, verbose, top):
    """The call paths projected above their callers, as ``project`` lists them."""
    found = projection.conflicts()
    if not found:
        return []
    shown = found if verbose else found[:top]
    number = "{:.4g}".format
    lines = [
        "",
        f"cannot both be right ({len(found)} call path(s) projected above their "
        "caller, where every measurement had them within it):",
    ]
    lines += [
        "  " + line
        for line in _table(
            shown,
            [
                ("series", "series", _name(verbose=verbose)),
                ("predicted", "predicted", number),
                ("caller", "caller", _name(40, verbose=verbose)),
                ("caller_predicted", "caller's", number),
                ("at", f"from {projection.axis}", "{:g}".format),
            ],
        )
    ]
    if len(found) > len(shown):
        lines.append(f"  ... {len(found) - len(shown)} more (--verbose lists them)")
    return lines


def verdict_words(fit):
    """How many series each verdict has, and how many were left out, in words.

    Parameters
    ----------
    fit : ProfileFit

    Returns
    -------
    str
        ``7 trusted, 0 fallback, 4 refused, 4 left out``: the numbers add up to
        every series of the profile.
    """
    words = [f"{n} {s}" for s, n in fit.counts().items()]
    left_out = sum(len(names) for names in fit.skipped.values())
    if left_out:
        words.append(f"{left_out} left out")
    return ", ".join(words)


def series_count(fit):
    """Every series of the profile: those fitted and those left out.

    Parameters
    ----------
    fit : ProfileFit

    Returns
    -------
    int
    """
    return len(fit.models) + sum(len(names) for names in fit.skipped.values())


def render_fit(fit, *, top=20, verbose=False, warnings=True):
    """The text ``scaleprobe fit`` prints for a profile.

    Parameters
    ----------
    fit : ProfileFit
    top : int, default=20
        Series listed (the largest last measurement first), unless ``verbose``.
    verbose : bool, default=False
        Every series, and every series each finding concerns.
    warnings : bool, default=True
        List the findings that are warnings. The command line issues them as
        warnings (one line each on standard error) and lists them here only with
        ``verbose``, as the heading of the series they concern.

    Returns
    -------
    str
    """
    path = fit.source.get("path", "")
    lines = [
        f"{path}: {series_count(fit)} series over {fit.axis} "
        f"({fit.source.get('format', '')}), fitted in {fit.seconds:.2f} s",
        f"verdicts: {verdict_words(fit)}",
        f"intervals ({fit.level:.0%}): {fit.calibration.get('kappa', 0):.3g} times "
        f"{scale_words(fit.calibration)}, from "
        f"{fit.calibration.get('residuals', 0)} held-out errors over the profile"
        + reach_words(fit.calibration)
        + breaks_left_out(fit.calibration)
        + few_errors(fit.calibration),
    ]
    lines += _series_lines(fit, top, verbose)
    for finding in findings(fit):
        if finding.category and not (warnings or verbose):
            continue
        lines.append(("warning: " if finding.category else "note: ") + finding.summary)
        if verbose:
            lines += [f"  {item}" for item in finding.series]
    lines += [f"note: {note}" for note in fit.notes]
    return "\n".join(lines)


def _series_lines(fit, top, verbose):
    """The table of the fitted series, the largest last measurement first.

    Where the series end at different counts, each row says at which: a value at
    60 ranks and one at 2560 are not headed as if both were at 2560.
    """
    order = sorted(fit.models, key=lambda m: -float(m.centre[-1]))
    shown = order if verbose else order[:top]
    ends = {float(m.x[-1]) for m in fit.models}
    columns = [("series", "series", _name(verbose=verbose))]
    if len(ends) == 1:
        title = f"series (largest at the largest {fit.axis} count first):"
        columns.append(("largest", f"at {ends.pop():g}", "{:.4g}".format))
    else:
        title = (
            "series (largest last measurement first; the series end at different "
            "counts, so `scaleprobe project` compares them at one count):"
        )
        columns += [
            ("largest", "last measured", "{:.4g}".format),
            ("end", f"at {fit.axis}", "{:g}".format),
        ]
    columns += [
        ("status", "status", str),
        ("check", "held-out SMAPE", str),
        ("law", "law", str),
    ]
    rows = [
        {
            "series": m.name,
            "largest": float(m.centre[-1]),
            "end": float(m.x[-1]),
            "law": m.law.describe(m.coef, variable=_variable(fit)),
            "status": m.status,
            "check": "-" if m.held_out is None else f"{m.held_out:.3g} %",
        }
        for m in shown
    ]
    lines = ["", title] + ["  " + line for line in _table(rows, columns)]
    if len(order) > len(shown):
        lines.append(f"  ... {len(order) - len(shown)} more (--verbose lists them)")
    return lines


def _variable(fit):
    return {"ranks": "p", "nodes": "n"}.get(fit.kind, fit.axis)
