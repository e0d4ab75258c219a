"""RBASP: the regression baseline of Bhimani et al. 2019 (Eq. 17).

Barnes et al.'s regression-based approach, as Bhimani et al. 2019 reproduce it to
compare FiM against: the base-2 logarithm of the execution time is linear in the
application parameters ``x_i`` plus a function ``g`` of the process count ``q``,

``log2(y) = beta_0 + beta_1 x_1 + ... + beta_n x_n + g(q)``,

with ``g`` linear (``gamma_1 q``) or quadratic (``gamma_1 q + gamma_2 q**2``), fitted
by ordinary least squares on runs at a few small process counts (the paper trains on
``q = 1, 2, 4``). It extrapolates ``g`` far beyond them; scaleprobe offers it as the
published baseline it is, and warns when it is asked beyond the trained counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import (
    check_is_fitted,
    check_non_negative,
    validate_data,
)

from ..core.configs import REPLICATE_COLUMNS, is_measured
from ..core.interface import ModelBase, PerformanceModelTags, fitted_ranges
from ..core.warnings import ExtrapolationWarning, InsufficientDataWarning, warn
from .size import determined_parameters

__all__ = ["RBASP"]

#: Columns that are never application parameters: process counts, their parts,
#: replicates and derived sizes.
_NOT_PARAMETERS = ("nodes", "ranks", "ppn", "D", *REPLICATE_COLUMNS)
_G_FORMS = ("linear", "quadratic")


class RBASP(PerformanceModelTags, ModelBase, RegressorMixin, BaseEstimator):
    """Eq. 17 of Bhimani et al. 2019: ``log2(y) = beta_0 + sum_i beta_i x_i + g(q)``.

    Parameters
    ----------
    over : {"ranks", "nodes"}, default="ranks"
        The process-count column ``q`` of a DataFrame (arrays: the first column).
    g : {"quadratic", "linear"}, default="quadratic"
        The form of ``g(q)``.
    features : sequence of str, default=None
        Application parameters ``x_i`` of a DataFrame. Default: every other numeric
        column except process counts, ``ppn``, ``D``, replicates and measured
        critical-path columns (arrays: every column after the first). Process
        counts and parameters must be non-negative (sizes, counts, iterations).

    Attributes
    ----------
    intercept_ : float
        ``beta_0``.
    coef_ : ndarray
        ``beta_1 ... beta_n`` then ``gamma_1`` (and ``gamma_2``); 0 for a parameter
        left out of ``kept_``.
    kept_ : tuple of int
        The parameters (indices into ``parameters_``) regressed on: all of them,
        unless the training sizes cannot determine a coefficient for each
        (parameters that grow together), then the largest subset they determine
        whose parameters grow most, with an
        :class:`~scaleprobe.models.InsufficientDataWarning`.
    parameters_ : list of str
        Names of the ``x_i`` (``x1``... for arrays).
    q_range_ : tuple of float
        Smallest and largest trained process count.
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> q = np.array([1.0, 2.0, 4.0, 1.0, 2.0, 4.0])
    >>> x = np.array([1.0, 1.0, 1.0, 2.0, 2.0, 2.0])
    >>> y = 2 ** (3 + 0.5 * x - 0.4 * q + 0.02 * q**2)
    >>> model = RBASP().fit(np.column_stack([q, x]), y)
    >>> np.round([model.intercept_, *model.coef_], 6).tolist()
    [3.0, 0.5, -0.4, 0.02]
    """

    def __init__(self, *, over="ranks", g="quadratic", features=None):
        self.over = over
        self.g = g
        self.features = features

    def _select(self, X, reset):
        """The columns ``q, x_1..x_n`` of a named frame (other input unchanged)."""
        named = isinstance(X, pd.DataFrame) and any(
            isinstance(c, str) for c in X.columns
        )
        if not named:
            if reset:
                self.parameters_ = None
            return X
        if self.over not in X.columns:
            raise ValueError(
                f"RBASP needs the process-count column {self.over!r}; the frame "
                f"has {', '.join(map(str, X.columns))}"
            )
        if reset:
            names = self.features
            if names is None:
                names = [
                    c
                    for c in X.columns
                    if c != self.over
                    and c not in _NOT_PARAMETERS
                    and not is_measured(c)
                    and pd.api.types.is_numeric_dtype(X[c])
                ]
            self.parameters_ = list(names)
        missing = [c for c in self.parameters_ if c not in X.columns]
        if missing:
            raise ValueError(
                f"RBASP was fitted with parameter(s) {self.parameters_}; the frame "
                f"lacks {missing}"
            )
        return X[[self.over, *self.parameters_]].to_numpy(dtype=float)

    @staticmethod
    def _columns(data):
        # Process counts and application parameters (sizes, iterations, classes)
        # are never negative.
        check_non_negative(data, "RBASP")
        return data[:, 0], data[:, 1:]

    def _design(self, q, x):
        columns = [x, q[:, None]]
        if self.g == "quadratic":
            columns.append(q[:, None] ** 2)
        return np.hstack(columns)

    def fit(self, X, y):
        """Fit ``log2(y)`` by ordinary least squares.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Positive times.

        Returns
        -------
        self : RBASP
        """
        if self.g not in _G_FORMS:
            raise ValueError(f"g must be one of {_G_FORMS}; got {self.g!r}")
        if self.over not in ("ranks", "nodes"):
            raise ValueError(f"over must be 'ranks' or 'nodes'; got {self.over!r}")
        data = self._select(X, reset=True)
        data, y = validate_data(self, data, y, dtype=np.float64, y_numeric=True)
        if self.parameters_ is None:
            self.parameters_ = [f"x{i}" for i in range(1, data.shape[1])]
        q, x = self._columns(data)
        if np.any(y <= 0):
            raise ValueError("RBASP models log2 of the time: y must be positive")
        self.kept_ = self._determined(x)
        design = np.column_stack([np.ones_like(q), self._design(q, x)])
        columns = [
            0,
            *(1 + j for j in self.kept_),
            *range(1 + x.shape[1], design.shape[1]),
        ]
        fitted, *_ = np.linalg.lstsq(design[:, columns], np.log2(y), rcond=None)
        solution = np.zeros(design.shape[1])
        solution[columns] = fitted
        self.intercept_ = float(solution[0])
        self.coef_ = solution[1:]
        self.q_range_ = (float(q.min()), float(q.max()))
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def _determined(self, x):
        """The parameters the training sizes determine a coefficient for (all of
        them, unless some grow together: then those that grow most), warning when
        some are left out (:func:`~scaleprobe.models.fim.size.determined_parameters`).

        Least squares on parameters that grow together takes the solution of least
        norm, which trades one against another: on NPB CG's classes S and W,
        ``-0.0161 na + 0.000213 nnz``, which put class A at 2**169 s.
        """
        every = tuple(range(x.shape[1]))
        design = np.column_stack([np.ones(len(x)), x])
        kept, others = determined_parameters(design, every, "linear")
        if others:
            names = self.parameters_
            taken = " and ".join(names[j] for j in kept)
            rest = "; ".join(" and ".join(names[j] for j in o) for o in others)
            warn(
                f"RBASP: the training sizes cannot tell a law in {taken} from one in "
                f"{rest} (those parameters grow together over them); it regresses on "
                f"{taken} (growing most) and sets the others' coefficients to 0; "
                "measure a size off the line the measured sizes lie on to tell them",
                InsufficientDataWarning,
                stacklevel=3,
            )
        return kept

    def describe(self):
        """Eq. 17 with its fitted coefficients.

        Returns
        -------
        str
        """
        check_is_fitted(self)
        names = [*self.parameters_, "q"] + (["q^2"] if self.g == "quadratic" else [])
        terms = zip(self.coef_, names, strict=True)
        return f"log2(time) = {self.intercept_:.4g} " + " ".join(
            f"{c:+.4g}*{n}" for c, n in terms
        )

    def predict(self, X):
        """Predict times: ``2 ** (beta_0 + sum_i beta_i x_i + g(q))``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)

        Warns
        -----
        ExtrapolationWarning
            Process counts beyond the trained ones: ``g`` is extrapolated.
        """
        check_is_fitted(self)
        data = validate_data(self, self._select(X, reset=False), reset=False)
        q, x = self._columns(data)
        if q.size and q.max() > self.q_range_[1]:
            warn(
                f"RBASP extrapolates g(q) from process counts up to "
                f"{self.q_range_[1]:g} to {q.max():g}",
                ExtrapolationWarning,
                stacklevel=2,
            )
        with np.errstate(over="ignore"):
            return np.exp2(self.intercept_ + self._design(q, x) @ self.coef_)
