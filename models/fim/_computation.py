"""FiM's computation: the mean rank's cycles, the cache's load, the slowest's wait.

:class:`~scaleprobe.models.FiM` sums a computation and its collectives. This module
holds the computation part, fitted per iteration from ``comp_time_iterations`` and
the hardware parameters ``hw_utilisation``, ``hw_total_cycles`` and
``hw_frequency``:

- with the mean rank's computation beside the slowest rank's
  (:data:`MEAN_COMPUTATION`), the cycles are fitted on the mean rank's, and the
  wait for the slowest of ``q`` ranks apart (:mod:`scaleprobe.models.fim.wait`);
- the cycles are FiM-Cal's (:class:`~scaleprobe.models.FiMCal`, Eq. 1-12), or the
  load law of the cache where the training's loads lie on both sides of it and the
  law predicts the held-out largest count better
  (:mod:`scaleprobe.models.fim.cache`);
- a prediction warns where a rank's data leave the side of the cache the training
  measured (:func:`~scaleprobe.models.fim.regressions._check_memory`).
"""

from __future__ import annotations

import numpy as np

from ..core.warnings import InsufficientDataWarning, warn
from .cache import LoadLaw, fit_computation
from .cal import FiMCal
from .regressions import _check_memory, _fit_memory, _projected_loads
from .wait import fit_wait

__all__ = ["MEAN_COMPUTATION", "fit_computation_part", "mean_computation"]

#: The mean rank's computation, summed over the iterations (the slowest rank's is
#: ``comp_time_iterations``).
MEAN_COMPUTATION = "comp_time_iterations_mean"


def _frequency(model, X):
    """FiM's clock rate: given, else the median of ``hw_frequency`` (1 GHz)."""
    if model.frequency is not None:
        return model.frequency
    if "hw_frequency" in X.columns:
        return float(np.nanmedian(X["hw_frequency"]))
    return 1e9


def _hardware(X, per):
    """``(U, TC, SC)`` per iteration of every row, None without finite counters."""
    if not {"hw_utilisation", "hw_total_cycles"} <= set(X.columns):
        return None
    hardware = np.column_stack(
        [X["hw_utilisation"], X["hw_total_cycles"] / per, np.zeros(len(X))]
    )
    return hardware if np.all(np.isfinite(hardware)) else None


def _mean_rank(model, X, x, q):
    """The computation to fit (the mean rank's where every row has it, else the
    slowest rank's) and the wait fitted apart (None without the mean)."""
    computation = X["comp_time_iterations"].to_numpy(float)
    mean = X.get(MEAN_COMPUTATION)
    if model.wait == "none" or mean is None:
        return computation, None
    mean = mean.to_numpy(float)
    known = np.isfinite(mean) & (mean > 0)
    if np.all(known):
        wait = fit_wait(np.column_stack([x, q]), q, computation / mean, mean)
        return mean, wait
    if np.any(known):
        warn(
            f"{int(np.sum(~known))} of {len(known)} training rows lack the "
            f"mean rank's computation ({MEAN_COMPUTATION!r} missing or not "
            "positive, as in records of older kernels): FiM fits the "
            "slowest rank's computation on every row and no wait for the "
            "slowest of q ranks, whose growth beyond the training counts "
            "it then cannot follow; drop or re-measure those rows",
            InsufficientDataWarning,
            stacklevel=4,
        )
    return computation, None


def fit_computation_part(model, X, x, q, per):
    """Fit FiM's computation on a frame of kernel records.

    Parameters
    ----------
    model : FiM
        Its parameters (``frequency``, ``variant``, ``size_law``, ``process_law``,
        ``wait``) say how.
    X : DataFrame
        The training records.
    x : ndarray of shape (n_samples, p)
        Their application parameters (sizes).
    q : ndarray of shape (n_samples,)
        Their process counts.
    per : ndarray of shape (n_samples,)
        Their iterations.

    Returns
    -------
    dict
        FiM's fitted ``wait_``, ``memory_``, ``computation_``, ``cache_errors_``
        and ``load_law_``.

    Warns
    -----
    InsufficientDataWarning
        When only some rows carry the mean rank's computation, and where
        :func:`~scaleprobe.models.fim.cache.fit_computation` says.
    """
    frequency = _frequency(model, X)
    computation, wait = _mean_rank(model, X, x, q)
    memory = _fit_memory(X, x, q)
    fitted, law, errors = fit_computation(
        lambda: FiMCal(
            frequency=frequency,
            variant=model.variant,
            size_law=model.size_law,
            process_law=model.process_law,
        ),
        (np.column_stack([x, q]), computation / per, _hardware(X, per), q),
        memory,
    )
    return {
        "wait_": wait,
        "memory_": memory,
        "computation_": fitted,
        "cache_errors_": errors,
        "load_law_": None if law is None else law.state(),
    }


def mean_computation(model, x, q, ranged=None):
    """Computation time per iteration of rows as fitted (the mean rank's under a
    wait law, else the slowest's).

    Parameters
    ----------
    model : FiM
        Fitted on kernel records.
    x : ndarray of shape (n, p)
        Application parameters (sizes).
    q : ndarray of shape (n,)
        Process counts.
    ranged : float, optional
        A level: ``(lower, upper)`` instead of the time, over FiM-Cal's plausible
        process laws and their refits, or the load law's bounds beyond the
        training's loads (:meth:`~scaleprobe.models.fim.cache.LoadLaw.cost`).

    Returns
    -------
    ndarray of shape (n,), or a tuple of two

    Warns
    -----
    MemoryRegimeWarning
        Where the cache's load leaves the training's side of it.
    """
    memory = getattr(model, "memory_", None)
    _check_memory(memory, x, q)
    if getattr(model, "load_law_", None) is not None:
        law = LoadLaw(**model.load_law_)
        loads = _projected_loads(memory, x, q)
        frequency = model.computation_.frequency
        if ranged:
            return tuple(
                law.seconds(x, q, loads, frequency, bound)
                for bound in ("lower", "upper")
            )
        return law.seconds(x, q, loads, frequency)
    rows = np.column_stack([x, q])
    if ranged:
        return model.computation_.predict_range(rows, level=ranged)
    return model.computation_.predict(rows)
