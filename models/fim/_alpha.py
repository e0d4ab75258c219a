"""FiM-Cal's sensitivity alpha (Eq. 12): the scale of the hardware parameters.

FiM-Cal scales the regressed ``U``, ``TC`` and ``SC`` by one :math:`\\alpha` so that
the Markov model reproduces the measured computation times. Algorithm 1 of the
paper walks from 1 in steps of ``epsilon`` until the relative RMS error drops below
``tau`` or stops falling; ``"optimize"`` minimises the same error with a bounded 1-D
optimiser over :math:`\\log\\alpha`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar

from ..core.warnings import DegenerateFitWarning, warn

__all__ = ["ALPHA_METHODS", "calibrate"]

#: How alpha is calibrated: a bounded optimiser, or Algorithm 1 as published.
ALPHA_METHODS = ("optimize", "published")


def calibrate(times, y, method="optimize", epsilon=1e-3, tau=0.01):
    """Eq. 12's alpha: the scale whose modelled times best reproduce ``y``.

    Parameters
    ----------
    times : callable
        ``times(alpha, rows)``: the modelled times of the rows selected by the
        boolean mask ``rows`` under the scale ``alpha``.
    y : ndarray of shape (n,)
        Measured times, s; rows not above zero say nothing of a ratio and are
        left out of the error.
    method : {"optimize", "published"}, default="optimize"
        A bounded 1-D optimiser of the relative RMS error, or Algorithm 1.
    epsilon : float, default=1e-3
        Algorithm 1's step.
    tau : float, default=0.01
        Algorithm 1's threshold.

    Returns
    -------
    float
        1 without a positive time.

    Warns
    -----
    DegenerateFitWarning
        When Algorithm 1 stops with the error above ``tau``.

    Examples
    --------
    >>> y = np.array([2.0, 4.0])
    >>> round(calibrate(lambda a, rows: a * np.array([1.0, 2.0])[rows], y), 6)
    2.0
    """
    positive = y > 0
    if not positive.any():
        return 1.0

    def error(alpha):
        predicted = times(alpha, positive)
        return float(np.sqrt(np.mean((predicted / y[positive] - 1.0) ** 2)))

    if method == "optimize":
        best = minimize_scalar(
            lambda log_a: error(math.exp(log_a)),
            bounds=(-12.0, 12.0),
            method="bounded",
            options={"xatol": 1e-6},
        )
        return math.exp(best.x)
    return _algorithm1(error, times, y, epsilon, tau)


def _algorithm1(error, times, y, epsilon, tau):
    """Algorithm 1: from alpha = 1, steps of ``epsilon`` towards the measured
    times while the error falls, until it is below ``tau``."""
    alpha, current = 1.0, error(1.0)
    predicted = times(1.0, np.ones(len(y), dtype=bool))
    direction = 1.0 if np.mean(y - predicted) > 0 else -1.0
    for _ in range(100_000):
        if current < tau:
            return alpha
        step = alpha + direction * epsilon
        if step <= 0 or error(step) >= current:
            break
        alpha, current = step, error(step)
    warn(
        f"Algorithm 1 stopped at alpha={alpha:.6g} with relative RMS error "
        f"{current:.3g} > tau={tau}",
        DegenerateFitWarning,
    )
    return alpha
