r"""FiM's interval: the process laws the training cannot reject, and the fit's spread.

FiM-Cal takes one process law (:mod:`scaleprobe.models.fim.processes`) from a few
process counts. Fitted on 1, 2 and 4 processes, a part every process repeats and a
loss with the logarithm of the processes can agree there and differ by a factor of
ten at a thousand, and 6 % noise of the runs hides either
(``tests/benchmarks/bench_process_law.py``). :meth:`~scaleprobe.models.FiM.
predict_interval` therefore spans the time under every law the hold-out cannot
reject and the central part of each law's refits on resampled residuals, which
carry the noise of its coefficients to the counts predicted
(:meth:`~scaleprobe.models.FiMCal.predict_range`; all laws from two process counts,
where nothing can be held out; one with a law given; under the load law of the
cache, a point within the training's loads and, beyond them, from the cost held flat
to every access a miss), adds FiM-Com's confidence interval of each collective's
mean over the replications, and widens the sum by the training's spread about the
fit:

.. math::

    b = z_{(1 + \ell)/2} \sqrt{\frac{\sum_c w_c r_c^2}{\sum_c w_c}},
    \qquad r_c = \log \frac{\tilde y_c}{\hat y_c}, \quad w_c = \tilde y_c,

over the training configurations :math:`c` (:math:`\tilde y_c` the median of their
runs: the interval is of a configuration's time, as the ensemble's are, and one slow
run of EP on 2 ranks, 22 % over its others, would otherwise set it), weighted by the
measured time: where the time was spent (NPB CG's class S sits 0.1-0.5 above FiM in
log time, a fixed cost that class B does not keep). A conformal quantile of nine
configurations would be the largest residual, PageRank's 8 ms configuration's 0.54.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import stats

from ._laws import typical

__all__ = ["band", "log_residuals"]


def log_residuals(model, X, y, keys):
    """Log ratios of the measured to the predicted times of the training's
    configurations, and their measured times.

    Parameters
    ----------
    model : FiM
        Fitted on ``X, y``.
    X : DataFrame or array-like
        The training rows.
    y : array-like of shape (n_samples,)
        Their measured times, s.
    keys : ndarray of shape (n_samples, k)
        What makes a configuration: rows of equal keys are its runs, and their
        median its time (a configuration timed at zero or less says nothing of a
        ratio and is left out).

    Returns
    -------
    ratios, medians : ndarray
    """
    y = np.asarray(y, dtype=float).ravel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the training rows' own
        predicted = model.predict(X)
    _, group = np.unique(np.asarray(keys, dtype=float), axis=0, return_inverse=True)
    group = group.ravel()
    ratios, medians = [], []
    for index in np.unique(group):
        rows = group == index
        measured, modelled = float(np.median(y[rows])), float(predicted[rows][0])
        if measured > 0 and modelled > 0:
            ratios.append(math.log(measured / modelled))
            medians.append(measured)
    return np.array(ratios), np.array(medians)


def band(residuals, level, weights=None):
    """Half-width in log time of the measured times about the fit: the two-sided
    normal ``level`` quantile times the weighted root mean square of the log
    residuals, less any beyond :data:`~scaleprobe.models.fim._laws.OUTLYING`
    scaled median absolute deviations of their median (a misfit, not a spread).

    Parameters
    ----------
    residuals : array-like or None
    level : float
        In (0, 1).
    weights : array-like, optional
        Default equal.

    Returns
    -------
    float
        0 without residuals.

    Examples
    --------
    >>> round(band([0.1, -0.1], 0.9), 4)
    0.1645
    >>> round(band([0.1, -0.1, 0.1, -0.1, 16.0], 0.9), 4)  # 16: a misfit, left out
    0.1645
    """
    if residuals is None or not len(residuals):
        return 0.0
    residuals = np.asarray(residuals, dtype=float)
    weights = np.ones_like(residuals) if weights is None else np.asarray(weights, float)
    # a configuration the fit misses by many times the others' spread is its misfit
    # there (NPB CG's class S on one rank, the law's cycles floored near zero: a log
    # residual of 16 against |r| <= 0.43 had the band a factor 34), not a spread
    kept = typical(residuals)
    residuals, weights = residuals[kept], weights[kept]
    sigma = math.sqrt(float(np.average(residuals**2, weights=weights)))
    return float(stats.norm.ppf(0.5 + level / 2)) * sigma
