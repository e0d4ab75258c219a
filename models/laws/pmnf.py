"""Automatic scaling-law search over the performance model normal form (Extra-P)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core.interface import PerformanceModelTags
from ..core.warnings import InsufficientDataWarning, quiet, warn
from . import design as _design
from . import envelope as _envelope
from ._pmnf_select import search, with_alpha
from .scaling_law import ScalingLaw
from .terms import Term

__all__ = ["PMNF_EXPONENTS", "PMNFSearch"]

#: Extra-P's default exponents i of ``p^i``; the search uses them and their negatives.
PMNF_EXPONENTS = (
    "0",
    "1/4",
    "1/3",
    "1/2",
    "2/3",
    "3/4",
    "1",
    "5/4",
    "4/3",
    "3/2",
    "5/3",
    "7/4",
    "2",
    "9/4",
    "7/3",
    "5/2",
    "8/3",
    "11/4",
    "3",
)


class PMNFSearch(PerformanceModelTags, RegressorMixin, BaseEstimator):
    """Find a scaling law ``c0 + sum_k C_k p^i_k log2(p)^j_k`` by extrapolation.

    Candidate terms are ``p^i log2(p)^j`` for ``i`` in :data:`PMNF_EXPONENTS` and
    ``j`` in ``log_exponents``, the falling terms ``p^-i`` (``0 < i <= 1``) and
    ``log2(p)/p`` — nothing falls faster than perfect strong scaling — plus a
    constant (Extra-P's ``c0``). The search:

    1. reduces the data to configurations (geometric mean of the replicates, their
       count as weight) and fits every law with the relative weighted least-squares
       loss of :class:`ScalingLaw` — the loss the chosen law is refitted with, so the
       reported coefficients are the ones that won;
    2. scores laws by extrapolation: folds train on the ``k`` smallest process counts
       and test on all larger ones (mean absolute log error); a law with ``q``
       coefficients needs ``q + 1`` distinct process counts in every fold, so with
       ``m`` distinct counts no law has more than ``m - 2`` coefficients, and all laws
       are scored on the same folds. Every one- and two-coefficient law is scored,
       and the best two-coefficient laws are extended by a third;
    3. allows terms falling with ``p`` only when the data fall somewhere, so a rising
       series is never fitted with ``1/p**k`` terms standing in for a constant;
    4. accepts the laws whose held-out errors the noise explains in at least half
       of the folds — in a fold, the squared log errors weighed by their covariance
       (noise of the test centres plus the noise the fit propagates to its
       predictions, ``sigma`` the replicate noise) stay below the 90 % quantile of
       their law — and picks the simplest of them: fewest terms, least unusual
       terms (:func:`~scaleprobe.models.laws._pmnf_search.complexity`), slowest growth.
       When none is accepted (or there are no replicates), the simplest law within
       ``max(tol * best, sigma / sqrt(n))`` of the best score is taken.

    With only two distinct process counts no law can be checked: the search warns
    (:class:`~scaleprobe.models.InsufficientDataWarning`) and returns the power law
    through the two, the simplest honest answer. :meth:`predict_interval` gives the
    range of every plausible law the data cannot reject (see
    :mod:`scaleprobe.models.laws.envelope`).

    Parameters
    ----------
    parameter : {"ranks", "nodes"}, default="ranks"
        The feature column ``p``.
    max_terms : int, default=3
        Largest number of non-constant terms (1 to 3).
    constant : bool, default=True
        Offer the constant term ``c0`` (``c0 * D`` with ``data``).
    exponents : sequence of str, default=PMNF_EXPONENTS
        Exponents ``i`` of the growing terms (fractions as strings); falling terms
        use those not above 1.
    log_exponents : sequence of int, default=(0, 1, 2)
    falling : sequence of str, default=None
        The falling terms allowed (e.g. ``["1/p"]``); default every ``p^-i`` with
        ``0 < i <= 1`` and ``log2(p)/p``.
    data : bool, default=False
        Multiply every term by the data size ``D`` (as Eq. 3 of seed 000).
    bandwidth : bool, default=False
        Multiply the communication terms (those not falling like ``1/p`` or faster;
        never the constant) by ``alpha^(100/bw)``. Laws are scored on every
        bandwidth with ``alpha`` on a grid, then refitted with ``alpha`` optimised.
    tol : float, default=0.1
        Relative part of the near-tie margin.
    ppn, s0, features
        As in :class:`ScalingLaw`.

    family_interval : bool, default=True
        :meth:`predict_interval` spans the plausible laws of the whole family (model
        uncertainty for a law found by search); False keeps to the chosen law's own
        consistent coefficients (for nearly deterministic series such as traffic
        counts, whose laws a calibration on held-out counts checks instead).

    Attributes
    ----------
    best_estimator_ : ScalingLaw
        The chosen law refitted on all configurations.
    terms_, coef_, alpha_ : as in ScalingLaw
    search_scores_ : pandas.DataFrame
        Best candidates with their extrapolation score, the chosen one first.
    training_ : pandas.DataFrame
        The configurations (``p``, ``D``, ``bandwidth``, ``y``, ``n``, ``log_sd``).
    noise_ : float
        Noise the intervals assume.
    max_coefficients_ : int
        Largest number of coefficients the data could check.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> p = np.repeat(2.0 ** np.arange(1, 11), 3)
    >>> y = 50 / p + 3 / np.sqrt(p)
    >>> sorted(PMNFSearch().fit(p.reshape(-1, 1), y).terms_)
    ['1/p', '1/sqrt(p)']
    """

    def __init__(
        self,
        *,
        parameter="ranks",
        max_terms=3,
        constant=True,
        exponents=PMNF_EXPONENTS,
        log_exponents=(0, 1, 2),
        falling=None,
        data=False,
        bandwidth=False,
        tol=0.1,
        ppn=None,
        s0=25,
        features=None,
        family_interval=True,
    ):
        self.parameter = parameter
        self.max_terms = max_terms
        self.constant = constant
        self.exponents = exponents
        self.log_exponents = log_exponents
        self.falling = falling
        self.data = data
        self.bandwidth = bandwidth
        self.tol = tol
        self.ppn = ppn
        self.s0 = s0
        self.features = features
        self.family_interval = family_interval

    def _probe(self):
        return [Term(data=bool(self.data), bandwidth=bool(self.bandwidth))]

    def _check_params(self):
        if self.parameter not in ("ranks", "nodes"):
            raise ValueError(
                f"parameter must be 'ranks' or 'nodes'; got {self.parameter!r}"
            )
        if int(self.max_terms) not in (1, 2, 3) or self.max_terms != int(
            self.max_terms
        ):
            raise ValueError(f"max_terms must be 1, 2 or 3; got {self.max_terms!r}")
        if not 0 <= float(self.tol) < 1:
            raise ValueError(f"tol must be in [0, 1); got {self.tol!r}")

    def fit(self, X, y, sample_weight=None):
        """Search the law, then refit it on all configurations.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Positive times (or counts).
        sample_weight : array-like of shape (n_samples,), default=None
            When given, every row is a configuration centre and its weight the
            number of replicates behind it (no replicate noise is then known).

        Returns
        -------
        self : PMNFSearch
        """
        self._check_params()
        Xs, names = _design.select(
            X,
            _design.needed_columns(self._probe(), self.parameter),
            self.features,
            self.s0,
        )
        Xv, yv = validate_data(self, Xs, y, dtype=np.float64, y_numeric=True)
        if np.any(yv <= 0):
            raise ValueError(
                f"PMNFSearch needs positive targets; got minimum {yv.min()!r}"
            )
        if yv.size < 2:
            raise ValueError(
                f"PMNFSearch needs at least 2 samples; got n_samples = {yv.size}"
            )
        var = _design.variables(
            Xv,
            names,
            over=self.parameter,
            ppn=self.ppn,
            s0=self.s0,
            whom=type(self).__name__,
        )
        weights = None
        if sample_weight is not None:
            weights = np.asarray(sample_weight, dtype=float).ravel()
            if weights.shape != yv.shape or np.any(weights < 0):
                raise ValueError("sample_weight must be non-negative, one per sample")
            if not weights.any():
                raise ValueError("sample_weight is zero everywhere: nothing to fit")
            keep = weights > 0  # a zero weight removes the sample
            yv, weights = yv[keep], weights[keep]
            var = {k: v[keep] for k, v in var.items()}
        table = _envelope.training_table(var, yv, weights)
        distinct = np.unique(table["p"]).size
        if distinct < 2:
            raise ValueError(
                f"PMNFSearch needs at least 2 distinct values of {self.parameter!r}; "
                f"got {distinct}"
            )
        if distinct == 2:
            chosen, scores, cap = self._two_points(table), None, 1
        else:
            chosen, scores, cap = search(self, table)
        law = self._refit(chosen, table)
        self.best_estimator_ = law
        self.terms_ = law.terms_
        self.coef_ = law.coef_
        self.alpha_ = law.alpha_
        self.search_scores_ = scores
        self.training_ = table
        self.max_coefficients_ = cap
        configs = {
            k: table[k].to_numpy() for k in ("p", "D", "bandwidth") if k in table
        }
        fitted = law.predict(self._frame(configs).to_numpy())
        residual = (table["y"] - fitted) / table["y"]
        loss = float(np.sum(table["n"] * residual**2))
        dof = len(table) - len(law.terms_) - (law.alpha_ is not None)
        replicate, replicate_dof = _envelope.replicate_noise_dof(table)
        self.noise_, self.noise_dof_ = _envelope.noise_level(
            replicate, loss, dof, replicate_dof
        )
        return self

    def _two_points(self, table):
        warn(
            f"only 2 distinct values of {self.parameter!r}: no scaling law can be "
            "selected or checked against a held-out point; using the power law "
            "through the two (measure a third node count to know more)",
            InsufficientDataWarning,
            stacklevel=3,
        )
        values = table["y"] / table.get("D", 1.0)
        centres = np.exp(np.log(values).groupby(table["p"]).mean())
        (p1, y1), (p2, y2) = centres.items()
        slope = Fraction(math.log(y2 / y1) / math.log(p2 / p1)).limit_denominator(100)
        return [Term(p_exponent=slope, data=bool(self.data))]

    def _frame(self, var):
        """A frame of the law's columns from variables (``p`` back to nodes/ranks)."""
        frame = pd.DataFrame({self.parameter: var["p"] / float(self.ppn or 1.0)})
        if self.data:
            frame["D"] = var["D"]
        if self.bandwidth and "bandwidth" in var:
            frame["bandwidth"] = var["bandwidth"]
        return frame

    def _refit(self, chosen, table):
        terms = chosen
        if self.bandwidth and "bandwidth" in table:
            terms = [with_alpha(t) for t in chosen]
        var = {k: table[k].to_numpy() for k in ("p", "D", "bandwidth") if k in table}
        frame = self._frame(var)
        weights = table["n"].to_numpy(dtype=float)
        law = ScalingLaw(
            terms=[t.name for t in terms],
            over=self.parameter,
            ppn=self.ppn,
            s0=self.s0,
            features=list(frame.columns),
            loss="relative",
        )
        y = table["y"].to_numpy()
        with quiet():
            law.fit(frame.to_numpy(), y, sample_weight=weights)
            if 0 < np.count_nonzero(law.coef_) < len(terms):
                # The non-negative fit switched a term off on all data: drop it.
                kept = [t for t, c in zip(law.terms_, law.coef_, strict=True) if c > 0]
                law.set_params(terms=kept).fit(
                    frame.to_numpy(), y, sample_weight=weights
                )
        return law

    # -- prediction -------------------------------------------------------------------
    def _law_input(self, X):
        check_is_fitted(self)
        Xs, names = _design.select(
            X,
            _design.needed_columns(self._probe(), self.parameter),
            self.features,
            self.s0,
        )
        Xv = validate_data(self, Xs, reset=False, dtype=np.float64)
        var = _design.variables(
            Xv,
            names,
            over=self.parameter,
            ppn=self.ppn,
            s0=self.s0,
            whom=type(self).__name__,
        )
        return self._frame(var).to_numpy(), var

    def predict(self, X):
        """Predict with the chosen law (see :meth:`ScalingLaw.predict`)."""
        array = self._law_input(X)[0]
        return self.best_estimator_.predict(array)

    def predict_components(self, X):
        """Split predictions into terms (see :meth:`ScalingLaw.predict_components`)."""
        array = self._law_input(X)[0]
        return self.best_estimator_.predict_components(array)

    def predict_interval(self, X, *, level=0.9):
        """Range of every plausible law the data cannot reject (see ``_envelope``).

        The family holds the chosen law and the laws of
        :data:`~scaleprobe.models.laws.envelope.ENVELOPE_FAMILY` with at most one
        coefficient fewer than there are distinct process counts.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        level : float, default=0.9

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
        """
        array, var = self._law_input(X)
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level!r}")
        table = self.training_
        limit = _envelope.budget(self.noise_, len(table), level, self.noise_dof_)
        return _envelope.family_range(
            table,
            var,
            self.best_estimator_.predict(array),
            limit,
            own=self.terms_,
            data=bool(self.data),
            bandwidth=bool(self.bandwidth) and "bandwidth" in table,
            alpha=self.alpha_,
            family=self.family_interval,
        )

    def crossover_nodes(self, **kwargs):
        """Smallest node count where communication >= computation.

        See :func:`scaleprobe.models.crossover_nodes` for the keyword arguments.
        """
        from ..projection.derived import crossover_nodes

        return crossover_nodes(self, **kwargs)
