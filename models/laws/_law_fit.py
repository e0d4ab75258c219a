"""Fitting steps of :class:`~scaleprobe.models.ScalingLaw`: the weights,
the search for ``alpha``, the warnings of a degenerate fit and the noise of the
training configurations (the last feeds the law's intervals)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize_scalar

from ..core.warnings import DegenerateFitWarning, warn
from . import design as _design
from . import envelope as _envelope
from .lsq import nnls_losses, weighted_nnls

__all__ = ["check_weights", "search_alpha", "training_noise", "warn_degenerate"]


def check_weights(sample_weight, n):
    """``sample_weight`` as ``n`` finite non-negative weights, not all zero (ones
    when None)."""
    if sample_weight is None:
        return np.ones(n)
    weights = np.asarray(sample_weight, dtype=float).ravel()
    if weights.shape != (n,):
        raise ValueError(f"sample_weight has {weights.size} values for {n} samples")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("sample_weight must be finite and non-negative")
    if not weights.any():
        raise ValueError("sample_weight is zero everywhere: no sample weighs anything")
    return weights


def search_alpha(terms, var, y, weights, relative, lo, hi):
    """The ``alpha`` in ``[lo, hi]`` whose non-negative least squares fit of
    ``terms`` to ``y`` has the least loss: a grid of 41, then a bounded search
    between the best point's neighbours."""
    # The design depends on alpha only through alpha**(100/bw) on bandwidth terms:
    # evaluate everything else once, and the exponent as a log for cheap powers.
    base = _design.design_matrix(terms, var, 1.0)
    exponent = 100.0 / np.asarray(var["bandwidth"], dtype=float)
    scaled = np.array([t.bandwidth for t in terms])

    def loss(alpha):
        design = base.copy()
        design[:, scaled] *= np.exp(np.log(alpha) * exponent)[:, None]
        return weighted_nnls(design, y, weights, relative=relative)[1]

    grid = np.linspace(lo, hi, 41)
    designs = _design.design_matrices(terms, var, grid)
    errors = nnls_losses(designs, y, weights, relative=relative)
    best = int(np.argmin(errors))
    left, right = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    result = minimize_scalar(
        loss, bounds=(left, right), method="bounded", options={"xatol": 1e-6}
    )
    # against the grid point's loss from the same solver as the search's
    return float(result.x) if result.fun <= loss(grid[best]) else float(grid[best])


def warn_degenerate(names, coef, alpha, alpha_bounds):
    """Warn (:class:`DegenerateFitWarning`, at the caller of ``fit``) when the fit
    zeroed coefficients or put ``alpha`` on a bound of ``alpha_bounds``."""
    zero = [t for t, c in zip(names, coef, strict=True) if c <= 0]
    if zero and len(zero) < len(names):
        warn(
            f"the fit set the coefficient of {', '.join(zero)} to 0: the data "
            f"do not support that term of {' + '.join(names)} (a law "
            "without it, or more node counts, would be better founded)",
            DegenerateFitWarning,
            stacklevel=3,
        )
    elif zero:
        warn(
            "every coefficient is 0: the law cannot describe these data",
            DegenerateFitWarning,
            stacklevel=3,
        )
    if alpha is not None:
        lo, hi = (float(b) for b in alpha_bounds)
        span = hi - lo
        if min(alpha - lo, hi - alpha) <= 1e-3 * span:
            bound = "lower" if alpha - lo <= 1e-3 * span else "upper"
            warn(
                f"alpha = {alpha:.4g} sits at the {bound} bound of "
                f"alpha_bounds {alpha_bounds}: the bandwidth effect is "
                "outside what the law can express",
                DegenerateFitWarning,
                stacklevel=3,
            )


def training_noise(terms, coef, alpha, var, y, sample_weight):
    """The training table of the configurations, and the relative noise and its
    degrees of freedom: replicates' scatter pooled with the residuals of the fitted
    law at the configurations' centres."""
    table = _envelope.training_table(var, y, sample_weight)
    centres = {k: table[k].to_numpy() for k in ("p", "D", "bandwidth") if k in table}
    design = _design.design_matrix(terms, centres, alpha)
    residual = (table["y"].to_numpy() - design @ coef) / table["y"].to_numpy()
    config_loss = float(np.sum(table["n"].to_numpy() * residual**2))
    dof = len(table) - len(terms) - (alpha is not None)
    replicate, replicate_dof = _envelope.replicate_noise_dof(table)
    noise, noise_dof = _envelope.noise_level(replicate, config_loss, dof, replicate_dof)
    return table, noise, noise_dof
