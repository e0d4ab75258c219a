"""The scaling laws of Medya et al. (seed 000, Eqs. 1-7) as one estimator."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar, nnls
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _design
from ._terms import parse_term

__all__ = ["PRESETS", "ScalingLaw"]

#: Term lists of the equations of seed 000 (computation first, then communication).
PRESETS = {
    "base": ("1/p", "1/sqrt(p)"),  # Eq. 1 / Eq. 2
    "generalized": ("D/p", "D/sqrt(p)"),  # Eq. 3
    "bandwidth": ("alpha^(100/bw)",),  # Eq. 5
    "refined": ("1/p", "alpha^(100/bw)/sqrt(p)"),  # Eq. 6
    "generalized_refined": ("D/p", "D*alpha^(100/bw)/sqrt(p)"),  # Eq. 7
}
_OVER = ("nodes", "ranks")


class ScalingLaw(RegressorMixin, BaseEstimator):
    """Completion time as a non-negative combination of named terms.

    ``CT = sum_k C_k * term_k(p, D, bw)`` with ``C_k >= 0`` solved by non-negative
    least squares (NNLS), as in seed 000. Terms with the bandwidth factor
    ``alpha^(100/bw)`` share one exponential factor ``alpha``.

    **How alpha is chosen.** ``alpha`` minimises the training sum of squared errors of
    the NNLS fit over ``alpha_bounds`` (default ``[1, 3]``, the paper's range). For a
    fixed training set, MSE and R² are both monotone in that sum, so this is exactly the
    paper's "optimise R² and MSE" criterion. The paper bisects; a bisection assumes a
    unimodal error curve, so we first scan 41 evenly spaced values (step 0.05 on
    [1, 3]) and then refine around the best one with bounded Brent minimisation
    (``xatol=1e-6``).

    Parameters
    ----------
    form : str or None, default="base"
        A preset: ``"base"`` (Eq. 1/2: ``C1/p + C2/sqrt(p)``), ``"generalized"``
        (Eq. 3), ``"bandwidth"`` (Eq. 5), ``"refined"`` (Eq. 6) or
        ``"generalized_refined"`` (Eq. 7). Ignored when ``terms`` is given.
    terms : sequence of str, default=None
        User-defined terms (see :func:`scaleprobe.models.parse_term` for the grammar),
        e.g. ``["1/p", "log2(p)/sqrt(p)", "1"]``.
    over : {"nodes", "ranks"}, default="nodes"
        The feature column ``p`` is read from.
    ppn : float, default=None
        Processes per node. When given, ``p = ppn * nodes`` (seed 000 uses 18 and
        omits it from its equations). Only valid with ``over="nodes"``.
    s0 : float, default=25
        Reference scale for ``D = 2**(scale - s0)`` when ``X`` has ``scale`` but no
        ``D``.
    alpha_bounds : tuple of float, default=(1.0, 3.0)
        Search interval of ``alpha``.
    features : sequence of str, default=None
        Names of the columns of an array ``X``. Default: the columns the terms read,
        in the order ``[over, "D", "bandwidth"]`` (only those needed). A DataFrame
        holding the needed columns is read by name instead.

    Attributes
    ----------
    terms_ : tuple of str
        Canonical names of the fitted terms.
    coef_ : ndarray of shape (n_terms,)
        Non-negative coefficients.
    alpha_ : float or None
        Exponential bandwidth factor; None when no term depends on bandwidth.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when fitted on a DataFrame.

    See Also
    --------
    PMNFSearch : chooses the terms automatically.

    Examples
    --------
    >>> import numpy as np
    >>> n = np.array([4, 9, 16, 25] * 3, dtype=float)
    >>> y = 30.4 / n + 0.98 / np.sqrt(n)
    >>> model = ScalingLaw(form="base").fit(n.reshape(-1, 1), y)
    >>> np.round(model.coef_, 2)
    array([30.4 ,  0.98])
    """

    def __init__(
        self,
        *,
        form="base",
        terms=None,
        over="nodes",
        ppn=None,
        s0=25,
        alpha_bounds=(1.0, 3.0),
        features=None,
    ):
        self.form = form
        self.terms = terms
        self.over = over
        self.ppn = ppn
        self.s0 = s0
        self.alpha_bounds = alpha_bounds
        self.features = features

    # -- construction ---------------------------------------------------------------
    @classmethod
    def from_coefficients(
        cls, form, coef, alpha=None, ppn=None, s0=25, *, over="nodes"
    ):
        """Build a fitted model from published coefficients (e.g. Tables II-IV).

        Parameters
        ----------
        form : str or sequence of str
            A preset name or a list of terms.
        coef : sequence of float
            One non-negative coefficient per term.
        alpha : float, default=None
            Required when a term depends on bandwidth.
        ppn : float, default=None
            Processes per node; seed 000 uses 18 (``p = 18 n``).
        s0 : float, default=25
            Reference scale of ``D``.
        over : {"nodes", "ranks"}, default="nodes"

        Returns
        -------
        ScalingLaw
            A fitted model.

        Examples
        --------
        >>> m = ScalingLaw.from_coefficients("refined", [118.026, 5.968], alpha=1.11,
        ...                                  ppn=18)
        >>> m.terms_
        ('1/p', 'alpha^(100/bw)/sqrt(p)')
        """
        if isinstance(form, str):
            model = cls(form=form, over=over, ppn=ppn, s0=s0)
        else:
            model = cls(form=None, terms=list(form), over=over, ppn=ppn, s0=s0)
        terms = model._resolve_terms()
        coef = np.asarray(coef, dtype=float).ravel()
        if coef.size != len(terms):
            raise ValueError(
                f"{len(terms)} terms {[t.name for t in terms]} need as many "
                f"coefficients; got {coef.size}"
            )
        needs_alpha = any(t.bandwidth for t in terms)
        if needs_alpha and alpha is None:
            raise ValueError(f"form {form!r} has a bandwidth term; pass alpha")
        model.terms_ = tuple(t.name for t in terms)
        model.coef_ = coef
        model.alpha_ = float(alpha) if needs_alpha else None
        names = _design.needed_columns(terms, over)
        model.n_features_in_ = len(names)
        return model

    def _resolve_terms(self):
        if self.over not in _OVER:
            raise ValueError(f"over must be one of {_OVER}; got {self.over!r}")
        if self.ppn is not None and (self.over != "nodes" or not float(self.ppn) > 0):
            raise ValueError(
                f"ppn={self.ppn!r} needs over='nodes' and a positive value"
            )
        if self.terms is not None:
            terms = [parse_term(t) for t in self.terms]
            if not terms:
                raise ValueError("terms is empty; give at least one term")
            return terms
        if self.form not in PRESETS:
            raise ValueError(
                f"form must be one of {sorted(PRESETS)} (or pass terms); "
                f"got {self.form!r}"
            )
        return [parse_term(t) for t in PRESETS[self.form]]

    # -- fitting --------------------------------------------------------------------
    def fit(self, X, y):
        """Fit the coefficients (and ``alpha``) to completion times ``y``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Feature frame from :func:`make_features`, or an array (see ``features``).
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : ScalingLaw
        """
        terms = self._resolve_terms()
        lo, hi = (float(b) for b in self.alpha_bounds)
        if not 0 < lo < hi:
            raise ValueError(
                f"alpha_bounds must satisfy 0 < low < high; got {self.alpha_bounds!r}"
            )
        Xs, names = _design.select(
            X, _design.needed_columns(terms, self.over), self.features, self.s0
        )
        Xv, yv = validate_data(self, Xs, y, dtype=np.float64, y_numeric=True)
        var = _design.variables(
            Xv,
            names,
            over=self.over,
            ppn=self.ppn,
            s0=self.s0,
            whom=type(self).__name__,
        )
        self.terms_ = tuple(t.name for t in terms)
        if any(t.bandwidth for t in terms):
            self.alpha_ = _search_alpha(terms, var, yv, lo, hi)
        else:
            self.alpha_ = None
        self.coef_, _ = _nnls(_design.design_matrix(terms, var, self.alpha_), yv)
        return self

    # -- prediction -----------------------------------------------------------------
    def _variables(self, X):
        check_is_fitted(self)
        terms = [parse_term(t) for t in self.terms_]
        Xs, names = _design.select(
            X, _design.needed_columns(terms, self.over), self.features, self.s0
        )
        if not hasattr(self, "feature_names_in_") and hasattr(Xs, "columns"):
            # Built from coefficients or fitted on arrays: columns were chosen by name.
            Xs = Xs.to_numpy()
        Xv = validate_data(self, Xs, reset=False, dtype=np.float64)
        return terms, _design.variables(
            Xv,
            names,
            over=self.over,
            ppn=self.ppn,
            s0=self.s0,
            whom=type(self).__name__,
        )

    def predict(self, X):
        """Predict completion times.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        terms, var = self._variables(X)
        return _design.design_matrix(terms, var, self.alpha_) @ self.coef_

    def predict_components(self, X):
        """Split predictions into their terms and into computation vs communication.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        pandas.DataFrame
            One column per term (``coef * term``), plus ``computation`` and
            ``communication`` (see :attr:`Term.is_communication`).
        """
        terms, var = self._variables(X)
        parts = _design.design_matrix(terms, var, self.alpha_) * self.coef_
        out = pd.DataFrame(parts, columns=list(self.terms_))
        comm = np.array([t.is_communication for t in terms])
        out["computation"] = parts[:, ~comm].sum(axis=1)
        out["communication"] = parts[:, comm].sum(axis=1)
        return out

    def crossover_nodes(self, **kwargs):
        """Smallest node count where communication >= computation.

        See :func:`scaleprobe.models.crossover_nodes` for the keyword arguments.

        Examples
        --------
        >>> eq2 = ScalingLaw.from_coefficients("base", [138.59, 4.004], ppn=18)
        >>> eq2.crossover_nodes(admissible=[16, 25, 36, 49, 64, 81, 100])
        81
        """
        from .derived import crossover_nodes

        return crossover_nodes(self, **kwargs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        # Scaling laws are not meant to fit arbitrary random data.
        tags.regressor_tags.poor_score = True
        return tags


def _nnls(A, y):
    """NNLS on column-normalised ``A`` (better conditioned), returns (coef, sse).

    A tall ``A = QR`` is first reduced to the square problem ``R x ~ Q'y``, which
    has the same minimiser: thousands of rows cost one QR instead of NNLS passes.
    """
    scale = np.linalg.norm(A, axis=0)
    scale[scale == 0] = 1.0
    scaled = A / scale
    if A.shape[0] > 4 * A.shape[1]:
        q, r = np.linalg.qr(scaled)
        coef, _ = nnls(r, q.T @ y)
    else:
        coef, _ = nnls(scaled, y)
    coef = coef / scale
    residual = y - A @ coef
    return coef, float(residual @ residual)


def _search_alpha(terms, var, y, lo, hi):
    # The design depends on alpha only through alpha**(100/bw) on bandwidth terms:
    # evaluate everything else once, and the exponent as a log for cheap powers.
    base = _design.design_matrix(terms, var, 1.0)
    exponent = 100.0 / np.asarray(var["bandwidth"], dtype=float)
    scaled = np.array([t.bandwidth for t in terms])

    def sse(alpha):
        design = base.copy()
        design[:, scaled] *= np.exp(np.log(alpha) * exponent)[:, None]
        return _nnls(design, y)[1]

    grid = np.linspace(lo, hi, 41)
    errors = [sse(a) for a in grid]
    best = int(np.argmin(errors))
    left, right = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    result = minimize_scalar(
        sse, bounds=(left, right), method="bounded", options={"xatol": 1e-6}
    )
    return float(result.x) if result.fun <= errors[best] else float(grid[best])
