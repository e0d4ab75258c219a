"""The scaling-law search of :class:`~scaleprobe.models.laws.pmnf.PMNFSearch`: every
combination of normal-form terms scored on forward folds (held-out larger process
counts), with the noise deciding which laws are explained."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from . import envelope as _envelope
from ._law_fit import search_alpha
from ._pmnf_search import (
    ComboScorer,
    candidate_terms,
    combinations,
    complexity,
    data_decrease,
    forward_folds,
    usable_terms,
)
from .terms import Term, parse_term

__all__ = ["fit_alpha", "search", "with_alpha"]

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
    y = table["y"].to_numpy(dtype=float)
    n = table["n"].to_numpy(dtype=float)
    replicate, replicate_dof = _envelope.replicate_noise_dof(table)
    distinct = np.unique(p).size
    wanted = int(settings.max_terms) + bool(settings.constant)
    cap = max(1, min(wanted, distinct - 2))
    folds = forward_folds(p, cap + 1)
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
    allowed = usable_terms(candidates, falls)
    var = {
        k: table[k].to_numpy(dtype=float) for k in ("p", "D", "bandwidth") if k in table
    }
    alphas = _SEARCH_ALPHAS if settings.bandwidth and "bandwidth" in var else [None]
    sigma = max(replicate, _envelope.NOISE_FLOOR) if np.isfinite(replicate) else np.nan
    errors, chis = {}, {}

    def score(alpha, combos_of_size):
        """Score combinations at one alpha; keep each one's best alpha."""
        terms = [with_alpha(t) if alpha is not None else t for t in candidates]
        with np.errstate(all="ignore"):
            phi = np.column_stack(
                [
                    t.evaluate(var["p"], var.get("D"), var.get("bandwidth"), alpha)
                    for t in terms
                ]
            )
        finite = np.all(np.isfinite(phi), axis=0) & np.all(phi > 0, axis=0)
        usable = [i for i in allowed if finite[i]]
        scorer = ComboScorer(phi, y, n, folds)
        seeds = None
        for size in range(1, cap + 1):
            if combos_of_size is not None:
                combos = combos_of_size.get(size, np.empty((0, size), np.int64))
                combos = (
                    combos[np.all(finite[combos], axis=1)] if combos.size else (combos)
                )
            elif size <= 2:
                combos = combinations(usable, size)
            else:
                combos = combinations(usable, size, seeds)
            if combos.size and settings.constant:
                # At most max_terms terms besides the constant (index 0).
                others = (combos != 0).sum(axis=1)
                combos = combos[others <= int(settings.max_terms)]
            if combos.size == 0:
                continue
            error = scorer.evaluate(combos, np.nan)[0]
            # Acceptance uses every fold a law can be fitted on: a simple law
            # faces the longer extrapolations too.
            _, passed, _ = ComboScorer(phi, y, n, forward_folds(p, size + 1)).evaluate(
                combos, sigma, dof=replicate_dof, level=_ACCEPT
            )
            for combo, e, c in zip(map(tuple, combos), error, passed, strict=True):
                if e < errors.get(combo, np.inf):
                    errors[combo], chis[combo] = e, c
            order = np.argsort(error)[:_PAIRS_EXTENDED]
            seeds = [tuple(combos[i]) for i in order if np.isfinite(error[i])]

    for alpha in alphas:
        score(alpha, None)
    if alphas[0] is not None and errors:
        # Precise data confine alpha tightly: refit it for the best laws of every
        # size (on all configurations, as the final fit will), then score them.
        refine = {}
        for combo in sorted(errors, key=errors.get):
            chosen = refine.setdefault(len(combo), [])
            if len(chosen) < _REFINED:
                chosen.append(combo)
        for combos in refine.values():
            for combo in combos:
                terms = [with_alpha(candidates[i]) for i in combo]
                alpha = fit_alpha(terms, var, y, n)
                score(alpha, {len(combo): np.array([combo], dtype=np.int64)})
    finite = {c: e for c, e in errors.items() if np.isfinite(e)}
    if not finite:
        raise ValueError(
            "no scaling law of the normal form extrapolates these data with "
            "positive coefficients"
        )

    def key(combo):
        return (complexity([candidates[i] for i in combo]), finite[combo])

    # Laws whose held-out errors the noise explains in most folds.
    accepted = [c for c in finite if chis[c] >= 0.5] if np.isfinite(sigma) else []
    if accepted:
        # Laws whose held-out errors the noise explains: the simplest wins.
        pick = min(accepted, key=key)
    else:
        best = min(finite.values())
        noise = sigma if np.isfinite(sigma) else 0.01
        margin = max(float(settings.tol) * best, noise / math.sqrt(np.median(n)))
        pick = min((c for c, e in finite.items() if e <= best + margin), key=key)
    ranked = sorted(finite, key=finite.get)[:20]
    rows = [pick] + [c for c in ranked if c != pick]
    table_scores = pd.DataFrame(
        {
            "terms": [" + ".join(candidates[i].name for i in c) for c in rows],
            "score": [finite[c] for c in rows],
            "explained": [chis[c] for c in rows],
            "coefficients": [len(c) for c in rows],
        }
    )
    return [candidates[i] for i in pick], table_scores, cap


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
