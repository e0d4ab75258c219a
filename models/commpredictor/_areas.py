"""Terms and robust fit of one area of
:class:`~scaleprobe.models.CommunicationPredictor` (steps 3 and 4 of its
procedure): forward selection of metrics and their pairwise products on held-out
rows, then a Huber M-estimator on the selected terms."""

from __future__ import annotations

import itertools

import numpy as np

from ._robust import huber_fit

__all__ = ["evaluate", "fit_area", "fit_terms", "pearson", "term_column"]


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
