"""The scaling laws of Medya et al. 2017 (Eqs. 1-7) as one estimator."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core.interface import ModelBase, PerformanceModelTags, check_level, fitted_ranges
from ..core.warnings import DegenerateFitWarning, InsufficientDataWarning, warn
from . import design as _design
from . import envelope as _envelope
from .lsq import nnls_losses, weighted_nnls
from .terms import describe_terms, parse_term

__all__ = ["PRESETS", "ScalingLaw"]


#: Term lists of the equations of Medya et al. 2017 (computation first, then
#: communication).
PRESETS = {
    "base": ("1/p", "1/sqrt(p)"),  # Eq. 1 / Eq. 2
    "generalized": ("D/p", "D/sqrt(p)"),  # Eq. 3
    "bandwidth": ("alpha^(100/bw)",),  # Eq. 5
    "refined": ("1/p", "alpha^(100/bw)/sqrt(p)"),  # Eq. 6
    "generalized_refined": ("D/p", "D*alpha^(100/bw)/sqrt(p)"),  # Eq. 7
}
_OVER = ("nodes", "ranks")


class ScalingLaw(PerformanceModelTags, ModelBase, RegressorMixin, BaseEstimator):
    """Completion time as a non-negative combination of named terms.

    ``CT = sum_k C_k * term_k(p, D, bw)`` with ``C_k >= 0`` solved by non-negative
    least squares (NNLS), as in Medya et al. 2017. Terms with the bandwidth factor
    ``alpha^(100/bw)`` share one exponential factor ``alpha``.

    **Loss.** ``loss="relative"`` (default) divides every residual by its
    measurement: noise is multiplicative and times span decades, so the large-p
    points, tiny in seconds, still count. ``loss="absolute"`` is the paper's plain
    NNLS. ``sample_weight`` multiplies each row's squared residual (e.g. the number
    of runs behind a configuration's centre).

    **Warnings.** A coefficient NNLS sets to zero (the law lost a term, e.g. a
    computation term of 0 makes "communication dominate" from one node) and an
    ``alpha`` at a bound of its search interval (the optimum lies outside it) raise
    :class:`~scaleprobe.models.DegenerateFitWarning`.

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
        Processes per node. When given, ``p = ppn * nodes`` (Medya et al. 2017 use
        18 and omit it from their equations). Only valid with ``over="nodes"``.
    s0 : float, default=25
        Reference scale for ``D = 2**(scale - s0)`` when ``X`` has ``scale`` but no
        ``D``.
    alpha_bounds : tuple of float, default=(1.0, 3.0)
        Search interval of ``alpha``.
    features : sequence of str, default=None
        Names of the columns of an array ``X``. Default: the columns the terms read,
        in the order ``[over, "D", "bandwidth"]`` (only those needed). A DataFrame
        holding the needed columns is read by name instead.
    loss : {"relative", "absolute"}, default="relative"
        Least-squares loss (see above).

    Attributes
    ----------
    terms_ : tuple of str
        Canonical names of the fitted terms.
    coef_ : ndarray of shape (n_terms,)
        Non-negative coefficients.
    alpha_ : float or None
        Exponential bandwidth factor; None when no term depends on bandwidth.
    training_ : pandas.DataFrame
        Training configurations (``p``, ``D``, ``bandwidth`` as used, ``y`` centre,
        ``n`` replicates, ``log_sd``), kept for :meth:`predict_interval`.
    noise_ : float
        Noise the intervals assume (standard deviation of log time per replicate).
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
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

    interval_method = "consistent-range"

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
        loss="relative",
    ):
        self.form = form
        self.terms = terms
        self.over = over
        self.ppn = ppn
        self.s0 = s0
        self.alpha_bounds = alpha_bounds
        self.features = features
        self.loss = loss

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
            Processes per node; Medya et al. 2017 use 18 (``p = 18 n``).
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
    def fit(self, X, y, sample_weight=None):
        """Fit the coefficients (and ``alpha``) to completion times ``y``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            Feature frame from :func:`make_features`, or an array (see ``features``).
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weight of each row's squared residual.

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
        if self.loss not in ("relative", "absolute"):
            raise ValueError(
                f"loss must be 'relative' or 'absolute'; got {self.loss!r}"
            )
        Xs, names = _design.select(
            X, _design.needed_columns(terms, self.over), self.features, self.s0
        )
        Xv, yv = validate_data(self, Xs, y, dtype=np.float64, y_numeric=True)
        weights = check_weights(sample_weight, yv.shape[0])
        relative = self.loss == "relative"
        if relative and np.any(yv <= 0):
            raise ValueError(
                "loss='relative' needs positive targets (times, counts); got "
                f"minimum {yv.min()!r}; use loss='absolute' for other data"
            )
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
            self.alpha_ = search_alpha(terms, var, yv, weights, relative, lo, hi)
        else:
            self.alpha_ = None
        design = _design.design_matrix(terms, var, self.alpha_)
        self.coef_ = weighted_nnls(design, yv, weights, relative=relative)[0]
        warn_degenerate(self.terms_, self.coef_, self.alpha_, self.alpha_bounds)
        self.training_, self.noise_, self.noise_dof_ = training_noise(
            terms, self.coef_, self.alpha_, var, yv, sample_weight
        )
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def predict_interval(self, X, *, level=0.9):
        """Range of predictions of every coefficient vector the data cannot reject.

        See :mod:`scaleprobe.models.laws.envelope`: the profile likelihood range of
        the prediction (Venzon and Moolgavkar 1988) over this law and the plausible
        ones, coefficients (and ``alpha`` on a grid of its interval) whose relative
        loss is within ``sigma**2 * chi2.ppf(level, 1)`` of the best of them.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        level : float, default=0.9

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
        """
        terms, var = self._variables(X)
        if not hasattr(self, "training_"):
            raise ValueError(
                "this law was built from coefficients, not fitted: an interval needs "
                "the measurements"
            )
        check_level(level)
        table = self.training_
        if not np.isfinite(self.noise_):
            warn(
                f"{len(table)} configuration(s) for {len(terms)} coefficient(s) and no "
                "replicates: the noise, and so an interval, cannot be estimated",
                InsufficientDataWarning,
                stacklevel=2,
            )
            nan = np.full(len(var["p"]), np.nan)
            return nan, nan
        limit = _envelope.budget(self.noise_, level, self.noise_dof_)
        # Model uncertainty belongs in the interval: the plausible laws the data
        # cannot tell from this one count as much as its own coefficients.
        return _envelope.family_range(
            table,
            var,
            self.predict(X),
            limit,
            own=self.terms_,
            data=any(t.data for t in terms),
            bandwidth=any(t.bandwidth for t in terms),
            alpha=self.alpha_,
        )

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

    @property
    def frame_defaults(self):
        """The law's own ``ppn`` (None: ``p`` is what ``over`` reads) and ``s0``."""
        return {"ppn": self.ppn, "s0": self.s0}

    def describe(self):
        """The law as text: each coefficient times its term, and ``alpha``.

        Returns
        -------
        str
        """
        check_is_fitted(self)
        return describe_terms(self.terms_, self.coef_, self.alpha_)

    def crossover_nodes(self, **kwargs):
        """Smallest node count where communication >= computation.

        See :func:`scaleprobe.models.crossover_nodes` for the keyword arguments.

        Examples
        --------
        >>> eq2 = ScalingLaw.from_coefficients("base", [138.59, 4.004], ppn=18)
        >>> eq2.crossover_nodes(admissible=[16, 25, 36, 49, 64, 81, 100])
        81
        """
        from ..projection.derived import crossover_nodes

        return crossover_nodes(self, **kwargs)


# --------------------------------------------------------------- fitting steps
# The weights, the search for ``alpha``, the warnings of a degenerate fit and the
# noise of the training configurations (the last feeds the law's intervals).


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
