"""Weighted non-negative least squares, and the range of laws the data cannot reject.

Every law here is linear in its coefficients, ``y = A c`` with ``c >= 0``. Noise is
multiplicative, so the loss is *relative*: row ``i`` contributes
``w_i * ((y_i - A_i c) / y_i) ** 2`` (``w_i`` is the number of replicates behind a
configuration's centre ``y_i``). With the replicate noise ``sigma`` (standard deviation
of log time) ``loss(c) / sigma**2`` is minus twice the log likelihood up to a constant.
:func:`consistent_range` gives the range of the predictions at new points of every
``c >= 0`` whose loss is at most a budget, exactly, non-negativity included; with the
budget ``min loss + sigma**2 * chi2.ppf(level, 1)`` it is the profile likelihood
interval of each prediction (Venzon and Moolgavkar 1988; Pawitan 2001), which covers
the truth with probability ``level`` when the law is right (exactly so for a known
``sigma`` and no active non-negativity bound). :mod:`scaleprobe.models.laws.envelope`
chooses the budget.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import lsq_linear
from scipy.optimize import nnls as _active_set

__all__ = ["consistent_range", "nnls", "nnls_losses", "rows", "weighted_nnls"]


def nnls(A, b):
    """Non-negative least squares: ``argmin ||A c - b||`` over ``c >= 0``.

    SciPy's active-set solver, and where its iterations stop short of the solution
    (SciPy 1.12's rewrite stops after ``3 k`` of them with a ``RuntimeError``, on
    well-posed problems FiM's growth laws pose), the bounded-variable least squares
    of :func:`scipy.optimize.lsq_linear` (Stark and Parker 1995), which solves the
    same problem.

    Parameters
    ----------
    A : array-like of shape (n, k)
    b : array-like of shape (n,)

    Returns
    -------
    coef : ndarray of shape (k,)
    norm : float
        ``||A coef - b||``.

    Examples
    --------
    >>> import numpy as np
    >>> coef, norm = nnls(np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([2.0, -1.0]))
    >>> coef.tolist(), norm
    ([2.0, 0.0], 1.0)
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    try:
        return _active_set(A, b)
    except RuntimeError:
        coef = np.maximum(lsq_linear(A, b, bounds=(0.0, np.inf), method="bvls").x, 0)
        return coef, float(np.linalg.norm(A @ coef - b))


def rows(A, y, weights, relative=True):
    """Scale the rows of ``A`` and ``y`` so that ordinary least squares is the loss.

    Returns ``(B, b)`` with ``||b - B c||**2`` equal to the weighted loss.
    """
    A = np.asarray(A, dtype=float)
    y = np.asarray(y, dtype=float)
    root = np.sqrt(np.asarray(weights, dtype=float))
    scale = root / y if relative else root
    return A * scale[:, None], y * scale


def weighted_nnls(A, y, weights=None, *, relative=True):
    """Non-negative least squares under the relative (or absolute) weighted loss.

    Parameters
    ----------
    A : array-like of shape (n, k)
        Design matrix.
    y : array-like of shape (n,)
        Targets (positive when ``relative``).
    weights : array-like of shape (n,), default=None
        Row weights (default ones).
    relative : bool, default=True
        Divide every residual by its target.

    Returns
    -------
    coef : ndarray of shape (k,)
    loss : float
        The weighted loss at ``coef``.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([1.0, 2.0, 4.0, 8.0])
    >>> coef, loss = weighted_nnls(np.column_stack([1 / p, np.ones(4)]), 8 / p + 1)
    >>> np.round(coef, 6).tolist(), round(loss, 12)
    ([8.0, 1.0], 0.0)
    """
    weights = np.ones(len(y)) if weights is None else weights
    B, b = rows(A, y, weights, relative)
    norm = np.linalg.norm(B, axis=0)
    norm[norm == 0] = 1.0
    scaled = B / norm
    if scaled.shape[0] > 4 * scaled.shape[1]:
        # A tall problem has the minimiser of its square R factor: one QR, then NNLS.
        q, r = np.linalg.qr(scaled)
        coef, _ = nnls(r, q.T @ b)
    else:
        coef, _ = nnls(scaled, b)
    coef = coef / norm
    residual = b - B @ coef
    return coef, float(residual @ residual)


def nnls_losses(A, y, weights=None, *, relative=True):
    """Least loss of non-negative least squares for every design of a stack at once.

    The minimiser of a non-negative least-squares problem is the unconstrained
    least-squares fit on the columns of its non-zero coefficients, and those can be
    taken linearly independent. So the least loss is the least over the faces (sets
    of independent columns) whose fit is non-negative, and of no column at all:
    exact, and cheap for the few terms of a scaling law (``2**k - 1`` faces).

    Parameters
    ----------
    A : array-like of shape (g, n, k)
        A stack of ``g`` designs.
    y : array-like of shape (n,)
        Targets (positive when ``relative``).
    weights : array-like of shape (n,), default=None
        Row weights (default ones).
    relative : bool, default=True
        Divide every residual by its target.

    Returns
    -------
    ndarray of shape (g,)
        The loss :func:`weighted_nnls` reaches on each design.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([1.0, 2.0, 4.0, 8.0])
    >>> A = np.stack([np.column_stack([1 / p, np.ones(4)]), np.column_stack([p, p])])
    >>> losses = nnls_losses(A, 8 / p + 1)
    >>> one = weighted_nnls(A[1], 8 / p + 1)[1]
    >>> bool(losses[0] < 1e-20), bool(np.isclose(losses[1], one))
    (True, True)
    """
    A = np.asarray(A, dtype=float)
    weights = np.ones(A.shape[1]) if weights is None else weights
    B, b = rows(A, y, weights, relative)
    norm = np.linalg.norm(B, axis=1, keepdims=True)
    B = B / np.where(norm == 0, 1.0, norm)
    best = np.full(B.shape[0], float(b @ b))
    for size in range(1, B.shape[2] + 1):
        for face in itertools.combinations(range(B.shape[2]), size):
            columns = B[:, :, list(face)]
            q, r = np.linalg.qr(columns)
            diagonal = np.abs(np.diagonal(r, axis1=1, axis2=2))
            independent = diagonal.min(axis=1) > 1e-10 * np.maximum(
                diagonal.max(axis=1), 1e-300
            )
            r = np.where(independent[:, None, None], r, np.eye(size))
            coef = np.linalg.solve(r, np.swapaxes(q, 1, 2) @ b[:, None])[..., 0]
            residual = b - (columns @ coef[..., None])[..., 0]
            loss = np.einsum("gn,gn->g", residual, residual)
            usable = independent & np.all(coef >= 0, axis=1)
            best = np.where(usable, np.minimum(best, loss), best)
    return best


def _inverses(gram):
    """Inverses of a stack of Gram matrices; the pseudo-inverse of a singular one."""
    try:
        return np.linalg.inv(gram)
    except np.linalg.LinAlgError:
        out = np.empty_like(gram)
        for index, matrix in enumerate(gram):
            try:
                out[index] = np.linalg.inv(matrix)
            except np.linalg.LinAlgError:
                out[index] = np.linalg.pinv(matrix)
        return out


def _face_extremes(B, b, targets, budget):
    """Extremes of ``targets @ c`` over ``{c : ||b - B c||^2 <= budget}``.

    ``B`` is a stack of designs ``(g, n, f)``, ``targets`` their target rows
    ``(g, t, f)``. Returns ``(low, high, c_low, c_high, feasible)``: the extremes
    ``(g, t)``, the coefficients that reach them ``(g, t, f)`` and whether the
    design's set is non-empty ``(g,)`` (the other outputs are meaningless where not).
    """
    gram = np.swapaxes(B, 1, 2) @ B
    inverse = _inverses(gram)
    centre = (inverse @ (np.swapaxes(B, 1, 2) @ b)[..., None])[..., 0]
    residual = b - (B @ centre[..., None])[..., 0]
    slack = budget - np.einsum("gn,gn->g", residual, residual)
    feasible = (slack >= 0) & np.all(np.isfinite(centre), axis=1)
    slack = np.where(feasible, slack, 0.0)[:, None]
    direction = targets @ inverse  # (g, t, f): G^-1 phi for every target
    spread = np.maximum(np.einsum("gtf,gtf->gt", direction, targets), 0.0)
    reach = np.sqrt(slack * spread)
    mid = (targets @ centre[..., None])[..., 0]
    step = np.where(spread > 0, np.sqrt(slack / spread), 0.0)  # caller ignores 0/0
    c_high = centre[:, None, :] + step[..., None] * direction
    c_low = centre[:, None, :] - step[..., None] * direction
    return mid - reach, mid + reach, c_low, c_high, feasible


def consistent_range(A, y, weights, targets, budget, *, relative=True):
    """Range of predictions of every ``c >= 0`` with loss at most ``budget``.

    The feasible set is an ellipsoid cut by the non-negative orthant; the extremes of
    a linear function over it lie on the ellipsoid's boundary within some face of the
    orthant, so every face (every subset of non-zero coefficients) is tried and the
    extremes whose coefficients are feasible are kept. Exact for the few terms of a
    scaling law (at most 2**k - 1 faces).

    A stack of designs (one per value of a parameter the design depends on, such as
    the bandwidth factor's ``alpha``) is handled at once: the range is then the union
    of the ranges of every design of the stack.

    Parameters
    ----------
    A : array-like of shape (n, k) or (g, n, k)
        Training design, or a stack of ``g`` of them.
    y, weights : array-like of shape (n,)
        Training targets and weights.
    targets : array-like of shape (t, k) or (g, t, k)
        Design rows of the points to predict (for each design of the stack).
    budget : float
        Largest admissible loss (absolute: the least loss plus the profile
        likelihood bound, see :func:`scaleprobe.models.laws.envelope.budget`).
    relative : bool, default=True

    Returns
    -------
    low, high : ndarray of shape (t,)
        NaN where no admissible ``c`` exists.

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([1.0, 2.0, 4.0, 8.0])
    >>> A = (1 / p)[:, None]
    >>> low, high = consistent_range(A, 8 / p, np.ones(4), np.array([[1 / 16]]), 0.04)
    >>> bool(low[0] < 0.5 < high[0]), round(float(high[0] - low[0]), 3)
    (True, 0.1)
    """
    A = np.asarray(A, dtype=float)
    targets = np.asarray(targets, dtype=float)
    if A.ndim == 2:
        A, targets = A[None], targets[None]
    B, b = rows(A, y, weights, relative)
    k = targets.shape[2]
    low = np.full(targets.shape[1], np.inf)
    high = np.full(targets.shape[1], -np.inf)
    tolerance = 1e-9
    with np.errstate(all="ignore"):
        for size in range(1, k + 1):
            for face in itertools.combinations(range(k), size):
                face = list(face)
                lo, hi, c_lo, c_hi, feasible = _face_extremes(
                    B[:, :, face], b, targets[:, :, face], budget
                )
                if not feasible.any():
                    continue
                bound = tolerance * np.maximum(np.abs(c_hi).max(axis=2), 1e-300)
                ok_hi = feasible[:, None] & np.all(c_hi >= -bound[..., None], axis=2)
                bound = tolerance * np.maximum(np.abs(c_lo).max(axis=2), 1e-300)
                ok_lo = feasible[:, None] & np.all(c_lo >= -bound[..., None], axis=2)
                high = np.maximum(high, np.where(ok_hi, hi, -np.inf).max(axis=0))
                low = np.minimum(low, np.where(ok_lo, lo, np.inf).min(axis=0))
    low = np.where(np.isfinite(low), low, np.nan)
    high = np.where(np.isfinite(high), high, np.nan)
    return low, high
