"""Communication time of a point-to-point phase from metrics known ahead of execution.

:class:`CommunicationPredictor` is the predictor of Papadopoulou, Goumas and Koziris:
trained once on a benchmark (``commbench.random_pingpong``), it predicts the
communication time of a program's phase from the descriptive metrics of its pattern
and mapping (:mod:`scaleprobe.kernels.comm.pattern`), without running it.

Procedure (all of it deterministic, so a refit on the same data gives the same model)
    1. Pearson correlation of every metric with the time over all training rows
       (``correlations_``, the paper's variable-selection table).
    2. Areas: Ia (``NT <= node_traffic_threshold`` and ``S <= size_threshold``), Ib
       (``NT <= node_traffic_threshold``, ``S > size_threshold``), II (``NT >
       node_traffic_threshold``); the paper's 128 kB and 4 kB by default. Without
       ``NT`` and ``S`` columns all rows form one area ``"all"``.
    3. Terms per area, in place of the paper's clustering: the ``candidates`` metrics
       most correlated with the time inside the area and their pairwise products;
       forward selection adds the term that most lowers the mean absolute relative
       error of the robust fit on held-out rows (``folds``-fold cross-validation
       with a fixed shuffle; in-sample when the area has fewer than ``2 * folds``
       rows), while it lowers it by at least ``min_gain`` (relative) and there are
       fewer than ``max_terms`` terms.
    4. Robust regression per area: a Huber M-estimator (IRLS, MAD scale) on relative
       residuals ``(t - prediction) / t``, so short and long phases weigh alike and
       outliers (OS noise, a slow allocation) lose their pull.

An area with fewer than ``min_area_samples`` training rows is predicted by the model
of all rows, with a :class:`~scaleprobe.models.DegenerateFitWarning`.

The metrics are the columns given. Besides the paper's 13
(:data:`~scaleprobe.kernels.comm.pattern.METRICS`), ``NTmax``
(:data:`~scaleprobe.kernels.comm.pattern.EXTRA_METRICS`), the inter-node bytes of
the busiest node, may be given: a phase ends when its busiest node has finished, and
a pattern with boundaries (a stencil's inner nodes carry up to 1.7x the mean ``NT``)
loads its nodes less evenly than the benchmark's random pairings (at most 1.33x), so
a model on the mean node traffic alone under-predicts it (by 15-38 % on the stencils
of ``tests/benchmarks/bench_commpredictor.py``, against 0-10 % with ``NTmax`` but
for the few-byte phases of area Ia). ``SWTmax``, the inter-switch bytes of the
busiest switch, may be given too: what a switch's uplinks carry, which neither the
paper's metrics nor ``NTmax`` describe.
"""

from __future__ import annotations

import itertools

import numpy as np
from scaleprobe.kernels.comm.pattern import METRICS
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core.interface import ModelBase
from ..core.warnings import (
    DegenerateFitWarning,
    ExtrapolationWarning,
    PhysicalLimitWarning,
    warn,
)

__all__ = ["AREAS", "CommunicationPredictor"]


#: Huber's tuning constant for 95 % efficiency under normal errors.
HUBER_K = 1.345

#: Area names, in the order of :meth:`CommunicationPredictor.area_of` codes.
AREAS = ("Ia", "Ib", "II")


def _names(estimator, width):
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return [str(name) for name in names]
    return list(METRICS) if width == len(METRICS) else [f"x{i}" for i in range(width)]


class CommunicationPredictor(ModelBase, RegressorMixin, BaseEstimator):
    """Robust per-area regression of communication time on descriptive metrics.

    Parameters
    ----------
    node_traffic_threshold : float, default=131072
        Bytes of node traffic ``NT`` separating areas I and II.
    size_threshold : float, default=4096
        Message size ``S`` (bytes) separating areas Ia and Ib.
    max_terms : int, default=4
        Most terms (besides the intercept) in an area's model.
    candidates : int, default=5
        Metrics most correlated with the time that, with their pairwise products,
        form the candidate terms of an area.
    min_gain : float, default=0.02
        A term is added only if it lowers the mean absolute relative error by at
        least this fraction.
    min_area_samples : int, default=8
    huber_k : float, default=1.345
        Huber tuning constant (in robust standard deviations).
    loss : {"relative", "absolute"}, default="relative"
        Residuals the robust fit and the term selection weigh: ``(t - fit) / t``
        (times must be positive) or ``t - fit``.
    folds : int, default=5
        Cross-validation folds of the term selection.

    Attributes
    ----------
    feature_ranges_ : dict
        ``(min, max)`` of each metric in training; :meth:`predict` warns
        (:class:`~scaleprobe.models.ExtrapolationWarning`) beyond them.
    fitted_ranges_ : dict
        The same ranges, as every model keeps them.
    correlations_ : dict
        Pearson correlation of each metric with the time (nan for constant metrics).
    areas_ : dict
        Per area: ``terms``, ``coef`` (intercept first, on standardised terms),
        ``center``, ``spread``, ``samples``, ``error`` (training mean absolute
        relative error, or mean absolute error with ``loss="absolute"``),
        ``fallback`` (True when the area uses the all-rows model) and ``ranges``
        (``[min, max]`` of each metric over the rows the law was fitted on:
        :meth:`predict` warns, :class:`~scaleprobe.models.ExtrapolationWarning`,
        when a row of the area lies beyond them in a metric of its terms).
    feature_names_ : list of str
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"S": 2.0 ** rng.integers(7, 24, 200),
    ...                   "M": rng.integers(1, 5, 200).astype(float)})
    >>> X["NT"] = X["S"] * X["M"]
    >>> y = 1e-5 + X["NT"] / 1e9
    >>> model = CommunicationPredictor().fit(X, y)
    >>> bool(np.allclose(model.predict(X), y, rtol=1e-3))
    True
    """

    #: The metrics of a phase are checked against their training ranges by
    #: :meth:`predict` itself: its interval is not widened along them.
    calibrates_sizes = False

    def __init__(
        self,
        *,
        node_traffic_threshold=131072.0,
        size_threshold=4096.0,
        max_terms=4,
        candidates=5,
        min_gain=0.02,
        min_area_samples=8,
        huber_k=HUBER_K,
        loss="relative",
        folds=5,
    ):
        self.node_traffic_threshold = node_traffic_threshold
        self.size_threshold = size_threshold
        self.max_terms = max_terms
        self.candidates = candidates
        self.min_gain = min_gain
        self.min_area_samples = min_area_samples
        self.huber_k = huber_k
        self.loss = loss
        self.folds = folds

    def _check_params(self):
        for name in ("node_traffic_threshold", "size_threshold", "min_gain"):
            if not np.isfinite(getattr(self, name)) or getattr(self, name) < 0:
                raise ValueError(
                    f"{name} must be a finite number >= 0, got {getattr(self, name)!r}"
                )
        for name in ("max_terms", "candidates", "min_area_samples", "folds"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.loss not in ("relative", "absolute"):
            raise ValueError(
                f"loss must be 'relative' or 'absolute', got {self.loss!r}"
            )
        if not self.huber_k > 0:
            raise ValueError(f"huber_k must be > 0, got {self.huber_k!r}")

    def area_of(self, X):
        """Area code of each row: index into :data:`AREAS`, or 0 for area ``"all"``.

        Parameters
        ----------
        X : array_like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        return self._areas(X)

    def _areas(self, X):
        names = self.feature_names_
        if "NT" not in names or "S" not in names:
            return np.zeros(X.shape[0], dtype=int)
        traffic = X[:, names.index("NT")]
        size = X[:, names.index("S")]
        return np.where(
            traffic > self.node_traffic_threshold,
            2,
            np.where(size > self.size_threshold, 1, 0),
        )

    def area_names(self, X):
        """Area name (``"Ia"``, ``"Ib"``, ``"II"`` or ``"all"``) of each row."""
        codes = self.area_of(X)
        if "all" in self.areas_:
            return np.array(["all"] * len(codes), dtype=object)
        return np.array(AREAS, dtype=object)[codes]

    def fit(self, X, y):
        """Fit one robust model per area.

        Parameters
        ----------
        X : array_like or DataFrame of shape (n_samples, n_features)
            Descriptive metrics (named columns, or the 13 of ``METRICS`` in order).
        y : array_like of shape (n_samples,)
            Communication time, s.

        Returns
        -------
        self
        """
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True)
        y = np.asarray(y, dtype=float)
        if self.loss == "relative" and np.any(y <= 0):
            raise ValueError(
                f"loss='relative' needs positive communication times, got "
                f"{int(np.sum(y <= 0))} values <= 0 (min {y.min()!r}); use "
                "loss='absolute' for other targets"
            )
        self.feature_names_ = _names(self, X.shape[1])
        self.feature_ranges_ = {
            name: (float(X[:, i].min()), float(X[:, i].max()))
            for i, name in enumerate(self.feature_names_)
        }
        self.fitted_ranges_ = dict(self.feature_ranges_)
        self.correlations_ = {
            name: pearson(X[:, i], y) for i, name in enumerate(self.feature_names_)
        }
        everything = self._fit_area(X, y)
        if "NT" not in self.feature_names_ or "S" not in self.feature_names_:
            warn(
                "no NT and S columns: the predictor fits one area for all rows",
                DegenerateFitWarning,
            )
            self.areas_ = {"all": everything}
            return self
        codes = self._areas(X)
        self.areas_ = {}
        for code, name in enumerate(AREAS):
            rows = codes == code
            if rows.sum() >= self.min_area_samples:
                self.areas_[name] = self._fit_area(X[rows], y[rows])
            else:
                if rows.any():
                    warn(
                        f"area {name} has {int(rows.sum())} training rows (fewer "
                        f"than {self.min_area_samples}): it is predicted by the "
                        "model of all rows",
                        DegenerateFitWarning,
                    )
                self.areas_[name] = {
                    **everything,
                    "samples": int(rows.sum()),
                    "fallback": True,
                }
        return self

    def _fit_area(self, X, y):
        return fit_area(
            X,
            y,
            self.feature_names_,
            relative=self.loss == "relative",
            candidates=self.candidates,
            folds=self.folds,
            max_terms=self.max_terms,
            min_gain=self.min_gain,
            huber_k=self.huber_k,
        )

    def predict(self, X):
        """Predicted communication time of each row, s.

        Parameters
        ----------
        X : array_like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        outside = [
            name
            for i, name in enumerate(self.feature_names_)
            if np.any(X[:, i] < self.feature_ranges_[name][0] * (1 - 1e-9))
            or np.any(X[:, i] > self.feature_ranges_[name][1] * (1 + 1e-9))
        ]
        if outside:
            warn(
                f"{', '.join(outside)} outside the trained range: the benchmark "
                "did not measure such phases, the prediction extrapolates",
                ExtrapolationWarning,
            )
        codes = self._areas(X)
        names = list(self.areas_) if "all" in self.areas_ else list(AREAS)
        prediction = np.empty(X.shape[0])
        for code, name in enumerate(names):
            rows = codes == code
            if not rows.any():
                continue
            prediction[rows] = evaluate(self.areas_[name], X[rows], self.feature_names_)
            self._warn_area_range(name, X[rows])
        if np.any(prediction <= 0):
            warn(
                f"{int(np.sum(prediction <= 0))} predicted communication times are "
                "not positive: these metrics lie outside what the training "
                "benchmark covered",
                PhysicalLimitWarning,
            )
        return prediction

    def beyond_area(self, X):
        """Whether each row lies beyond its own area's training rows.

        A row is beyond when, in a metric of its area's law, it lies outside the
        ``[min, max]`` of the rows that law was fitted on (:meth:`predict` then
        warns). Models saved before areas recorded their ranges say False.

        Parameters
        ----------
        X : array_like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of bool
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        codes = self._areas(X)
        names = list(self.areas_) if "all" in self.areas_ else list(AREAS)
        beyond = np.zeros(X.shape[0], dtype=bool)
        for code, name in enumerate(names):
            rows = codes == code
            for outside in self._outside(self.areas_[name], X[rows]).values():
                beyond[rows] |= outside
        return beyond

    def _outside(self, area, X):
        """Per metric of the area's law: the rows outside its training rows' range."""
        ranges = area.get("ranges")  # model files written before ranges lack them
        if not ranges:
            return {}
        used = dict.fromkeys(part for term in area["terms"] for part in term.split("*"))
        outside = {}
        for metric in used:
            low, high = ranges[metric]
            values = X[:, self.feature_names_.index(metric)]
            outside[metric] = (values < low * (1 - 1e-9)) | (values > high * (1 + 1e-9))
        return outside

    def _warn_area_range(self, name, X):
        area = self.areas_[name]
        parts = []
        for metric, outside in self._outside(area, X).items():
            if outside.any():
                low, high = area["ranges"][metric]
                values = X[:, self.feature_names_.index(metric)]
                span = f"{values.min():.4g}" + (
                    f"..{values.max():.4g}" if np.ptp(values) else ""
                )
                parts.append(f"{metric} {span} (trained {low:.4g}..{high:.4g})")
        if parts:
            rows = (
                "the training rows of all areas"
                if area["fallback"] or name == "all"
                else f"its {area['samples']} training rows"
            )
            warn(
                f"area {name}: {'; '.join(parts)} lie beyond {rows}: its law "
                f"t ~ {' + '.join(['1', *area['terms']])} extrapolates",
                ExtrapolationWarning,
            )

    def describe(self):
        """Every area's law and training error, ``" | "`` between areas.

        Returns
        -------
        str
        """
        check_is_fitted(self)
        lines = []
        for name, area in self.areas_.items():
            terms = " + ".join(["1", *area["terms"]])
            note = " (model of all rows)" if area["fallback"] else ""
            lines.append(
                f"area {name}: t ~ {terms}; {area['samples']} rows, mean "
                f"|relative error| {100 * area['error']:.1f} %{note}"
            )
        return " | ".join(lines)


# ----------------------------------------------------------------------------
# Terms and robust fit of one area of
# :class:`~scaleprobe.models.CommunicationPredictor` (steps 3 and 4 of its
# procedure): forward selection of metrics and their pairwise products on held-out
# rows, then a Huber M-estimator on the selected terms.


def term_column(X, names, term):
    """The column of ``term``: a metric, or a product ``"a*b"`` of metrics.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    names : list of str
        The metric of each column of ``X``.
    term : str

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    column = np.ones(X.shape[0])
    for part in term.split("*"):
        column = column * X[:, names.index(part)]
    return column


def fit_terms(X, y, names, scale, terms, huber_k):
    """The robust fit of an intercept and the standardised ``terms``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    names : list of str
    scale : ndarray of shape (n_samples,)
        What each residual is divided by: ``y`` for relative residuals, else ones.
    terms : list of str
    huber_k : float
        The Huber threshold, in robust standard deviations.

    Returns
    -------
    dict
        ``terms``, ``coef``, ``center``, ``spread``, ``samples``, ``error`` (mean
        absolute scaled residual) and ``fallback`` (False).
    """
    columns = np.column_stack(
        [term_column(X, names, t) for t in terms] or [np.empty((len(y), 0))]
    )
    center = columns.mean(axis=0)
    spread = np.where(columns.std(axis=0) > 0, columns.std(axis=0), 1.0)
    design = np.column_stack([np.ones(len(y)), (columns - center) / spread])
    coef, _ = huber_fit(design, y, scale, k=huber_k)
    # the selection criterion: mean |relative error| (or mean |error|)
    error = float(np.mean(np.abs(y - design @ coef) / scale))
    return {
        "terms": list(terms),
        "coef": coef.tolist(),
        "center": center.tolist(),
        "spread": spread.tolist(),
        "samples": len(y),
        "error": error,
        "fallback": False,
    }


def _held_out_error(X, y, names, scale, terms, fold, folds, huber_k):
    errors = np.empty(len(y))
    for k in range(folds):
        test = fold == k
        fit = fit_terms(X[~test], y[~test], names, scale[~test], terms, huber_k)
        errors[test] = np.abs(y[test] - evaluate(fit, X[test], names)) / scale[test]
    return float(np.mean(errors))


def fit_area(X, y, names, *, relative, candidates, folds, max_terms, min_gain, huber_k):
    """Select the terms of one area and fit them.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Communication time, s.
    names : list of str
        The metric of each column of ``X``.
    relative : bool
        Residuals relative to ``y`` (else absolute).
    candidates : int
        Metrics most correlated with the time that enter the pool, with their
        pairwise products.
    folds : int
        Cross-validation folds; the selection is in-sample with fewer than
        ``2 * folds`` rows.
    max_terms : int
    min_gain : float
        Least relative drop of the held-out error for a term to be added.
    huber_k : float

    Returns
    -------
    dict
        What :func:`fit_terms` returns, with ``selection_error`` and ``ranges``
        (each metric's training range).
    """
    scale = y if relative else np.ones(len(y))
    ranked = sorted(
        range(len(names)), key=lambda i: -np.nan_to_num(abs(pearson(X[:, i], y)))
    )
    ranked = [i for i in ranked if np.ptp(X[:, i]) > 0][:candidates]
    pool = [names[i] for i in ranked]
    pool += [f"{a}*{b}" for a, b in itertools.combinations(pool, 2)]
    fold = np.random.default_rng(0).permutation(len(y)) % folds

    def error(terms):
        if len(y) < 2 * folds:
            return fit_terms(X, y, names, scale, terms, huber_k)["error"]
        return _held_out_error(X, y, names, scale, terms, fold, folds, huber_k)

    chosen = []
    best = error(chosen)
    while pool and len(chosen) < max_terms:
        trial, term = min((error([*chosen, t]), t) for t in pool)
        if trial > best * (1.0 - min_gain):
            break
        best = trial
        chosen.append(term)
        pool.remove(term)
    ranges = {
        name: [float(X[:, i].min()), float(X[:, i].max())]
        for i, name in enumerate(names)
    }
    return {
        **fit_terms(X, y, names, scale, chosen, huber_k),
        "selection_error": best,
        "ranges": ranges,
    }


def evaluate(area, X, names):
    """An area's prediction for the rows of ``X``.

    Parameters
    ----------
    area : dict
        What :func:`fit_area` returns (or its JSON round trip).
    X : ndarray of shape (n_samples, n_features)
    names : list of str

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    columns = np.column_stack(
        [term_column(X, names, t) for t in area["terms"]] or [np.empty((X.shape[0], 0))]
    )
    design = np.column_stack(
        [
            np.ones(X.shape[0]),
            (columns - np.asarray(area["center"])) / np.asarray(area["spread"]),
        ]
    )
    return design @ np.asarray(area["coef"])


def pearson(x, y):
    """Pearson's correlation of ``x`` and ``y``; NaN when either is constant.

    Parameters
    ----------
    x, y : ndarray

    Returns
    -------
    float
    """
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


# ----------------------------------------------------------------------------
# Huber M-estimation by iteratively reweighted least squares, on relative residuals.


def huber_fit(design, y, scale, *, k=HUBER_K, ridge=1e-8, iterations=50):
    """Coefficients minimising ``sum huber((y - design @ beta) / scale / sigma)``.

    ``sigma`` is re-estimated every iteration as the normalised median absolute
    deviation of the scaled residuals. Column 0 of ``design`` (the intercept) is not
    penalised by the small ``ridge`` that keeps collinear terms solvable.

    Returns
    -------
    beta : numpy.ndarray
    sigma : float
        Robust scale of the scaled residuals at the solution.
    """
    rows = design / scale[:, None]
    target = y / scale
    penalty = np.full(design.shape[1], ridge)
    penalty[0] = 0.0
    weights = np.ones(len(y))
    beta = np.zeros(design.shape[1])
    sigma = 0.0
    for _ in range(iterations):
        weighted = rows * weights[:, None]
        gram = rows.T @ weighted + np.diag(penalty * max(1.0, np.trace(rows.T @ rows)))
        new = np.linalg.lstsq(gram, weighted.T @ target, rcond=None)[0]
        residual = target - rows @ new
        sigma = float(np.median(np.abs(residual - np.median(residual)))) / 0.6745
        converged = np.allclose(new, beta, rtol=1e-9, atol=1e-12)
        beta = new
        if sigma <= 1e-12 * max(1.0, float(np.abs(target).max())) or converged:
            break
        ratio = np.abs(residual) / (k * sigma)
        weights = np.where(ratio <= 1.0, 1.0, 1.0 / np.maximum(ratio, 1e-300))
    return beta, sigma
