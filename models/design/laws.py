"""The laws a design weighs: small, linear in their coefficients, fitted at once.

A design asks the same question thousands of times (what would the interval be if
this point were measured?), so its laws must answer it in closed form. Every
:class:`DesignLaw` is linear in its coefficients, either in the time itself
(``t = c0 + c1 * f(x)``, Extra-P's single-term normal form of Calotoiu et al.
2013) or in its logarithm (``log t = c0 + c1 * log x``, a power law). Its weighted
least-squares fit gives the information matrix of the coefficients; adding a
measurement adds one outer product to it, and the variance of the prediction at
the target follows without refitting.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["DesignLaw", "FittedLaw", "default_laws", "fit_law"]


@dataclass(frozen=True)
class DesignLaw:
    """A law linear in its coefficients.

    Parameters
    ----------
    name : str
        How the law is printed (``"c0 + c1*p"``).
    basis : callable
        ``basis(x) -> ndarray (len(x), k)``: the columns the coefficients multiply.
    log : bool, default=False
        The basis predicts ``log t`` (True) or ``t`` (False).

    Examples
    --------
    >>> import numpy as np
    >>> law = DesignLaw("c0 + c1*p", lambda x: np.column_stack([x**0, x]))
    >>> law.basis(np.array([1.0, 2.0])).shape
    (2, 2)
    """

    name: str
    basis: Callable
    log: bool = False

    def columns(self, x):
        """The basis at ``x`` as a float array ``(len(x), k)``."""
        return np.asarray(self.basis(np.asarray(x, dtype=float)), dtype=float)

    @cached_property
    def size(self):
        """Number of coefficients."""
        return self.columns(np.array([2.0])).shape[1]


def _ones(x):
    return np.ones_like(x)


def default_laws():
    """The laws a design weighs by default, simplest first.

    The level, the power law, and ``c0 + c1 * f(p)`` for the terms strong- and
    weak-scaling codes show most (``1/p``, ``log2 p``, ``sqrt p``, ``p``,
    ``p log2 p``, ``p**2``).

    Returns
    -------
    list of DesignLaw

    Examples
    --------
    >>> [law.name for law in default_laws()][:3]
    ['level', 'a*p^b', 'c0 + c1/p']
    """
    terms = {
        "/p": lambda x: 1.0 / x,
        "*log2(p)": np.log2,
        "*sqrt(p)": np.sqrt,
        "*p": lambda x: x,
        "*p*log2(p)": lambda x: x * np.log2(x),
        "*p^2": lambda x: x**2,
    }
    laws = [
        DesignLaw("level", lambda x: _ones(x)[:, None], log=True),
        DesignLaw("a*p^b", lambda x: np.column_stack([_ones(x), np.log(x)]), log=True),
    ]
    for text, term in terms.items():
        laws.append(
            DesignLaw(
                f"c0 + c1{text}",
                lambda x, term=term: np.column_stack([_ones(x), term(x)]),
            )
        )
    return laws


@dataclass(frozen=True)
class FittedLaw:
    """A law fitted to the centres of a series.

    Attributes
    ----------
    law : DesignLaw
    coef : ndarray of shape (k,)
    information : ndarray of shape (k, k)
        ``sum_i n_i J_i J_i^T`` over the measured counts, ``J`` the gradient of
        ``log t`` in the coefficients and ``n`` the repetitions: the information
        matrix in units of the noise variance.
    """

    law: DesignLaw
    coef: np.ndarray
    information: np.ndarray

    @property
    def name(self):
        """The law's name."""
        return self.law.name

    def log_predict(self, x):
        """``log t`` at ``x`` (NaN where the law is not positive)."""
        value = self.law.columns(x) @ self.coef
        if self.law.log:
            return value
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(value > 0, np.log(np.where(value > 0, value, 1.0)), np.nan)

    def gradient(self, x):
        """``(len(x), k)``: the gradient of ``log t`` in the coefficients."""
        columns = self.law.columns(x)
        if self.law.log:
            return columns
        return columns / (columns @ self.coef)[:, None]

    def variance(self, x, information=None):
        """Variance of ``log t`` at ``x`` per unit noise variance.

        Parameters
        ----------
        x : array-like of float
        information : ndarray, default=None
            Another information matrix (one with planned points added).

        Returns
        -------
        ndarray of shape (len(x),)
        """
        info = self.information if information is None else information
        gradient = self.gradient(x)
        inverse = np.linalg.pinv(info)
        return np.einsum("ij,jk,ik->i", gradient, inverse, gradient)

    def added(self, x, repeats):
        """The information matrix with ``repeats`` more measurements at each ``x``."""
        gradient = self.gradient(np.atleast_1d(x))
        repeats = np.broadcast_to(
            np.asarray(repeats, dtype=float), gradient[:, 0].shape
        )
        return self.information + (gradient * repeats[:, None]).T @ gradient


def fit_law(law, x, centre, count):
    """Fit a law by weighted least squares on relative errors.

    Parameters
    ----------
    law : DesignLaw
    x : ndarray of shape (m,)
        The measured counts.
    centre : ndarray of shape (m,)
        Mean time at each count (positive).
    count : ndarray of shape (m,)
        Repetitions behind each mean.

    Returns
    -------
    FittedLaw or None
        None where the counts cannot identify the coefficients or the fit is not
        positive at every count.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([1.0, 2, 4, 8])
    >>> fitted = fit_law(default_laws()[1], x, 3 * x**-0.5, np.ones(4))
    >>> np.round(fitted.coef, 3).tolist()
    [1.099, -0.5]
    """
    x, centre = np.asarray(x, dtype=float), np.asarray(centre, dtype=float)
    count = np.asarray(count, dtype=float)
    columns = law.columns(x)
    if x.size < columns.shape[1] or np.linalg.matrix_rank(columns) < columns.shape[1]:
        return None
    if law.log:
        target, weight = np.log(centre), count
    else:
        target, weight = centre, count / centre**2
    root = np.sqrt(weight)
    coef = np.linalg.lstsq(columns * root[:, None], target * root, rcond=None)[0]
    fitted = FittedLaw(law, coef, np.eye(columns.shape[1]))
    if not np.all(np.isfinite(fitted.log_predict(x))):
        return None
    gradient = fitted.gradient(x)
    information = (gradient * count[:, None]).T @ gradient
    return FittedLaw(law, coef, information)
