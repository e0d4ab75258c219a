"""Latency-bound rounds of collectives: a law whose shape the algorithm fixes.

A collective over ``p`` ranks costs a number of latency-bound rounds that its
algorithm fixes: ``log2 p`` for a dissemination barrier, binomial trees, recursive
doubling and Bruck; ``p - 1`` for a pairwise-exchange alltoall and a ring allgather
(``2 (p - 1)`` for a ring allreduce). A program that makes ``c`` such calls per run
spends ``c * rounds(p)`` of them, plus a constant where ranks on one node skip a
round. :class:`RoundLaw` fits ``a + b * g(p)`` with ``g`` the algorithm's shape —
two coefficients, no search — so the count extrapolates the way the algorithm
does: a law found by searching shapes over a few small node counts cannot tell
``p`` from ``sqrt(p) log2(p)``, and at 1024 nodes they differ threefold.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ..core.interface import ModelBase, PerformanceModelTags, check_level, fitted_ranges
from .terms import describe_terms

__all__ = ["SHAPES", "RoundLaw"]

#: The term ``g(p)`` of each shape, as a :func:`~scaleprobe.models.parse_term` name.
SHAPES = {"tree": "log2(p)", "linear": "p"}


def _shape(name, p):
    return np.log2(p) if name == "tree" else np.asarray(p, dtype=float)


class RoundLaw(PerformanceModelTags, ModelBase, RegressorMixin, BaseEstimator):
    """Rounds of collectives as ``a + b * g(p)``, ``g`` fixed by the algorithm.

    Fitted by least squares on relative residuals (counts span decades), with
    ``b >= 0`` (more ranks never take fewer rounds) and ``a`` of either sign (a ring
    takes ``p - 1``: ``a = -b``). The prediction is never negative.

    Parameters
    ----------
    shape : {"tree", "linear"}, default="linear"
        ``g(p) = log2 p`` or ``g(p) = p``.

    Attributes
    ----------
    terms_ : tuple of str
        ``("1", "log2(p)")`` or ``("1", "p")``.
    coef_ : ndarray of shape (2,)
        ``a`` and ``b``.
    covariance_ : ndarray of shape (2, 2)
        Covariance of ``coef_`` (zero for counts the law fits exactly).
    dof_ : int
        Residual degrees of freedom of the fit.
    sigma_ : float
        Relative scatter of the training counts around the law.
    range_ : tuple of float
        Smallest and largest ``p`` of the training data.
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> p = np.array([2, 3, 4, 6, 8], dtype=float)
    >>> law = RoundLaw(shape="linear").fit(p.reshape(-1, 1), 6 * (p - 1))
    >>> np.round(law.coef_, 6).tolist(), law.predict([[1024]]).round(3).tolist()
    ([-6.0, 6.0], [6138.0])
    """

    interval_method = "consistent-range"

    def __init__(self, *, shape="linear"):
        self.shape = shape

    def fit(self, X, y):
        """Fit ``a + b * g(p)`` to the rounds ``y`` at process counts ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            Process (or node) counts (positive).
        y : array-like of shape (n_samples,)
            Rounds (non-negative; zeros are kept, an all-zero ``y`` fits zero).

        Returns
        -------
        self : RoundLaw
        """
        if self.shape not in SHAPES:
            raise ValueError(
                f"shape must be one of {sorted(SHAPES)}; got {self.shape!r}"
            )
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        check_non_negative(X, type(self).__name__)
        if np.any(X[:, 0] <= 0):
            raise ValueError("process counts must be positive")
        if np.any(y < 0):
            raise ValueError("rounds must be non-negative")
        p = X[:, 0]
        design = np.column_stack([np.ones_like(p), _shape(self.shape, p)])
        # Relative residuals: weight 1/y^2; exact zeros weigh like the smallest count.
        positive = y[y > 0]
        floor = positive.min() if positive.size else 1.0
        weights = 1.0 / np.maximum(y, floor) ** 2
        self.terms_ = ("1", SHAPES[self.shape])
        self.range_ = (float(p.min()), float(p.max()))
        distinct = np.unique(p).size
        if distinct < 2 or not positive.size:
            centre = float(np.average(y, weights=weights))
            self.coef_ = np.array([centre, 0.0])
            columns = 1
        else:
            root = np.sqrt(weights)
            coef = np.linalg.lstsq(design * root[:, None], y * root, rcond=None)[0]
            columns = 2
            if coef[1] < 0:  # rounds never fall with p: the best constant instead
                coef = np.array([float(np.average(y, weights=weights)), 0.0])
                columns = 1
            self.coef_ = coef
        residual = (y - design @ self.coef_) * np.sqrt(weights)
        self.dof_ = max(len(y) - columns, 0)
        sigma2 = float(residual @ residual / self.dof_) if self.dof_ else 0.0
        if columns == 2:
            gram = design.T @ (design * weights[:, None])
            self.covariance_ = sigma2 * np.linalg.pinv(gram)
        else:
            self.covariance_ = np.zeros((2, 2))
            self.covariance_[0, 0] = sigma2 / max(weights.sum(), 1e-300)
        self.sigma_ = float(np.sqrt(sigma2))
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def describe(self):
        """The law as text: ``a + b*g(p)``.

        Returns
        -------
        str
        """
        check_is_fitted(self)
        return describe_terms(self.terms_, self.coef_)

    def _design(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        p = X[:, 0]
        if np.any(p <= 0):
            raise ValueError("process counts must be positive")
        return np.column_stack([np.ones_like(p), _shape(self.shape, p)])

    def predict(self, X):
        """Rounds at ``X`` (never negative).

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return np.maximum(self._design(X) @ self.coef_, 0.0)

    def predict_interval(self, X, *, level=0.9):
        """Range of the counts consistent with the fit at ``level``.

        The coefficients' uncertainty (largest far out) plus the relative scatter
        of the training counts around the law (rounds of non-powers of two), with
        Student's t on the fit's degrees of freedom. Counts that the law fits
        exactly get a zero-width range.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
        level : float, default=0.9

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
        """
        check_level(level)
        design = self._design(X)
        mid = design @ self.coef_
        spread = np.einsum("ij,jk,ik->i", design, self.covariance_, design)
        spread = np.sqrt(np.maximum(spread, 0.0) + (self.sigma_ * mid) ** 2)
        quantile = stats.t.ppf(0.5 + level / 2, max(self.dof_, 1))
        return (
            np.maximum(mid - quantile * spread, 0.0),
            np.maximum(mid + quantile * spread, 0.0),
        )
