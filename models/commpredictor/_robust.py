"""Huber M-estimation by iteratively reweighted least squares, on relative residuals."""

from __future__ import annotations

import numpy as np

#: Huber's tuning constant for 95 % efficiency under normal errors.
HUBER_K = 1.345


def huber_fit(design, y, scale, *, k=HUBER_K, ridge=1e-8, iterations=50):
    """Coefficients minimising ``sum huber((y - design @ beta) / scale / sigma)``.

    ``sigma`` is re-estimated every iteration as the normalised median absolute
    deviation of the scaled residuals. Column 0 of ``design`` (the intercept) is not
    penalised by the small ``ridge`` that keeps collinear terms solvable.

    Returns
    -------
    beta : numpy.ndarray
    sigma : float
        Robust scale of the scaled residuals at the solution.
    """
    rows = design / scale[:, None]
    target = y / scale
    penalty = np.full(design.shape[1], ridge)
    penalty[0] = 0.0
    weights = np.ones(len(y))
    beta = np.zeros(design.shape[1])
    sigma = 0.0
    for _ in range(iterations):
        weighted = rows * weights[:, None]
        gram = rows.T @ weighted + np.diag(penalty * max(1.0, np.trace(rows.T @ rows)))
        new = np.linalg.lstsq(gram, weighted.T @ target, rcond=None)[0]
        residual = target - rows @ new
        sigma = float(np.median(np.abs(residual - np.median(residual)))) / 0.6745
        converged = np.allclose(new, beta, rtol=1e-9, atol=1e-12)
        beta = new
        if sigma <= 1e-12 * max(1.0, float(np.abs(target).max())) or converged:
            break
        ratio = np.abs(residual) / (k * sigma)
        weights = np.where(ratio <= 1.0, 1.0, 1.0 / np.maximum(ratio, 1e-300))
    return beta, sigma
