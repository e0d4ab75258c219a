"""Automatic scaling-law search over the performance model normal form (Extra-P).

:class:`PMNFSearch` finds a law ``c0 + sum_k C_k p^i_k log2(p)^j_k``: every
combination of normal-form terms is scored on forward folds (held-out larger process
counts), and the noise decides which laws are explained (:func:`search`).

The search works on configuration centres (see :mod:`scaleprobe.models.core.configs`)
with the relative weighted loss of :mod:`scaleprobe.models.laws.lsq`, the same loss
the chosen law is refitted with. Folds chain forward over the distinct values of
``p``: fold ``k`` trains on the ``k`` smallest and tests on every larger one
(:func:`forward_folds`). A law with ``q`` coefficients is only ever fitted on folds
with at least ``q + 1`` distinct values of ``p`` (one degree of freedom left), and
every law is scored on the same folds (:class:`ComboScorer`), so laws of different
sizes compete on equal terms.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
from scipy.stats import f as f_dist
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core.interface import ModelBase, PerformanceModelTags, check_level, fitted_ranges
from ..core.warnings import InsufficientDataWarning, quiet, warn
from . import design as _design
from . import envelope as _envelope
from .scaling_law import ScalingLaw, search_alpha
from .terms import Term, parse_term, term_cost

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


class PMNFSearch(PerformanceModelTags, ModelBase, RegressorMixin, BaseEstimator):
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
       terms (:func:`~scaleprobe.models.laws.pmnf.complexity`), slowest growth.
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
        Multiply every term by the data size ``D`` (as Eq. 3 of Medya et al. 2017).
    bandwidth : bool, default=False
        Multiply the communication terms (those not falling like ``1/p`` or faster;
        never the constant) by ``alpha^(100/bw)``. Laws are scored on every
        bandwidth with ``alpha`` on a grid, then refitted with ``alpha`` optimised.
    tol : float, default=0.1
        Relative part of the near-tie margin.
    ppn, s0, features
        As in :class:`ScalingLaw`.

    family_interval : bool or "both", default=True
        :meth:`predict_interval` spans the plausible laws of the whole family (model
        uncertainty for a law found by search); False keeps to the chosen law's own
        coefficients, in their simultaneous confidence set
        (:func:`~scaleprobe.models.laws.envelope.simultaneous_budget`: the form was
        chosen on the same data), for nearly deterministic series such as traffic
        counts, whose laws a calibration on held-out counts checks instead;
        ``"both"`` spans the two, for a time whose law was chosen on a few counts
        (the traffic model's computation).

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
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> p = np.repeat(2.0 ** np.arange(1, 11), 3)
    >>> y = 50 / p + 3 / np.sqrt(p)
    >>> sorted(PMNFSearch().fit(p.reshape(-1, 1), y).terms_)
    ['1/p', '1/sqrt(p)']
    """

    interval_method = "consistent-range"

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
        if self.family_interval not in (True, False, "both"):
            raise ValueError(
                "family_interval must be True, False or 'both'; got "
                f"{self.family_interval!r}"
            )

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
        var, yv, weights = self._training_variables(X, y, sample_weight)
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
        self.noise_, self.noise_dof_ = self._noise(law, table)
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def _training_variables(self, X, y, sample_weight):
        """The law's variables, the targets and the weights of the rows to fit (a
        zero weight removes its row)."""
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
        return var, yv, weights

    def _noise(self, law, table):
        """The relative noise the intervals assume, and its degrees of freedom: the
        replicates' scatter pooled with the law's residuals at the centres."""
        configs = {
            k: table[k].to_numpy() for k in ("p", "D", "bandwidth") if k in table
        }
        fitted = law.predict(self._frame(configs).to_numpy())
        residual = (table["y"] - fitted) / table["y"]
        loss = float(np.sum(table["n"] * residual**2))
        dof = len(table) - len(law.terms_) - (law.alpha_ is not None)
        replicate, replicate_dof = _envelope.replicate_noise_dof(table)
        return _envelope.noise_level(replicate, loss, dof, replicate_dof)

    def _two_points(self, table):
        warn(
            f"only 2 distinct values of {self.parameter!r}: no scaling law can be "
            "selected or checked against a held-out point; using the power law "
            f"through the two (measure a third {self.parameter.rstrip('s')} count to "
            "know more)",
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
        check_level(level)
        table = self.training_
        prediction = self.best_estimator_.predict(array)
        bandwidth = bool(self.bandwidth) and "bandwidth" in table
        ranges = []
        if self.family_interval in (False, "both"):
            limit = _envelope.simultaneous_budget(
                self.noise_, len(table), level, self.noise_dof_
            )
            ranges.append(
                _envelope.own_range(
                    table,
                    var,
                    prediction,
                    limit,
                    own=self.terms_,
                    bandwidth=bandwidth,
                    alpha=self.alpha_,
                )
            )
        if self.family_interval in (True, "both"):
            ranges.append(
                _envelope.family_range(
                    table,
                    var,
                    prediction,
                    _envelope.budget(self.noise_, level, self.noise_dof_),
                    own=self.terms_,
                    data=bool(self.data),
                    bandwidth=bandwidth,
                    alpha=self.alpha_,
                )
            )
        return (
            np.minimum.reduce([low for low, _ in ranges]),
            np.maximum.reduce([high for _, high in ranges]),
        )

    @property
    def frame_defaults(self):
        """The search's own ``ppn`` (None: ``p`` is the parameter's) and ``s0``."""
        return {"ppn": self.ppn, "s0": self.s0}

    def describe(self):
        """The chosen law as text (see :meth:`ScalingLaw.describe`).

        Returns
        -------
        str
        """
        check_is_fitted(self)
        return self.best_estimator_.describe()

    def crossover_nodes(self, **kwargs):
        """Smallest node count where communication >= computation.

        See :func:`scaleprobe.models.crossover_nodes` for the keyword arguments.
        """
        from ..projection.derived import crossover_nodes

        return crossover_nodes(self, **kwargs)


# ------------------------------------------------------------------ the search

#: Held-out errors a law may show and still be explained by the noise (quantile).
_ACCEPT = 0.99

#: Values of ``alpha`` the search tries for every law with a bandwidth factor; the
#: best ``_REFINED`` laws of each size are then scored at their own fitted alpha.
_SEARCH_ALPHAS = np.linspace(1.0, 3.0, 9)
_REFINED = 30
_PAIRS_EXTENDED = 20


def search(settings, table):
    """The law :class:`~scaleprobe.models.laws.pmnf.PMNFSearch` selects on ``table``.

    Parameters
    ----------
    settings : PMNFSearch
        The estimator whose parameters (``max_terms``, ``constant``, ``exponents``,
        ``log_exponents``, ``data``, ``falling``, ``bandwidth``, ``tol``) shape the
        search.
    table : DataFrame
        Configuration centres (``p``, ``y``, ``n`` and optionally ``D`` and
        ``bandwidth``), as :func:`scaleprobe.models.laws.envelope.training_table` gives.

    Returns
    -------
    terms : list of Term
        The selected law's terms.
    scores : DataFrame
        The selected law first, then the best-scored others: their terms, held-out
        error, share of folds the noise explains, and coefficient count.
    cap : int
        The most coefficients a law could have on these process counts.

    Raises
    ------
    ValueError
        When no law of the normal form extrapolates the data with positive
        coefficients.
    """
    p = table["p"].to_numpy(dtype=float)
    n = table["n"].to_numpy(dtype=float)
    replicate, replicate_dof = _envelope.replicate_noise_dof(table)
    wanted = int(settings.max_terms) + bool(settings.constant)
    cap = max(1, min(wanted, np.unique(p).size - 2))
    candidates, allowed = _candidates(settings, table, replicate)
    var = {
        k: table[k].to_numpy(dtype=float) for k in ("p", "D", "bandwidth") if k in table
    }
    sigma = max(replicate, _envelope.NOISE_FLOOR) if np.isfinite(replicate) else np.nan
    scores = _LawScores(
        settings, (candidates, allowed), var, table, cap, (sigma, replicate_dof)
    )
    alphas = _SEARCH_ALPHAS if settings.bandwidth and "bandwidth" in var else [None]
    for alpha in alphas:
        scores.at(alpha)
    if alphas[0] is not None and scores.errors:
        scores.refine_alphas()
    finite = {c: e for c, e in scores.errors.items() if np.isfinite(e)}
    if not finite:
        raise ValueError(
            "no scaling law of the normal form extrapolates these data with "
            "positive coefficients"
        )
    pick = _pick(finite, scores.chis, candidates, (sigma, n), settings.tol)
    ranked = sorted(finite, key=finite.get)[:20]
    rows = [pick] + [c for c in ranked if c != pick]
    table_scores = pd.DataFrame(
        {
            "terms": [" + ".join(candidates[i].name for i in c) for c in rows],
            "score": [finite[c] for c in rows],
            "explained": [scores.chis[c] for c in rows],
            "coefficients": [len(c) for c in rows],
        }
    )
    return [candidates[i] for i in pick], table_scores, cap


def _candidates(settings, table, replicate):
    """The candidate terms of the search and the indices of those it may use
    (terms falling with ``p`` only where the data fall somewhere)."""
    candidates = candidate_terms(
        settings.exponents, settings.log_exponents, settings.data
    )
    if settings.falling is not None:
        names = {parse_term(t).name for t in settings.falling}
        candidates = [
            t
            for t in candidates
            if t.p_exponent >= 0 or t.name.replace("D*", "") in names or t.name in names
        ]
    if not settings.constant:
        candidates = candidates[1:]  # the constant comes first
    groups = [c for c in ("D", "bandwidth") if c in table]
    falls = any(
        data_decrease(
            g["p"].to_numpy(float),
            g["y"].to_numpy(float),
            g["n"].to_numpy(float),
            replicate,
        )
        for _, g in (table.groupby(groups) if groups else [(None, table)])
    )
    return candidates, usable_terms(candidates, falls)


def _pick(finite, chis, candidates, noise, tol):
    """The law the search selects: the simplest of those whose held-out errors the
    noise explains in most folds, else the simplest within a margin of the best."""
    sigma, n = noise

    def key(combo):
        return (complexity([candidates[i] for i in combo]), finite[combo])

    accepted = [c for c in finite if chis[c] >= 0.5] if np.isfinite(sigma) else []
    if accepted:
        return min(accepted, key=key)
    best = min(finite.values())
    spread = sigma if np.isfinite(sigma) else 0.01
    margin = max(float(tol) * best, spread / math.sqrt(np.median(n)))
    return min((c for c, e in finite.items() if e <= best + margin), key=key)


class _LawScores:
    """The held-out error of every law scored, and the share of folds whose errors
    the noise explains, each at the law's best ``alpha``.

    Parameters
    ----------
    settings : PMNFSearch
    terms : tuple of (list of Term, list of int)
        The candidate terms and the indices of those the search may use.
    var : dict of str to ndarray
        ``p`` (and ``D``, ``bandwidth``) of the configurations.
    table : DataFrame
        The configuration centres (``y``, ``n``).
    cap : int
        The most coefficients a law may have.
    noise : tuple of (float, float)
        The noise ``sigma`` the acceptance assumes and its degrees of freedom.
    """

    def __init__(self, settings, terms, var, table, cap, noise):
        self.settings = settings
        self.candidates, self.allowed = terms
        self.var, self.cap = var, cap
        self.y = table["y"].to_numpy(dtype=float)
        self.n = table["n"].to_numpy(dtype=float)
        self.sigma, self.dof = noise
        self.folds = forward_folds(var["p"], cap + 1)
        self.errors, self.chis = {}, {}

    def _design(self, alpha):
        terms = [with_alpha(t) if alpha is not None else t for t in self.candidates]
        var = self.var
        with np.errstate(all="ignore"):
            return np.column_stack(
                [
                    t.evaluate(var["p"], var.get("D"), var.get("bandwidth"), alpha)
                    for t in terms
                ]
            )

    def _combos(self, size, finite, given, seeds):
        """The combinations of ``size`` terms to score (``given`` when given)."""
        if given is not None:
            combos = given.get(size, np.empty((0, size), np.int64))
            combos = combos[np.all(finite[combos], axis=1)] if combos.size else combos
        elif size <= 2:
            combos = combinations([i for i in self.allowed if finite[i]], size)
        else:
            usable = [i for i in self.allowed if finite[i]]
            combos = combinations(usable, size, seeds)
        if combos.size and self.settings.constant:
            # At most max_terms terms besides the constant (index 0).
            others = (combos != 0).sum(axis=1)
            combos = combos[others <= int(self.settings.max_terms)]
        return combos

    def at(self, alpha, given=None):
        """Score combinations at one ``alpha`` (every one, or those ``given`` by
        size); keep each one's best."""
        phi = self._design(alpha)
        finite = np.all(np.isfinite(phi), axis=0) & np.all(phi > 0, axis=0)
        scorer = ComboScorer(phi, self.y, self.n, self.folds)
        seeds = None
        for size in range(1, self.cap + 1):
            combos = self._combos(size, finite, given, seeds)
            if combos.size == 0:
                continue
            error = scorer.evaluate(combos, np.nan)[0]
            # Acceptance uses every fold a law can be fitted on: a simple law
            # faces the longer extrapolations too.
            folds = forward_folds(self.var["p"], size + 1)
            _, passed, _ = ComboScorer(phi, self.y, self.n, folds).evaluate(
                combos, self.sigma, dof=self.dof, level=_ACCEPT
            )
            for combo, e, c in zip(map(tuple, combos), error, passed, strict=True):
                if e < self.errors.get(combo, np.inf):
                    self.errors[combo], self.chis[combo] = e, c
            order = np.argsort(error)[:_PAIRS_EXTENDED]
            seeds = [tuple(combos[i]) for i in order if np.isfinite(error[i])]

    def refine_alphas(self):
        """Precise data confine alpha tightly: refit it for the best laws of every
        size (on all configurations, as the final fit will), then score them."""
        refine = {}
        for combo in sorted(self.errors, key=self.errors.get):
            chosen = refine.setdefault(len(combo), [])
            if len(chosen) < _REFINED:
                chosen.append(combo)
        for combos in refine.values():
            for combo in combos:
                terms = [with_alpha(self.candidates[i]) for i in combo]
                alpha = fit_alpha(terms, self.var, self.y, self.n)
                self.at(alpha, {len(combo): np.array([combo], dtype=np.int64)})


def fit_alpha(terms, var, y, weights):
    """Alpha of the relative least-squares fit of ``terms`` on all configurations.

    Parameters
    ----------
    terms : list of Term
    var : dict of str to ndarray
        ``p`` and optionally ``D`` and ``bandwidth``, one value per configuration.
    y : ndarray
    weights : ndarray
        Replicates behind each configuration.

    Returns
    -------
    float
        The base ``alpha`` of the bandwidth factor, in [1, 3].
    """
    return search_alpha(terms, var, y, weights, True, 1.0, 3.0)


def with_alpha(term):
    """``term`` with the bandwidth factor ``alpha^(100/bw)`` whose base the search fits.

    Parameters
    ----------
    term : Term

    Returns
    -------
    Term
        The constant unchanged; any other term multiplied by ``alpha^(100/bw)``.
    """
    if term.p_exponent == 0 and term.log_exponent == 0:
        return term
    return Term(
        term.p_exponent,
        term.log_exponent,
        term.data,
        term.bandwidth or term.is_communication,
    )


# ------------------------------------------- candidate laws, folds and scores


def forward_folds(p, first):
    """Folds ``(train, test)`` training on the ``k >= first`` smallest values of ``p``.

    Parameters
    ----------
    p : ndarray
        Process count of every configuration.
    first : int
        Smallest number of distinct training values.

    Returns
    -------
    list of (ndarray, ndarray)

    Examples
    --------
    >>> import numpy as np
    >>> [(a.tolist(), b.tolist()) for a, b in forward_folds(np.array([1, 2, 4, 8]), 3)]
    [([0, 1, 2], [3])]
    """
    distinct = np.unique(p)
    folds = []
    for k in range(max(int(first), 1), distinct.size):
        limit = distinct[k - 1]
        train = np.flatnonzero(p <= limit)
        test = np.flatnonzero(p > limit)
        folds.append((train, test))
    return folds


def complexity(terms):
    """Sort key of a law's simplicity (smaller is simpler).

    Fewer terms besides the constant first (Extra-P's normal form always offers
    ``c0``); then the summed :func:`term_cost`; then fewer coefficients (a law
    without the constant beats the same law with it); then slower growth
    (``p^i log2(p)^j`` grows by ``i + j / 10``); then simpler exponents.
    """
    constant = [t for t in terms if t.p_exponent == 0 and t.log_exponent == 0]
    growth = sum(
        float(t.p_exponent) + t.log_exponent / 10
        for t in terms
        if t.p_exponent > 0 or (t.p_exponent == 0 and t.log_exponent)
    )
    return (
        len(terms) - len(constant),
        round(sum(term_cost(t) for t in terms), 6),
        len(terms),
        round(growth, 6),
        sum(t.p_exponent.denominator for t in terms),
    )


def usable_terms(candidates, decreasing):
    """Indices of candidate terms allowed for the data.

    Terms falling with ``p`` are allowed only when the data fall somewhere
    (``decreasing``): an increasing series must not emulate a constant with
    ``1/p**k`` terms.
    """
    keep = []
    for i, term in enumerate(candidates):
        falls = term.p_exponent < 0
        if falls and not decreasing:
            continue
        keep.append(i)
    return keep


def data_decrease(p, y, n, noise):
    """Whether the centres fall anywhere by more than twice their noise."""
    order = np.argsort(p, kind="stable")
    logs = np.log(y[order])
    se = noise / np.sqrt(np.maximum(n[order], 1)) if np.isfinite(noise) else 0.01
    se = np.maximum(se, 0.005)
    running_max = np.maximum.accumulate(logs)
    drop = running_max - logs
    margin = 2 * np.sqrt(se**2 + np.max(se) ** 2)
    return bool(np.any(drop > margin))


class ComboScorer:
    """Extrapolation score of many term combinations at once.

    A combination whose weighted least-squares coefficients are all positive has
    them as its non-negative solution; any other combination has a term the
    non-negative fit would switch off, so the smaller law covers it and it scores
    ``inf``. That makes every combination of one size a batched linear solve.

    Parameters
    ----------
    phi : ndarray of shape (m, t)
        Candidate terms evaluated at the configurations.
    y, weights : ndarray of shape (m,)
        Centres and replicate counts.
    folds : list of (train, test)
    """

    def __init__(self, phi, y, weights, folds):
        self.folds = []
        phi = np.asarray(phi, dtype=float)
        root = np.sqrt(np.asarray(weights, dtype=float))
        for train, test in folds:
            A = phi[train] * (root[train] / y[train])[:, None]
            norm = np.linalg.norm(A, axis=0)
            norm[norm == 0] = 1.0
            A = A / norm
            self.folds.append(
                (
                    A.T @ A,
                    A.T @ root[train],
                    phi[test] / norm,
                    y[test],
                    np.asarray(weights, dtype=float)[test],
                )
            )

    def evaluate(self, combos, sigma, dof=np.inf, level=0.9):
        """Extrapolation error and its chi-square against the noise, per combination.

        Parameters
        ----------
        combos : ndarray of shape (c, q)
            Column indices of each combination.
        sigma : float
            Noise of one replicate (standard deviation of log time); NaN skips the
            noise test.
        dof : float, default=inf
            Degrees of freedom behind ``sigma``.
        level : float, default=0.9

        Returns
        -------
        error : ndarray of shape (c,)
            Mean over folds of the mean absolute log error on the test points
            (``inf`` when a fold's fit has a non-positive coefficient).
        passed : ndarray of shape (c,)
            Share of the folds whose held-out errors the noise explains: the squared
            log errors weighed by their full covariance (the measurement noise of
            each test centre plus the prediction's own noise propagated from the
            training centres, correlated between the points one fit predicts) stay
            below the ``level`` quantile of their law. Folds overlap (the largest
            point is tested by all), so a law is judged by the share, not a sum.
        folds : int
        """
        combos = np.asarray(combos, dtype=np.int64)
        error = np.zeros(len(combos))
        passed = np.zeros(len(combos))
        if not self.folds:
            return np.full(len(combos), np.inf), np.zeros(len(combos)), 0
        for gram, rhs, test_phi, test_y, test_n in self.folds:
            G = gram[combos[:, :, None], combos[:, None, :]]
            b = rhs[combos]
            with np.errstate(all="ignore"):
                try:
                    inverse = np.linalg.inv(G)
                except np.linalg.LinAlgError:
                    inverse = np.linalg.pinv(G)
                coef = np.einsum("cij,cj->ci", inverse, b)
                rows = test_phi[:, combos]  # (t, c, q)
                pred = np.einsum("tck,ck->ct", rows, coef)
                log_error = np.log(pred / test_y)
                err = np.mean(np.abs(log_error), axis=1)
                if np.isfinite(sigma):
                    # One fit predicts every test point of the fold, so their errors
                    # are correlated: use their full covariance (relative units).
                    cov = np.einsum("tci,cij,scj->cts", rows, inverse, rows)
                    cov /= pred[:, :, None] * pred[:, None, :]
                    cov += np.eye(test_y.size)[None] / test_n[None, :, None]
                    good = np.all(np.isfinite(cov), axis=(1, 2)) & np.all(
                        np.isfinite(log_error), axis=1
                    )
                    fold_chi = np.full(len(combos), np.inf)
                    if good.any():
                        solved = np.linalg.solve(cov[good], log_error[good][..., None])
                        fold_chi[good] = (
                            np.einsum("ct,ct->c", log_error[good], solved[..., 0])
                            / sigma**2
                        )
                else:
                    fold_chi = np.full(len(combos), np.nan)
            bad = ~np.all(coef > 0, axis=1) | ~np.isfinite(err)
            error += np.where(bad, np.inf, err)
            # Errors the noise explains: the fold's statistic stays below the level
            # quantile of t F(t, dof) (sigma itself is estimated on dof).
            limit = test_y.size * f_dist.ppf(level, test_y.size, max(dof, 1))
            passed += np.where(bad, 0.0, fold_chi <= limit)
        return error / len(self.folds), passed / len(self.folds), len(self.folds)

    def score(self, combos):
        """Mean over folds of the mean absolute log error (see :meth:`evaluate`)."""
        return self.evaluate(combos, np.nan)[0]


def combinations(indices, size, seeds=None):
    """All ``size``-subsets of ``indices``, or the extensions of ``seeds`` by one."""
    if seeds is None:
        return np.array(list(itertools.combinations(indices, size)), dtype=np.int64)
    grown = {
        tuple(sorted((*seed, k))) for seed in seeds for k in indices if k not in seed
    }
    return np.array(sorted(grown), dtype=np.int64).reshape(-1, size)


def candidate_terms(exponents, log_exponents, data):
    """Candidate terms, the constant first.

    Growing terms are ``p^i log2(p)^j`` for every positive ``i`` of ``exponents`` and
    ``j`` of ``log_exponents`` (and ``log2(p)^j`` alone). Falling terms are limited to
    what strong scaling can do: ``p^-i`` with ``0 < i <= 1`` and ``log2(p)/p``. A
    time falling faster than ``1/p`` would be a superlinear speedup, which the search
    does not offer: with few points such terms fit noise and wreck the extrapolation.
    """
    positive = sorted({Fraction(e) for e in exponents} - {0})
    terms = [Term(data=bool(data))]
    terms += [Term(data=bool(data), log_exponent=int(j)) for j in log_exponents if j]
    terms += [
        Term(p_exponent=i, log_exponent=int(j), data=bool(data))
        for i in positive
        for j in log_exponents
    ]
    falling = [i for i in positive if i <= 1]
    terms += [Term(p_exponent=-i, data=bool(data)) for i in falling]
    if 1 in log_exponents:
        terms.append(Term(p_exponent=Fraction(-1), log_exponent=1, data=bool(data)))
    return terms
