"""Automatic scaling-law search over the performance model normal form (Extra-P)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _design
from ._pmnf_search import ComboScorer, complexity, reduce_configurations
from ._terms import Term
from .scaling_law import ScalingLaw
from .splitters import ExtrapolationSplit

__all__ = ["PMNF_EXPONENTS", "PMNFSearch"]

#: Extra-P's default exponents i of ``p^i``; the search uses them and their negatives.
_NOISE_FACTOR = 4.0  # near-tie margin, in units of the measurement noise
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


class PMNFSearch(RegressorMixin, BaseEstimator):
    """Find a scaling law ``sum_k C_k p^i_k log2(p)^j_k`` with up to three terms.

    Candidate terms are ``p^i log2(p)^j`` for ``i`` in :data:`PMNF_EXPONENTS` and
    their negatives and ``j`` in ``log_exponents``. Unlike Extra-P's default search,
    combinations of up to ``max_terms`` terms are tried, coefficients are non-negative
    (NNLS), and the winner is chosen by extrapolation cross-validation: the data are
    reduced to the median time per configuration, every one- and two-term combination
    and the best two-term combinations extended by a third term are fitted on the
    small values of ``parameter`` and scored on the larger ones by the mean absolute
    log ratio ``|log(predicted / measured)|``; the fits use relative least squares
    (rows divided by the measurement). Among laws of one size scoring within four
    times the measurement noise of the best, the simplest wins (fewest logarithms,
    then smallest exponent denominators). A model with more terms wins only if it
    beats the best smaller one by more than ``tol`` (relative) and by more than the
    measurement noise (the median ``|log(y / median)|`` of repeated measurements of a
    configuration, at least 0.1 %), so that extra terms do not fit noise.

    Parameters
    ----------
    parameter : {"ranks", "nodes"}, default="ranks"
        The feature column ``p``.
    max_terms : int, default=3
        Largest number of terms (1 to 3).
    log_exponents : sequence of int, default=(0, 1, 2)
    data : bool, default=False
        Multiply every term by the data size ``D`` (as Eq. 3 of seed 000).
    bandwidth : bool, default=False
        Multiply the communication terms (those not falling like ``1/p`` or faster) of
        the chosen law by ``alpha^(100/bw)``. The exponents are searched on the points
        with the highest bandwidth; ``alpha`` is fitted afterwards by
        :class:`ScalingLaw`.
    cv : splitter, default=None
        Splitter applied to the reduced frame; default
        ``ExtrapolationSplit(column=parameter, n_splits=3)``.
    tol : float, default=0.1
        Relative score improvement needed to add a term.
    ppn, s0, features
        As in :class:`ScalingLaw`.

    Attributes
    ----------
    best_estimator_ : ScalingLaw
        The chosen law refitted on all data.
    terms_, coef_, alpha_ : as in ScalingLaw
    search_scores_ : pandas.DataFrame
        Best candidates with their extrapolation score, best first.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> p = np.repeat(2.0 ** np.arange(1, 11), 3)
    >>> y = 50 / p + 3 / np.sqrt(p)
    >>> PMNFSearch().fit(p.reshape(-1, 1), y).terms_
    ('1/p', '1/sqrt(p)')
    """

    def __init__(
        self,
        *,
        parameter="ranks",
        max_terms=3,
        log_exponents=(0, 1, 2),
        data=False,
        bandwidth=False,
        cv=None,
        tol=0.1,
        ppn=None,
        s0=25,
        features=None,
    ):
        self.parameter = parameter
        self.max_terms = max_terms
        self.log_exponents = log_exponents
        self.data = data
        self.bandwidth = bandwidth
        self.cv = cv
        self.tol = tol
        self.ppn = ppn
        self.s0 = s0
        self.features = features

    def _candidates(self):
        exps = sorted({s * Fraction(e) for e in PMNF_EXPONENTS for s in (1, -1)})
        return [
            Term(p_exponent=i, log_exponent=int(j), data=bool(self.data))
            for i in exps
            for j in self.log_exponents
        ]

    def fit(self, X, y):
        """Search the terms, then fit the chosen law on all of ``X, y``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : PMNFSearch
        """
        if self.parameter not in ("ranks", "nodes"):
            raise ValueError(
                f"parameter must be 'ranks' or 'nodes'; got {self.parameter!r}"
            )
        if int(self.max_terms) not in (1, 2, 3):
            raise ValueError(f"max_terms must be 1, 2 or 3; got {self.max_terms!r}")
        probe = [Term(data=bool(self.data), bandwidth=bool(self.bandwidth))]
        Xs, names = _design.select(
            X, _design.needed_columns(probe, self.parameter), self.features, self.s0
        )
        Xv, yv = validate_data(self, Xs, y, dtype=np.float64, y_numeric=True)
        if Xv.shape[0] < 2:
            raise ValueError(
                f"PMNFSearch needs at least 2 samples; got n_samples = {Xv.shape[0]}"
            )
        var = _design.variables(
            Xv,
            names,
            over=self.parameter,
            ppn=self.ppn,
            s0=self.s0,
            whom=type(self).__name__,
        )
        reduced = reduce_configurations(var, yv)
        candidates = self._candidates()
        scores = self._search(candidates, reduced)
        best = scores.iloc[0]
        chosen = [candidates[i] for i in best["index"]]
        if self.bandwidth:
            chosen = [
                Term(t.p_exponent, t.log_exponent, t.data, t.is_communication)
                for t in chosen
            ]
        self.search_scores_ = scores.drop(columns="index")
        law = ScalingLaw(
            terms=[t.name for t in chosen],
            over=self.parameter,
            ppn=self.ppn,
            s0=self.s0,
            features=names,
        ).fit(Xv, yv)
        if 0 < np.count_nonzero(law.coef_) < len(chosen):
            # NNLS switched a term off on the full data: drop it rather than report it
            law.set_params(
                terms=[t for t, c in zip(law.terms_, law.coef_, strict=True) if c > 0]
            ).fit(Xv, yv)
        self.best_estimator_ = law
        self.terms_ = self.best_estimator_.terms_
        self.coef_ = self.best_estimator_.coef_
        self.alpha_ = self.best_estimator_.alpha_
        return self

    def _search(self, candidates, reduced):
        frame = pd.DataFrame({self.parameter: reduced["p"]})
        cv = (
            self.cv
            if self.cv is not None
            else ExtrapolationSplit(column=self.parameter, n_splits=3)
        )
        folds = list(cv.split(frame))
        if not folds:
            folds = [(np.arange(len(frame)), np.arange(len(frame)))]
        with np.errstate(all="ignore"):
            phi = np.column_stack(
                [t.evaluate(reduced["p"], reduced.get("D")) for t in candidates]
            )
        usable = np.all(np.isfinite(phi), axis=0) & np.all(phi >= 0, axis=0)
        index = np.flatnonzero(usable)
        scorer = ComboScorer(phi[:, index], reduced["y"], folds)
        pairs_all = np.array(list(itertools.combinations(range(index.size), 2)))
        best_by_size, rows, pair_scores = {}, [], None
        for size in range(1, int(self.max_terms) + 1):
            if size == 1:
                combos = np.arange(index.size).reshape(-1, 1)
            elif size == 2:
                combos = pairs_all
            else:  # extend the ten best pairs by every other term
                seeds = pairs_all[np.argsort(pair_scores)[:10]]
                combos = np.unique(
                    np.sort(
                        np.array(
                            [
                                (*c, k)
                                for c in seeds
                                for k in range(index.size)
                                if k not in c
                            ]
                        ),
                        axis=1,
                    ),
                    axis=0,
                )
            if combos.size == 0:
                break
            scores_now = scorer.score(combos)
            if size == 2:
                pair_scores = scores_now
            order = np.argsort(scores_now)
            rows += [
                (float(scores_now[i]), tuple(int(index[k]) for k in combos[i]))
                for i in order[:20]
            ]
            # Near-ties (within the noise) go to the simplest law: fewest logarithms,
            # then the smallest exponent denominators.
            margin = max(
                scores_now[order[0]] * self.tol, _NOISE_FACTOR * reduced["noise"], 1e-3
            )
            tied = [i for i in order if scores_now[i] <= scores_now[order[0]] + margin]
            pick = min(
                tied or order[:1],
                key=lambda i: (
                    complexity([candidates[index[k]] for k in combos[i]]),
                    scores_now[i],
                ),
            )
            best_by_size[size] = (
                float(scores_now[pick]),
                tuple(int(index[k]) for k in combos[pick]),
            )
        chosen = best_by_size[1]
        for size in sorted(best_by_size)[1:]:
            gain = chosen[0] - best_by_size[size][0]
            if not np.isfinite(chosen[0]) or (
                gain > chosen[0] * self.tol
                and gain > max(_NOISE_FACTOR * reduced["noise"], 1e-3)
            ):
                chosen = best_by_size[size]
        rows.sort()
        table = pd.DataFrame(
            {
                "terms": [
                    " + ".join(candidates[i].name for i in c) for _, c in rows[:20]
                ],
                "score": [s for s, _ in rows[:20]],
                "index": [c for _, c in rows[:20]],
            }
        )
        top = pd.DataFrame(
            {
                "terms": [" + ".join(candidates[i].name for i in chosen[1])],
                "score": [chosen[0]],
                "index": [chosen[1]],
            }
        )
        return pd.concat(
            [top, table[table["terms"] != top["terms"][0]]], ignore_index=True
        )

    def predict(self, X):
        """Predict with the chosen law (see :meth:`ScalingLaw.predict`)."""
        check_is_fitted(self)
        probe = [Term(data=bool(self.data), bandwidth=bool(self.bandwidth))]
        Xs, _ = _design.select(
            X, _design.needed_columns(probe, self.parameter), self.features, self.s0
        )
        Xv = validate_data(self, Xs, reset=False, dtype=np.float64)
        return self.best_estimator_.predict(Xv)

    def predict_components(self, X):
        """Split predictions into terms (see :meth:`ScalingLaw.predict_components`)."""
        check_is_fitted(self)
        probe = [Term(data=bool(self.data), bandwidth=bool(self.bandwidth))]
        Xs, _ = _design.select(
            X, _design.needed_columns(probe, self.parameter), self.features, self.s0
        )
        Xv = validate_data(self, Xs, reset=False, dtype=np.float64)
        return self.best_estimator_.predict_components(Xv)

    def crossover_nodes(self, **kwargs):
        """Smallest node count where communication >= computation.

        See :func:`scaleprobe.models.crossover_nodes` for the keyword arguments.
        """
        from .derived import crossover_nodes

        return crossover_nodes(self, **kwargs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.regressor_tags.poor_score = True
        return tags
