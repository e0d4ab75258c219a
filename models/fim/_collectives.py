"""FiM's collectives: one FiM-Com per kind a record names, the calls and the data
points per call regressed on the application parameters, and their predictions."""

from __future__ import annotations

import numpy as np

from .regressions import (
    PREFERRED_FORMS,
    _check_forms,
    _count_basis,
    _count_forms,
    _fit_counts,
)

__all__ = ["COLLECTIVE_PATTERNS", "fit_collectives", "kinds", "predict_collectives"]

#: FiM-Com's pattern for each collective kind a record names.
COLLECTIVE_PATTERNS = {
    "scatter": "scatter",
    "scatterv": "scatter",
    "bcast": "broadcast",
    "gather": "gather",
    "gatherv": "gather",
    "reduce": "gather",
    "allgather": "allgather",
    "allgatherv": "allgather",
    "allreduce": "allreduce",
    "alltoall": "alltoall",
    "alltoallv": "alltoall",
}


def kinds(columns):
    """The collective kinds whose time, calls and data points ``columns`` hold."""
    return [
        k
        for k in COLLECTIVE_PATTERNS
        if {f"{k}_time", f"{k}_calls", f"{k}_jobs"} <= set(columns)
    ]


def fit_collectives(X, sizes, make):
    """Fit one FiM-Com per collective kind and regress its counts.

    Parameters
    ----------
    X : DataFrame
        The training records.
    sizes : tuple of ndarray
        ``(x, q, per)``: application parameters, process counts and iterations
        timed, per row.
    make : callable
        ``make(kind, job_bytes) -> FiMCom``, unfitted.

    Returns
    -------
    tuple of dict
        ``(communication, counts, count_forms)`` as :class:`~scaleprobe.models.FiM`
        keeps them.
    """
    x, q, per = sizes
    communication, counts, count_forms = {}, {}, {}
    for kind in kinds(X.columns):
        calls = X[f"{kind}_calls"].to_numpy(float)
        per_call = np.divide(
            X[f"{kind}_jobs"].to_numpy(float),
            calls,
            out=np.zeros(len(X)),
            where=calls > 0,
        )
        called = calls > 0
        job_bytes = 8.0
        if f"{kind}_job_bytes" in X.columns:
            job_bytes = float(np.nanmedian(X[f"{kind}_job_bytes"]))
        seconds = X[f"{kind}_time"].to_numpy(float)[called] / calls[called]
        communication[kind] = make(kind, job_bytes).fit(
            np.column_stack([per_call[called], q[called]]), seconds
        )
        jobs_basis = _count_basis(x, q, True)
        forms = _count_forms(jobs_basis, per_call)
        prefer = PREFERRED_FORMS[COLLECTIVE_PATTERNS[kind]]
        counts[kind] = (
            _fit_counts(_count_basis(x, q, False), calls / per),
            _fit_counts(jobs_basis, per_call, prefer=prefer, forms=forms),
        )
        count_forms[kind] = forms
    return communication, counts, count_forms


def predict_collectives(model, x, q, per, level=None):
    """Time of every collective kind of a fitted :class:`~scaleprobe.models.FiM`,
    s, per row; warns where the forms of its data points part.

    Parameters
    ----------
    model : FiM
    x, q, per : ndarray
        Application parameters, process counts and iterations of the rows.
    level : float, optional
        When given, each kind's confidence interval of FiM-Com's mean over the
        replications at that level instead of the mean.

    Returns
    -------
    dict of str to ndarray
        Or, with ``level``, of ``(lower, upper)``.
    """
    parts = {}
    for kind, com in model.communication_.items():
        calls_coef, jobs_coef = model.counts_[kind]
        calls = per * (_count_basis(x, q, False) @ calls_coef)
        basis = _count_basis(x, q, True)
        jobs = basis @ jobs_coef
        _check_forms(
            kind,
            COLLECTIVE_PATTERNS[kind],
            getattr(model, "count_forms_", {}).get(kind, []),
            (basis, jobs_coef, q),
            getattr(model, "trained_counts_", ()),
            model.parameters_,
        )
        rows = np.column_stack([jobs, q])
        if level is None:
            parts[kind] = calls * com.predict(rows)
        else:
            _, lower, upper = com.predict_interval(rows, level=level)
            parts[kind] = (calls * np.maximum(lower, 0.0), calls * upper)
    return parts
