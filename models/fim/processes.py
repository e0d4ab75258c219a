r"""FiM-Cal's process law: how the total cycles of a computation grow with processes.

Eq. 11 regresses the total cycles :math:`TC` on the application parameters alone: the
work is the same on any number of processes, and the Markov model divides it among
them. Measured programs do not divide it so cleanly. Every process repeats some of the
work (the control code of an iteration, the vector a row-block product reads whole),
and processes that share a node's memory slow each other down. Both show in the
training runs as total cycles that grow with the process count at a fixed size.
Pooled over process counts, Eq. 11 averages that growth into the cycles per unit of
work, so its slope is wrong at every count.

A *process law* keeps the one-process cycles :math:`S(x)` (Eq. 11, fitted on the
points of the smallest training count :math:`q_0`) apart from a non-negative growth:

.. math::

    TC(x, q) = S(x) + h(q)\,\Big(\gamma_0 + \sum_i \gamma_i x_i\Big),
    \qquad \gamma \ge 0,

- ``"constant"``: :math:`h = 0`, Eq. 11 as published (fitted on every point);
- ``"replicated"``: :math:`h = q - q_0`, a part every added process repeats, so a
  process's time tends to a constant (Amdahl's serial part);
- ``"contention"``: :math:`h = \log_2 q - \log_2 q_0`, a loss of efficiency that
  grows with the logarithm of the processes (shared memory bandwidth, tree-shaped
  overheads).

``"cv"`` decides in two steps. *Whether* the cycles grow: it holds out the points of
the largest training count, fits each law on the others, and takes a growth law only
when it predicts their total cycles (mean absolute log error) with less than
:data:`CLEARLY_BETTER` times the published law's error, or with an error below it by
more than noise explains (:data:`NOTICED`, and three times the scatter of the runs of
a point about their median): a growth read into noise would multiply the cycles at a
thousand processes, but a published law that misses the largest count by far is no
safer. *Which* growth: the growth law with the lower error averaged over every count
above the smallest held out in turn. Fitted on 1 and 2 processes, the two growth laws
differ only in how far they carry one growth to 4, and one slow run on 2 processes
decides between them; holding out 2 as well (fitted on 1 and 4) shows the shape of
:math:`h` between the counts. (NPB CG, three runs of classes S, W, A on 1, 2, 4 ranks,
one run on 2 ranks 1.7 times its point's others: at 4 ranks the published law's error
0.53, contention 0.27, replicated 0.31; over 2 and 4, replicated 0.21, contention
0.24. Class B's cycles on 32 ranks were 3.2 times the published law's, 1.03 times the
replicated law's.) It needs three process counts; with fewer, ``"constant"``. One
size measured on several counts is enough: its parameters never vary, Eq. 11 of the
smallest count's points is the intercept alone (:func:`determined`), and the growth
is the rest (NPB CG's class S on 1, 2, 4 ranks: per rank 0.045, 0.056, 0.062 s of
computation, the interpreter's work around every one of its 78 collectives an
iteration, which no count divides; under the published law FiM put 8 ranks at a
tenth of the measured 0.086 s, under the part every rank repeats 0.065 s).

The law taken is one answer; :func:`plausible_laws` lists the laws the hold-out
cannot reject, whose error at the largest count lies within noise of the best one's
(all of them from two counts, where nothing can be held out). Fitted on 1, 2 and 4
processes they may agree there and part by a factor of ten at a thousand: a 10 % loss
per doubling of the processes under 6 % noise of the runs is taken as no growth in
most draws, and the range of the laws kept holds it
(:meth:`~scaleprobe.models.FiMCal.predict_range`, ``bench_process_law.py``). Each
law's own coefficients carry the noise too: a small growth fitted from three counts
is anywhere between none and twice its size, which a thousand processes multiply.
:func:`~scaleprobe.models.fim.processes.law_draws` refits a law on resampled
residuals, and the range spans the central part of the refits of every law kept.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.warnings import quiet
from ..laws.lsq import nnls
from .cache import _run_scatter

__all__ = [
    "PROCESS_LAWS",
    "beats",
    "determined",
    "fit_process_law",
    "growth",
    "plausible_laws",
    "unseen_growth",
]


PROCESS_LAWS = ("cv", "constant", "replicated", "contention")
#: A growth law is taken only when its hold-out error is below this fraction of the
#: published law's: extrapolated to a thousand processes, a growth read into noise
#: would multiply the cycles.
CLEARLY_BETTER = 0.5
_TINY = 1e-300
#: A log error of the total cycles within which a process law is not told apart
#: from noise: the growth between two counts :func:`unseen_growth` reports (when also
#: beyond three times the smaller count's scatter about its fit), and how much a
#: growth law must cut the published law's hold-out error when it does not halve it.
NOTICED = math.log(1.1)


def _h(law, counts, base):
    counts = np.asarray(counts, dtype=float)
    if law == "replicated":
        return counts - base
    if law == "contention":
        return np.log2(counts) - np.log2(base)
    return np.zeros_like(counts)


def growth(design, counts, law, base, coef):
    r"""The growth term of the total cycles, per row of ``design`` (``[1, x...]``).

    Parameters
    ----------
    design : ndarray of shape (n, k)
        Intercept and application parameters.
    counts : ndarray of shape (n,)
        Process counts.
    law : str
        One of :data:`PROCESS_LAWS` but ``"cv"``.
    base : float
        :math:`q_0`.
    coef : ndarray of shape (k,)
        :math:`\gamma`.

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> design = np.array([[1.0, 10.0], [1.0, 10.0]])
    >>> growth(design, np.array([1, 4]), "replicated", 1, np.array([2.0, 0.5])).tolist()
    [0.0, 21.0]
    """
    return _h(law, counts, base) * (design @ coef)


def _fit_growth(design, counts, residual, law, base):
    r"""Non-negative :math:`\gamma` of the residual cycles on ``h(q) [1, x]``."""
    rows = counts > base
    basis = _h(law, counts[rows], base)[:, None] * design[rows]
    scale = np.linalg.norm(basis, axis=0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(basis / scale, residual[rows])
    return coef / scale


def determined(rows, design):
    """Whether Eq. 11 fitted on ``rows`` is determined at every row of ``design``:
    the rows span as many directions of the parameters as the design does.

    One size measured on several process counts has parameters that never vary
    (NPB CG's class S: its order and non-zeros are the intercept's multiples);
    Eq. 11 on its rows cannot tell them from the intercept, and need not, since
    every row it is asked about has them too.

    Parameters
    ----------
    rows, design : ndarray of shape (n, k)
        Intercept and application parameters; ``rows`` some of ``design``'s.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> one_size = np.array([[1.0, 1400.0], [1.0, 1400.0]])
    >>> determined(one_size[:1], one_size)
    True
    >>> two_sizes = np.array([[1.0, 1400.0], [1.0, 7000.0]])
    >>> determined(two_sizes[:1], two_sizes)
    False
    """
    if len(rows) == 0:
        return False
    return bool(np.linalg.matrix_rank(rows) >= np.linalg.matrix_rank(design))


def _fit_law(design, counts, total, law, size_fit):
    """``(size_model, base, gamma)`` of one law; None when the rows cannot fit it."""
    base = float(counts.min())
    if law == "constant":
        return size_fit(design, total), base, np.zeros(design.shape[1])
    at_base = counts == base
    if not np.any(counts > base):
        return None
    if not determined(design[at_base], design):
        return None
    size_model = size_fit(design[at_base], total[at_base])
    residual = total - size_model(design)
    return size_model, base, _fit_growth(design, counts, residual, law, base)


def _held_out(design, counts, total, size_fit):
    """Each law's mean absolute log error of the total cycles of the points of each
    count above the smallest, fitted without them (one list per law, by count; a law
    that cannot be fitted without one of them is left out; empty with fewer than
    three counts)."""
    distinct = np.unique(counts)
    if distinct.size < 3:
        return {}
    errors = {}
    for law in PROCESS_LAWS[1:]:
        per_count = []
        for count in distinct[1:]:
            held = counts == count
            fitted = None
            if determined(design[~held], design):
                fitted = _fit_law(
                    design[~held], counts[~held], total[~held], law, size_fit
                )
            if fitted is None:
                break
            size_model, base, gamma = fitted
            predicted = size_model(design[held]) + growth(
                design[held], counts[held], law, base, gamma
            )
            ratio = np.maximum(predicted, _TINY) / np.maximum(total[held], _TINY)
            per_count.append(float(np.mean(np.abs(np.log(ratio)))))
        else:
            errors[law] = per_count
    return errors


def beats(error, reference, scatter):
    """Whether a hold-out ``error`` beats the simpler law's ``reference`` by more
    than noise explains: below :data:`CLEARLY_BETTER` times it, or below it by more
    than :data:`NOTICED` and three times the runs' ``scatter``.

    Parameters
    ----------
    error, reference : float
        Mean absolute log errors at the held-out points.
    scatter : float
        Median absolute log deviation of a point's runs about their median.

    Returns
    -------
    bool

    Examples
    --------
    >>> beats(0.0798, 0.0819, 0.02), beats(0.285, 0.531, 0.02), beats(0.0, 0.01, 0.1)
    (False, True, True)
    """
    halved = error < CLEARLY_BETTER * reference - 1e-9
    return halved or reference - error > max(NOTICED, 3.0 * scatter)


def _take(errors, shape, scatter):
    """The law ``"cv"`` takes: constant unless a growth law beats it clearly at the
    largest count (``errors``), then the growth law of the lower ``shape`` error."""
    if "constant" not in errors:
        return "constant"
    best = min(errors, key=errors.get)
    if best == "constant" or not beats(errors[best], errors["constant"], scatter):
        return "constant"
    grown = [law for law in shape if law != "constant"]
    return min(grown, key=shape.get) if grown else best


def plausible_laws(errors, law, scatter):
    """The process laws the hold-out cannot reject: the law taken, and every law
    whose error at the held-out largest count lies within what noise explains
    (:data:`NOTICED`, and three times the runs' ``scatter``) of the best one's.

    Parameters
    ----------
    errors : dict
        Hold-out error of each law at the largest count (empty: nothing held out).
    law : str
        The law taken.
    scatter : float
        Median absolute log deviation of a point's runs about their median.

    Returns
    -------
    tuple of str
        In the order of :data:`PROCESS_LAWS`; ``(law,)`` without errors.

    Examples
    --------
    >>> plausible_laws({"constant": 0.06, "replicated": 0.05, "contention": 0.3},
    ...                "constant", 0.02)
    ('constant', 'replicated')
    """
    if not errors:
        return (law,)
    bound = min(errors.values()) + max(NOTICED, 3.0 * scatter)
    return tuple(
        k for k in PROCESS_LAWS[1:] if k == law or errors.get(k, math.inf) <= bound
    )


def fit_process_law(design, counts, total, law, size_fit):
    r"""Fit a process law to the total cycles.

    Parameters
    ----------
    design : ndarray of shape (n, k)
        Intercept and the application parameters Eq. 11 keeps.
    counts : ndarray of shape (n,)
        Process counts.
    total : ndarray of shape (n,)
        Measured total cycles.
    law : str
        One of :data:`PROCESS_LAWS`.
    size_fit : callable
        ``size_fit(design, total) -> model``, Eq. 11 on some rows; ``model(design)``
        evaluates it.

    Returns
    -------
    tuple
        ``(law, size_model, base, gamma, errors, shape, plausible)``: the law taken
        (``"cv"`` resolved), Eq. 11 of the one-process cycles, :math:`q_0`,
        :math:`\gamma`; ``"cv"``'s hold-out errors per law at the largest count,
        and averaged over every count above the smallest held out in turn (both
        empty otherwise, or with fewer than three counts); and the laws ``"cv"``
        cannot reject (:func:`plausible_laws`; with two process counts, every law
        the rows can fit, as no count can be held out; a law given, that law).
    """
    errors, shape, plausible = {}, {}, None
    if law == "cv":
        by_count = _held_out(design, counts, total, size_fit)
        errors = {k: v[-1] for k, v in by_count.items()}
        shape = {k: float(np.mean(v)) for k, v in by_count.items()}
        scatter = _run_scatter(np.column_stack([design, counts]), total)
        law = _take(errors, shape, scatter)
        if np.unique(counts).size == 2:
            plausible = PROCESS_LAWS[1:]
        else:
            plausible = plausible_laws(errors, law, scatter)
    fitted = _fit_law(design, counts, total, law, size_fit)
    if fitted is None:
        law = "constant"
        fitted = _fit_law(design, counts, total, law, size_fit)
    if plausible is None or law not in plausible:
        plausible = (law,)
    return (law, *fitted, errors, shape, plausible)


def unseen_growth(design, counts, total, size_fit):
    r"""How much the total cycles change between two process counts, when ``"cv"``
    cannot tell a law from them.

    With two process counts no count can be held out, and ``"cv"`` keeps the
    published law. The cycles of the larger count's points against Eq. 11 fitted on
    the smaller count's tell whether that hides a change: a median log ratio beyond
    :data:`NOTICED` and beyond three times the smaller count's own scatter about its
    fit.

    Parameters
    ----------
    design, counts, total, size_fit
        As :func:`fit_process_law` takes them.

    Returns
    -------
    tuple or None
        ``(q0, q1, ratio)``: the two counts and the median ratio of the cycles at
        ``q1`` to Eq. 11 of ``q0``; None with other than two counts, when the
        smaller count's points cannot determine Eq. 11, or without such a change.

    Examples
    --------
    >>> import numpy as np
    >>> from scaleprobe.models.fim.size import SizeLaw
    >>> design = np.array([[1.0, 1e6], [1.0, 2e6], [1.0, 1e6], [1.0, 2e6]])
    >>> counts = np.array([1, 1, 2, 2])
    >>> total = np.array([1e8, 2e8, 1.25e8, 2.5e8])  # 25 % more cycles on 2
    >>> law = lambda rows, cycles: SizeLaw(rows, cycles, "linear")
    >>> q0, q1, ratio = unseen_growth(design, counts, total, law)
    >>> (q0, q1, round(ratio, 3))
    (1.0, 2.0, 1.25)
    """
    distinct = np.unique(counts)
    if distinct.size != 2:
        return None
    low = counts == distinct[0]
    if not determined(design[low], design):
        return None
    model = size_fit(design[low], total[low])

    def logs(rows):
        predicted = np.maximum(model(design[rows]), _TINY)
        return np.log(np.maximum(total[rows], _TINY) / predicted)

    change = float(np.median(logs(~low)))
    scatter = float(np.median(np.abs(logs(low))))
    if abs(change) <= max(NOTICED, 3.0 * scatter):
        return None
    return float(distinct[0]), float(distinct[1]), math.exp(change)


# ----------------------------------------------------------------------------
# The spread of FiM-Cal's answer: each kept process law refitted on resampled
# residuals, and the range over the laws and their refits.
#
# A process law fitted on 1, 2 and 4 processes (above)
# carries the noise of its coefficients to every count it predicts, and a thousand
# processes multiply a growth's: 15 % noise of the runs leaves a part every process
# repeats of 3 cycles per unit of work (against 80 on one process) anywhere between 0
# and 7, a factor 80 at 1024 processes, where the point fit misses the truth by more
# than 10 % in every draw (``bench_process_law.py``). :func:`law_draws` shows how far
# by a residual bootstrap by configuration, and :func:`law_range` spans, under every
# law the hold-out cannot reject, the central part of its refits and its point fit.


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
    if fitted is None or np.any(total <= 0):
        return []
    resampled = _residual_pool(design, counts, total, law, fitted)
    if resampled is None:
        return []
    centre, spread, deviation, config = resampled
    rng = np.random.default_rng(seed)
    refits = []
    for _ in range(draws):
        drawn = rng.choice(spread, int(config.max()) + 1)[config] + deviation
        refit = _fit_law(design, counts, centre * np.exp(drawn), law, size_fit)
        if refit is not None:
            refits.append(refit)
    return refits


def _residual_pool(design, counts, total, law, fitted):
    """What a residual bootstrap by configuration draws from, or None when nothing
    can be resampled: the centre of every run (the fit, or the run as measured
    where the fit is not positive), the pool of configuration residuals (centred,
    widened for the coefficients, outliers left out), every run's deviation from
    its configuration's mean, and the configuration of every run."""
    size_model, base, gamma = fitted
    predicted = size_model(design) + growth(design, counts, law, base, gamma)
    _, config = np.unique(
        np.column_stack([design, counts]), axis=0, return_inverse=True
    )
    config = config.ravel()
    coefficients = np.linalg.matrix_rank(design) * (1 if law == "constant" else 2)
    n_configs = int(config.max()) + 1
    # where the fit is not positive there is no log residual: the law's misfit
    unfit = np.zeros(n_configs, dtype=bool)
    unfit[config[predicted <= 0]] = True
    if n_configs <= coefficients or unfit.all():
        return None
    fits = ~unfit[config]
    residual = np.zeros(total.shape)
    residual[fits] = np.log(total[fits] / predicted[fits])
    mean = np.bincount(config, residual) / np.bincount(config)
    deviation = residual - mean[config]
    pool = mean[~unfit][typical(mean[~unfit])]
    spread = (pool - pool.mean()) * math.sqrt(n_configs / (n_configs - coefficients))
    # such a configuration's runs stay as measured, moved by the drawn noise alone
    centre = np.where(fits, predicted, total)
    return centre, spread, deviation, config


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
        with quiet(), np.errstate(all="ignore"):
            state["alpha"] = alternative._calibrate(design, counts, y)
        fits[other] = state
    for law, state in fits.items():
        refits = law_draws(kept, counts, total, law, size_fit)
        state["draws"] = [model._law_state(*refit) for refit in refits]
    return fits


def law_range(model, X, level, cycles):
    """Lowest and highest prediction of a fitted FiM-Cal over its plausible process
    laws, each the union of its point fit, the central ``level`` of its refits and
    its laws on the parameters the sizes cannot tell from those taken
    (:meth:`~scaleprobe.models.FiMCal.predict_range`)."""
    fits = model.law_fits_ or {}
    lows, highs = [], []
    tail = (1.0 - level) / 2.0
    for law in model.plausible_laws_ or (model.process_law_,):
        point = model.law_model(law)
        state = fits.get(law, {})
        models = [point] + [
            point._under(law, {**state, **draw}) for draw in state.get("draws", ())
        ]
        if cycles:
            values = np.array([m.predict_hardware(X)[:, 1] for m in models])
        else:
            values = np.array([m.predict(X) for m in models])
        low = np.minimum(values[0], np.quantile(values, tail, axis=0))
        high = np.maximum(values[0], np.quantile(values, 1 - tail, axis=0))
        # laws of the cycles on other parameters the sizes cannot tell apart
        for other in state.get("alternatives", ()):
            alternative = point._under(law, {**state, **other})
            value = (
                alternative.predict_hardware(X)[:, 1]
                if cycles
                else alternative.predict(X)
            )
            low, high = np.minimum(low, value), np.maximum(high, value)
        lows.append(low)
        highs.append(high)
    return np.min(lows, axis=0), np.max(highs, axis=0)
