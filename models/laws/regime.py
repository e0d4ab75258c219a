"""When a step of a measured series is a change of regime rather than noise.

A collective whose library switches algorithm or protocol, a working set that leaves
(or enters) a cache: the time jumps over one step of the process count. The rule is
one for the whole package, light enough for the many-series fit
(:mod:`scaleprobe.models.profiles`) and used by
:class:`~scaleprobe.models.RegimeTrend`: a step is a jump when its log-log slope
differs from the step before by at least :data:`REGIME_SLOPE` and its end lies a
factor of :data:`REGIME_FACTOR` or more off the earlier slope continued.

Examples
--------
>>> import numpy as np
>>> p = np.array([32.0, 64.0, 128.0, 256.0])
>>> [round(j["factor"], 2) for j in find_jumps(p, np.log([30.0, 42.0, 59.0, 580.0]))]
[7.0]
"""

from __future__ import annotations

import numpy as np

__all__ = ["REGIME_FACTOR", "REGIME_SLOPE", "REGIME_SPREAD", "find_jumps", "past_break"]

#: Change of the log-log slope over a measured step, against the step before, from
#: which a change of regime (an algorithm or protocol switch) is read rather than the
#: onset of a steeper term: a smooth ``c0 + c p**3`` changes its slope by at most
#: 1.34 between neighbouring steps of ratio 2 and 2.02 of ratio 4.
REGIME_SLOPE = 2.5
#: ... and the factor by which the step's end must depart from the slope before.
REGIME_FACTOR = 2.0
#: The new regime's slope is not measured (one point): a range of slopes this far
#: either side of the old one (a factor sqrt(2) per doubling) is what a projection
#: beyond a jump at the largest count assumes.
REGIME_SPREAD = 0.5


def find_jumps(x, log_y):
    """Every step of a series that is a change of regime.

    Parameters
    ----------
    x : array-like of shape (m,)
        Increasing process counts (or any positive parameter).
    log_y : array-like of shape (m,)
        Log of the centre measured at each.

    Returns
    -------
    list of dict
        One per jump, in order: ``index`` (of the first point after the jump),
        ``before`` and ``after`` (the counts either side), ``slope_before``,
        ``slope_last`` (the jump's log-log slope) and ``factor`` (the point after the
        jump over the slope before continued).
    """
    x = np.asarray(x, dtype=float)
    log_y = np.asarray(log_y, dtype=float)
    steps = np.diff(np.log(x))
    slopes = np.diff(log_y) / steps
    jumps = []
    for j in range(1, slopes.size):
        departure = (slopes[j] - slopes[j - 1]) * steps[j]
        if abs(slopes[j] - slopes[j - 1]) >= REGIME_SLOPE and abs(departure) >= np.log(
            REGIME_FACTOR
        ):
            jumps.append(
                {
                    "index": j + 1,
                    "before": float(x[j]),
                    "after": float(x[j + 1]),
                    "slope_before": float(slopes[j - 1]),
                    "slope_last": float(slopes[j]),
                    "factor": float(np.exp(departure)),
                }
            )
    return jumps


def past_break(jumps, length, m):
    """Which of the counts after a prefix of ``length`` (of ``m``) lie at or after
    a jump beyond that prefix: a law chosen on the prefix cannot see the jump, and
    its error there is the jump's, not how far the law strays when it extrapolates
    (the calibrations of intervals leave those errors out).

    Parameters
    ----------
    jumps : list of dict
        From :func:`find_jumps` on the ``m`` counts.
    length, m : int

    Returns
    -------
    ndarray of bool, shape (m - length,)

    Examples
    --------
    >>> past_break([{"index": 4}], 3, 6).tolist()
    [False, True, True]
    >>> past_break([{"index": 2}], 3, 6).tolist()
    [False, False, False]
    """
    target = np.arange(length, m)
    past = np.zeros(target.size, dtype=bool)
    for jump in jumps:
        if jump["index"] >= length:
            past |= target >= jump["index"]
    return past
