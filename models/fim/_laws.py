r"""The spread of FiM-Cal's answer: each kept process law refitted on resampled
residuals, and the range over the laws and their refits.

A process law fitted on 1, 2 and 4 processes (:mod:`scaleprobe.models.fim.processes`)
carries the noise of its coefficients to every count it predicts, and a thousand
processes multiply a growth's: 15 % noise of the runs leaves a part every process
repeats of 3 cycles per unit of work (against 80 on one process) anywhere between 0
and 7, a factor 80 at 1024 processes, where the point fit misses the truth by more
than 10 % in every draw (``bench_process_law.py``). :func:`law_draws` shows how far
by a residual bootstrap by configuration, and :func:`law_range` spans, under every
law the hold-out cannot reject, the central part of its refits and its point fit.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .processes import _fit_law, fit_process_law, growth

__all__ = ["DRAWS", "keep_laws", "law_draws", "law_range", "typical"]

#: Refits of a law on resampled residuals that give the spread of its coefficients.
DRAWS = 100
#: Scaled median absolute deviations beyond which a configuration's mean residual is
#: the law's misfit there, not noise, and is not drawn for the others.
OUTLYING = 5.0


def law_draws(design, counts, total, law, size_fit, draws=DRAWS, seed=0):
    r"""Refits of one process law that show how far noise moves its coefficients.

    A law's point fit is its answer at the training counts; carried to a thousand
    processes, its growth :math:`\gamma` carries the training's noise with it (a
    part every added process repeats, 3 cycles per unit of work against 80 on one
    process, is fitted anywhere between 0 and 7 under 15 % noise of the runs). A
    residual bootstrap by configuration shows how far: the log residuals of the
    training configurations about the fit (the mean over a configuration's runs),
    centred and widened by :math:`\sqrt{C / (C - p)}` for the :math:`p` coefficients
    fitted from :math:`C` configurations, are drawn with replacement, one per
    configuration, and every run keeps its own deviation from its configuration's
    mean; each draw is refitted. A configuration whose mean residual lies more
    than :data:`OUTLYING` scaled median absolute deviations from their median is
    the law's misfit there, not the runs' noise, and is not drawn for the others:
    the law is fitted to the cycles themselves and may miss a small size by a large
    factor (NPB CG's class S on one rank, 22x under its runs, where a negative
    intercept carries the larger classes' cost per unit), which moved onto the
    largest size had the refits put class B anywhere from 0 to 43x the point fit.
    Where the fit is not positive at a configuration there is no log residual: it
    is left out of the pool too, and its runs enter every refit as measured, moved
    by the noise drawn for it (without them the refits were dropped and the range
    of CG's class B shrank to its point).

    Parameters
    ----------
    design, counts, total, size_fit
        As :func:`fit_process_law` takes them.
    law : str
        One of :data:`PROCESS_LAWS` but ``"cv"``.
    draws : int, default=DRAWS
    seed : int, default=0
        Seed of the resampling (a fit is reproducible).

    Returns
    -------
    list of tuple
        ``(size_model, base, gamma)`` of every refit; empty when the law cannot be
        fitted, a measured total is not positive, the fit is positive at no
        configuration, or no more configurations than coefficients leave nothing
        to resample.

    Examples
    --------
    >>> import numpy as np
    >>> from scaleprobe.models.fim.size import SizeLaw
    >>> sizes = np.repeat([1e5, 2e5, 4e5], 6)
    >>> counts = np.tile([1, 1, 2, 2, 4, 4], 3)
    >>> design = np.column_stack([np.ones(sizes.size), sizes])
    >>> noise = np.random.default_rng(1).lognormal(0.0, 0.1, sizes.size)
    >>> total = (1e6 + 80.0 * sizes + (counts - 1) * 3.0 * sizes) * noise
    >>> fit = lambda rows, cycles: SizeLaw(rows, cycles, "linear")
    >>> refits = law_draws(design, counts, total, "replicated", fit)
    >>> slopes = [gamma[1] for _, _, gamma in refits]
    >>> len(refits), bool(min(slopes) < 3.0 < max(slopes))
    (100, True)
    """
    fitted = _fit_law(design, counts, total, law, size_fit)
    if fitted is None:
        return []
    size_model, base, gamma = fitted
    predicted = size_model(design) + growth(design, counts, law, base, gamma)
    if np.any(total <= 0):
        return []
    _, config = np.unique(
        np.column_stack([design, counts]), axis=0, return_inverse=True
    )
    config = config.ravel()
    n_configs = int(config.max()) + 1
    # where the fit is not positive there is no log residual: the law's misfit
    unfit = np.zeros(n_configs, dtype=bool)
    unfit[config[predicted <= 0]] = True
    coefficients = design.shape[1] * (1 if law == "constant" else 2)
    if n_configs <= coefficients or unfit.all():
        return []
    fits = ~unfit[config]
    residual = np.zeros(total.shape)
    residual[fits] = np.log(total[fits] / predicted[fits])
    mean = np.bincount(config, residual) / np.bincount(config)
    deviation = residual - mean[config]
    pool = mean[~unfit][typical(mean[~unfit])]
    spread = (pool - pool.mean()) * math.sqrt(n_configs / (n_configs - coefficients))
    # such a configuration's runs stay as measured, moved by the drawn noise alone
    centre = np.where(fits, predicted, total)
    rng = np.random.default_rng(seed)
    refits = []
    for _ in range(draws):
        drawn = rng.choice(spread, n_configs)[config] + deviation
        refit = _fit_law(design, counts, centre * np.exp(drawn), law, size_fit)
        if refit is not None:
            refits.append(refit)
    return refits


def typical(residuals):
    """Which residuals lie within :data:`OUTLYING` scaled median absolute deviations
    of their median (all of them when they do not scatter), as a boolean mask."""
    residuals = np.asarray(residuals, dtype=float)
    centre = np.median(residuals)
    scale = 1.4826 * np.median(np.abs(residuals - centre))
    if scale <= 0:
        return np.ones(residuals.shape, dtype=bool)
    return np.abs(residuals - centre) <= OUTLYING * scale


def keep_laws(model, fits, others, rows, measured, size_fit):
    """Every law a FiM-Cal fit keeps: the law taken (``fits``) and each other
    plausible law the rows can fit, with its own alpha; each with its refits.

    ``rows`` is ``(design Eq. 11 keeps, counts)``, ``measured`` ``(total cycles,
    full design, times)``; returns ``law_fits_``."""
    kept, counts = rows
    total, design, y = measured
    for other in others:
        if other in fits:
            continue
        fitted = fit_process_law(kept, counts, total, other, size_fit)
        if fitted[0] != other:  # the rows cannot fit it
            continue
        state = model._law_state(*fitted[1:4])
        alternative = model._under(other, {**state, "alpha": 1.0})
        # a law the runs cannot reject, not the answer: its calibration's
        # complaints are the law taken's to make
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            state["alpha"] = alternative._calibrate(design, counts, y)
        fits[other] = state
    for law, state in fits.items():
        refits = law_draws(kept, counts, total, law, size_fit)
        state["draws"] = [model._law_state(*refit) for refit in refits]
    return fits


def law_range(model, X, level, cycles):
    """Lowest and highest prediction of a fitted FiM-Cal over its plausible process
    laws, each the union of its point fit and the central ``level`` of its refits
    (:meth:`~scaleprobe.models.FiMCal.predict_range`)."""
    fits = getattr(model, "law_fits_", None) or {}
    lows, highs = [], []
    tail = (1.0 - level) / 2.0
    for law in getattr(model, "plausible_laws_", (model.process_law_,)):
        point = model.law_model(law)
        state = fits.get(law, {})
        models = [point] + [
            point._under(law, {**state, **draw}) for draw in state.get("draws", ())
        ]
        if cycles:
            values = np.array([m.predict_hardware(X)[:, 1] for m in models])
        else:
            values = np.array([m.predict(X) for m in models])
        lows.append(np.minimum(values[0], np.quantile(values, tail, axis=0)))
        highs.append(np.maximum(values[0], np.quantile(values, 1 - tail, axis=0)))
    return np.min(lows, axis=0), np.max(highs, axis=0)
