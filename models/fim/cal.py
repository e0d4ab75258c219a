"""FiM-Cal: computation time from hardware parameters regressed on the application.

FiM-Cal (Bhimani et al., Section 2.2) learns the hardware parameters utilisation
:math:`U`, total cycles :math:`TC` and stall cycles :math:`SC` as linear functions of
the application parameters (Eq. 11), scales all three by one sensitivity :math:`\alpha`
(Eq. 12) calibrated so that the Markov model of :mod:`scaleprobe.models.fim.markov`
reproduces the measured computation times, and predicts a time for any process count.

Eq. 11 is linear: the cycles per unit of work stay those of the training sizes. When a
program's cost per unit grows with its size (a sort's keys spilling from the caches:
NPB IS on one rank took 0.46, 0.60, 0.83 and 1.00 us per key at 2**16, 2**20, 2**23
and 2**25 keys), a power law of the parameters — Eq. 11 on their logarithms —
extrapolates it, and a linear law does not. ``size_law="cv"`` takes the form that
better predicts the total cycles at the largest training value of a parameter from
the smaller ones, the check scaleprobe's laws pass on node counts, but never a power
law under which the cycles per unit of work fall without bound (total degree below
1): a cost per unit that falls with the size is a fixed cost spread over more work,
the linear law's intercept. K-means' cycles per point on one rank (mean of three runs)
fell from 1430 to 1292 over its training sizes (16K-64K points) and to 1184 at 2M
points; the power law that won the hold-out by 0.049 against 0.057 took them as
points**0.92 and predicted 2M points 15.9 % too fast on average over 1-32 ranks, the
linear law 6.6 %.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from scipy.optimize import minimize_scalar
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core.interface import ModelBase, fitted_ranges
from ..core.warnings import DegenerateFitWarning, InsufficientDataWarning, warn
from .markov import CHAINS
from .processes import (
    PROCESS_LAWS,
    fit_process_law,
    growth,
    keep_laws,
    law_range,
    unseen_growth,
)
from .size import (
    SizeLaw,
    determined_parameters,
    embed,
    evaluate,
    keep,
    regress,
    size_form,
)

__all__ = ["FiMCal"]


_VARIANTS = CHAINS
_SIZE_LAWS = ("cv", "linear", "power")


class FiMCal(ModelBase, RegressorMixin, BaseEstimator):
    r"""FiM-Cal as one estimator: Eq. 11 regression, Eq. 12 calibration, Eq. 1-10.

    ``X`` holds the application parameters (e.g. N, K, I) and, in column
    ``processes``, the process count :math:`t`; ``y`` the measured computation time
    in seconds. ``fit(X, y, hardware=H)`` takes the measured hardware parameters
    ``H[:, 0:3] = (U, TC, SC)`` per point (TC the cycles of the whole computation).
    Without them FiM-Cal derives what it honestly can: :math:`TC = y\,t\,F` (CPU
    time times clock rate), :math:`SC = 0`, :math:`U = 1 - 1/TC`; the published
    model does not depend on :math:`U` or :math:`SC` (its Eq. 9 reduces to
    :math:`1 - (1 - 1/TC)^t`), the synchronized variant does.

    Parameters
    ----------
    frequency : float, default=1e9
        :math:`F`, clock rate in Hz.
    processes : int, default=-1
        Column of ``X`` holding the process count (positive, rounded to the
        nearest integer, at least 1).
    stages : int, default=1
        Stages of the computation (iterations of an iterative kernel).
    variant : {"published", "synchronized"}, default="published"
        Markov model: as published (Eq. 9-10) or with a barrier at every stage.
    alpha : {"optimize", "published"}, default="optimize"
        Calibration of :math:`\alpha`: a bounded 1-D optimiser of the relative RMS
        error, or Algorithm 1's fixed steps of ``epsilon`` (from 1) until the relative
        RMS error drops below ``tau`` or stops falling.
    epsilon : float, default=1e-3
        Step of Algorithm 1.
    tau : float, default=0.01
        Threshold of Algorithm 1.
    size_law : {"cv", "linear", "power"}, default="cv"
        Form of Eq. 11: ``"linear"`` as published; ``"power"``, linear in the
        logarithms of the application parameters and of the hardware parameter
        (:math:`H = e^{\beta_0} \prod_i x_i^{\beta_i}`; a hardware parameter that is
        not positive everywhere, such as an unmeasured SC, stays linear); ``"cv"``,
        for every application parameter with three or more values, both forms are
        fitted without its largest value and predict TC there, and the power law is
        taken only when its mean absolute log error is lower and its total degree
        in TC (the sum of its exponents, fitted on every point) is at least 1,
        and a linear law whose fit on every point puts a training row's TC at or
        below zero is not taken (linear without such a parameter, with a
        parameter value that is not positive, or when neither law passes). With
        two to four application parameters every proper subset of them is
        checked the same way, in both forms, and Eq. 11 keeps the one that
        extrapolates best (all of them unless another is better beyond rounding).
        A subset the held-in rows cannot determine is neither checked nor taken: on
        three sizes of NPB CG, the order and the nonzeros grow together, and the
        power law on both, fitted through them, took the cycles as order**-0.65
        nonzeros**1.08 and predicted class B at half its measured time.
    process_law : {"cv", "constant", "replicated", "contention"}, default="cv"
        How the total cycles grow with the process count
        (:mod:`scaleprobe.models.fim.processes`): ``"constant"``, not at all
        (Eq. 11 as published, fitted on every point); ``"replicated"``, by a part
        every added process repeats; ``"contention"``, with the logarithm of the
        processes. The growth is non-negative and linear in the application
        parameters; the one-process cycles are then Eq. 11 on the points of the
        smallest count. ``"cv"`` holds out the largest training count and takes a
        growth law only when it predicts the cycles there with less than half the
        published law's error, or with an error lower by more than noise explains;
        which growth law, the lower error with every count above the smallest held
        out in turn decides (three process counts needed; with two it keeps the
        published law and warns, :class:`~scaleprobe.models.InsufficientDataWarning`,
        when the cycles of the larger count differ from the smaller's by more than
        10 % and three times the smaller's scatter).
    parameter_names : sequence of str, optional
        Names of the application parameters (the columns of ``X`` but the process
        count, in order), for messages; without them, a frame's column names, else
        ``x0``, ``x1``, ...

    Attributes
    ----------
    coef_ : ndarray of shape (3, ``n_features_in_``)
        :math:`\vec\beta_i` of Eq. 11 for U, TC, SC: intercept, then one coefficient
        per application parameter (the process column excluded); on the logarithms
        where ``forms_`` says ``"power"``.
    forms_ : tuple of str
        Form of Eq. 11 for U, TC, SC.
    size_errors_ : dict
        ``size_law="cv"``: mean absolute log error of TC at the held-out largest
        values, per form, with every application parameter (empty when no check was
        possible).
    size_degrees_ : dict
        ``size_law="cv"``: total degree of TC's power law, per checked set of kept
        parameters (tuple of indices); below 1, the power law is not taken.
    kept_ : tuple of int
        Application parameters (indices, the process column excluded) Eq. 11
        regresses on; the others have zero coefficients. Where the training sizes
        cannot determine a coefficient for each (parameters that grow together),
        the largest subset they determine whose parameters grow most
        (:func:`~scaleprobe.models.fim.size.determined_parameters`), with an
        :class:`~scaleprobe.models.InsufficientDataWarning`.
    size_alternatives_ : tuple of tuple of int
        The other subsets the sizes determine as well (empty when they determine
        every kept parameter): each passes through the training as the one taken
        and predicts other sizes differently, so :meth:`predict_range` spans them
        (in ``law_fits_``, each law's ``alternatives``).
    subset_errors_ : dict
        ``size_law="cv"``: the same error for each checked ``(kept, form)`` of a
        proper subset of the parameters.
    process_law_ : str
        The process law taken.
    process_base_ : float
        The smallest training count, :math:`q_0`.
    growth_ : ndarray of shape (``n_features_in_``,)
        :math:`\gamma` of the growth (intercept, then one per application
        parameter; zeros under ``"constant"``).
    process_errors_ : dict
        ``process_law="cv"``: mean absolute log error of TC at the held-out largest
        count, per law.
    shape_errors_ : dict
        ``process_law="cv"``: the same error averaged over every count above the
        smallest held out in turn, per law; the lower of the growth laws' is taken
        when the cycles grow.
    plausible_laws_ : tuple of str
        The process laws the hold-out cannot reject: the law taken and every law
        whose error at the held-out largest count is within noise of the best one's
        (log 1.1, and three times the scatter of a point's runs); every law from two
        process counts; the law given otherwise. :meth:`predict_range` spans them.
    law_fits_ : dict
        Per plausible law, its fit on every point: ``cycles`` (TC's row of
        ``coef_``), ``form``, ``base``, ``growth`` and ``alpha``
        (:meth:`law_model`), and ``draws``, the ``cycles``, ``form``, ``base`` and
        ``growth`` of its refits on resampled residuals (:meth:`predict_range`).
    alpha_ : float
        Calibrated :math:`\alpha` of Eq. 12.
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> n = np.array([1e6, 2e6, 4e6, 1e6, 2e6, 4e6])
    >>> t = np.array([1, 1, 1, 4, 4, 4])
    >>> seconds = 50 * n / 1e9 / t  # 50 cycles per point, ideal speedup
    >>> model = FiMCal().fit(np.column_stack([n, t]), seconds)
    >>> round(float(model.predict([[8e6, 8]])[0]), 4)
    0.05
    """

    # Model files written before these were kept lack them.
    law_fits_ = None
    plausible_laws_ = ()
    size_alternatives_ = ()

    def __init__(
        self,
        *,
        frequency=1e9,
        processes=-1,
        stages=1,
        variant="published",
        alpha="optimize",
        epsilon=1e-3,
        tau=0.01,
        size_law="cv",
        process_law="cv",
        parameter_names=None,
    ):
        self.frequency = frequency
        self.processes = processes
        self.stages = stages
        self.variant = variant
        self.alpha = alpha
        self.epsilon = epsilon
        self.tau = tau
        self.size_law = size_law
        self.process_law = process_law
        self.parameter_names = parameter_names

    def _check_params(self):
        if self.variant not in _VARIANTS:
            raise ValueError(
                f"variant must be one of {sorted(_VARIANTS)}, got {self.variant!r}"
            )
        if self.size_law not in _SIZE_LAWS:
            raise ValueError(
                f"size_law must be one of {list(_SIZE_LAWS)}, got {self.size_law!r}"
            )
        if self.process_law not in PROCESS_LAWS:
            raise ValueError(
                f"process_law must be one of {list(PROCESS_LAWS)}, "
                f"got {self.process_law!r}"
            )
        if self.alpha not in ALPHA_METHODS:
            raise ValueError(
                f"alpha must be one of {list(ALPHA_METHODS)}, got {self.alpha!r}"
            )
        if not (isinstance(self.frequency, int | float) and self.frequency > 0):
            raise ValueError(f"frequency must be positive, got {self.frequency!r}")

    def _split(self, X):
        column = self.processes % X.shape[1] if X.shape[1] else 0
        if np.any(X[:, column] <= 0):
            raise ValueError(
                f"the process count (column {self.processes}) must be positive, got "
                f"{X[:, column].min()}"
            )
        counts = np.maximum(np.rint(X[:, column]), 1.0)
        design = np.delete(X, column, axis=1)
        return np.column_stack([np.ones(len(X)), design]), counts.astype(int)

    def fit(self, X, y, hardware=None):
        """Regress U, TC, SC on the application parameters and calibrate alpha.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Measured computation time in seconds.
        hardware : array-like of shape (n_samples, 3), optional
            Measured ``(U, TC, SC)`` per point.

        Returns
        -------
        self : FiMCal
        """
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True)
        design, counts = self._split(X)
        if hardware is None:
            total = np.maximum(y * counts * self.frequency, 2.0)
            hardware = np.column_stack([1.0 - 1.0 / total, total, np.zeros_like(y)])
        else:
            hardware = np.asarray(hardware, dtype=float)
            if hardware.shape != (len(y), 3):
                raise ValueError(
                    f"hardware must have shape ({len(y)}, 3) for (U, TC, SC), got "
                    f"{hardware.shape}"
                )
        form, self.kept_ = self.size_law, tuple(range(design.shape[1] - 1))
        self.size_errors_, self.subset_errors_, self.size_degrees_ = {}, {}, {}
        if form == "cv":
            (
                form,
                self.kept_,
                self.size_errors_,
                self.subset_errors_,
                self.size_degrees_,
            ) = size_form(design, hardware)
        self.kept_, self.size_alternatives_ = determined_parameters(
            design, self.kept_, form
        )
        if self.size_alternatives_:
            self._warn_undetermined(design)
        kept = keep(design, self.kept_)
        coef, self.forms_ = regress(kept, hardware, form)

        def size_fit(rows, total):
            return SizeLaw(rows, total, form)

        fitted = fit_process_law(
            kept, counts, hardware[:, 1], self.process_law, size_fit
        )
        law, size, base, gamma, self.process_errors_, self.shape_errors_, others = (
            fitted
        )
        if self.process_law == "cv":
            self._warn_unseen_growth(kept, counts, hardware[:, 1], form)
        # the one-process cycles (under "constant", the same fit as Eq. 11's)
        coef[1] = size.coef
        self.forms_ = (self.forms_[0], size.form, self.forms_[2])
        self.coef_ = embed(coef, self.kept_, design.shape[1])
        taken = self._law_state(size, base, gamma)
        self._set_law(law, taken["growth"], base)
        if not (y > 0).any():
            warn(
                "no positive computation time to calibrate alpha", DegenerateFitWarning
            )
        self.alpha_ = self._calibrate(design, counts, y)
        taken = {law: {**taken, "alpha": self.alpha_}}
        rows, measured = (kept, counts), (hardware[:, 1], design, y)
        self.law_fits_ = keep_laws(self, taken, others, rows, measured, size_fit)
        for law, state in self.law_fits_.items():
            state["alternatives"] = self._alternatives(design, counts, hardware, law)
        self.plausible_laws_ = tuple(k for k in PROCESS_LAWS if k in self.law_fits_)
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def _names(self, kept):
        """Names of the application parameters ``kept`` (indices)."""
        names = self.parameter_names
        columns = getattr(self, "feature_names_in_", None)
        if names is None and columns is not None:
            names = list(np.delete(columns, self.processes % len(columns)))
        return [
            str(names[j]) if names is not None and j < len(names) else f"x{j}"
            for j in kept
        ]

    def size_note(self):
        """What Eq. 11 regresses on where the sizes cannot tell it from other
        parameters, as words to follow a description ("" where they can).

        Returns
        -------
        str
            E.g. ``" on nnz, which the sizes cannot tell from na (the range spans
            both)"``.
        """
        check_is_fitted(self)
        if not self.size_alternatives_:
            return ""
        taken, rest = self._undetermined_words()
        return (
            f" on {taken}, which the sizes cannot tell from {rest} (the range spans "
            "both)"
        )

    def _undetermined_words(self):
        """``(taken, others)``: the parameters regressed on and the alternatives,
        named."""
        taken = " and ".join(self._names(self.kept_))
        others = "; ".join(
            " and ".join(self._names(kept)) for kept in self.size_alternatives_
        )
        return taken, others

    def _warn_undetermined(self, design):
        """Warn that the sizes cannot tell the laws of ``size_alternatives_`` from
        the one taken."""
        taken, others = self._undetermined_words()
        sizes = len(np.unique(design[:, 1:], axis=0))
        warn(
            f"the {sizes} training sizes cannot tell FiM-Cal's cycles in {taken} "
            f"from cycles in {others}: those parameters grow together over them, "
            f"so a law on either passes through every size measured and they part "
            f"beyond; FiM-Cal regresses on {taken} (growing most over them) and "
            "its range spans the others; measure a size off the line the measured "
            "sizes lie on (where those parameters grow apart) to tell them",
            InsufficientDataWarning,
            stacklevel=3,
        )

    def _alternatives(self, design, counts, hardware, law):
        """Under ``law``, the state of each law of the cycles on
        ``size_alternatives_`` (fitted on the same points, with the law's alpha)."""
        states = []
        form = self.forms_[1]
        for kept in self.size_alternatives_:
            fitted = fit_process_law(
                keep(design, kept),
                counts,
                hardware[:, 1],
                law,
                lambda part, total: SizeLaw(part, total, form),
            )
            if fitted[0] == law:
                states.append(self._law_state(*fitted[1:4], kept=kept))
        return states

    def _set_law(self, law, gamma, base):
        self.process_law_, self.growth_, self.process_base_ = law, gamma, base

    def _law_state(self, size, base, gamma, kept=None):
        """What a process law changes: the one-process cycles (TC's row of
        ``coef_`` and its form), :math:`q_0` and the growth, embedded from the
        parameters ``kept`` (default ``kept_``)."""
        kept = self.kept_ if kept is None else kept
        width = self.coef_.shape[1]
        return {
            "cycles": embed(size.coef[None], kept, width)[0],
            "form": size.form,
            "base": float(base),
            "growth": embed(gamma[None], kept, width)[0],
        }

    def _under(self, law, state):
        """A copy of this fit whose cycles grow by ``law`` as ``state`` says."""
        model = copy.copy(self)
        model.coef_ = self.coef_.copy()
        model.coef_[1] = state["cycles"]
        model.forms_ = (self.forms_[0], state["form"], self.forms_[2])
        model._set_law(law, np.array(state["growth"], dtype=float), state["base"])
        model.alpha_ = state["alpha"]
        model.law_fits_ = {law: state}
        model.plausible_laws_ = (law,)
        return model

    def _calibrate(self, design, counts, y):
        """Eq. 12's alpha of the fitted hardware parameters (1 without a positive
        time)."""

        def times(alpha, rows):
            return self._times(design[rows], counts[rows], alpha)

        return calibrate(times, y, self.alpha, self.epsilon, self.tau)

    def law_model(self, law):
        """This fit under another plausible process law.

        Parameters
        ----------
        law : str
            One of ``plausible_laws_``.

        Returns
        -------
        FiMCal
            A fitted copy whose cycles grow by ``law`` (its one-process cycles,
            growth and alpha fitted on the same points), with that law alone
            plausible.
        """
        check_is_fitted(self)
        fits = self.law_fits_
        if not fits and law == self.process_law_:
            return self  # a fit from before the laws were kept: the law taken alone
        if law not in (fits or {}):
            raise ValueError(
                f"law must be one of the plausible laws "
                f"{sorted(fits or [self.process_law_])}, got {law!r}"
            )
        return self._under(law, fits[law])

    def predict_range(self, X, level=0.9, cycles=False):
        """Lowest and highest computation time over the plausible process laws and
        their coefficients' spread, s.

        Under each law, the central ``level`` of its refits on resampled residuals
        (:func:`~scaleprobe.models.fim.processes.law_draws`), its point fit and its
        fits on ``size_alternatives_``; the range is their union over the laws.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        level : float, default=0.9
            Central fraction of each law's refits spanned.
        cycles : bool, default=False
            The total cycles ``TC`` (Eq. 12) instead of the time.

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
            Equal to :meth:`predict` when one law is plausible (a law given, or
            ``"cv"`` rejecting the others) and its refits do not move it (a fit
            from before refits were kept).
        """
        check_is_fitted(self)
        if not 0 < level < 1:
            raise ValueError(f"level must be in (0, 1); got {level!r}")
        return law_range(self, X, level, cycles)

    @staticmethod
    def _warn_unseen_growth(design, counts, total, form):
        """Warn when two process counts show a change of the total cycles that
        ``"cv"`` cannot hold out a count to check, and the published law ignores."""
        found = unseen_growth(
            design, counts, total, lambda rows, cycles: SizeLaw(rows, cycles, form)
        )
        if found is None:
            return
        low, high, ratio = found
        warn(
            f"the total cycles on {high:g} processes are {abs(ratio - 1):.0%} "
            f"{'above' if ratio > 1 else 'below'} those on {low:g} for the same "
            "sizes: from two process counts FiM-Cal cannot tell whether that change "
            "goes on with more processes (work every process repeats, contention "
            "for memory) or is the noise of these runs, and keeps the published law, "
            "constant in the processes, which does not follow it; measure a third "
            "process count",
            InsufficientDataWarning,
            stacklevel=3,
        )

    def _hardware(self, design, counts, alpha):
        forms = getattr(self, "forms_", ("linear",) * 3)
        u, tc, sc = evaluate(design, self.coef_, forms).T
        tc = tc + growth(
            design, counts, self.process_law_, self.process_base_, self.growth_
        )
        u, tc, sc = alpha * u, alpha * tc, alpha * sc
        tc = np.maximum(tc, 1.0 + 1e-9)
        u = np.clip(u, 0.0, 1.0 - 1.0 / tc)
        sc = np.clip(sc, 0.0, tc * (1.0 - 1e-12))
        return u, tc, sc

    def _times(self, design, counts, alpha):
        model = _VARIANTS[self.variant]
        u, tc, sc = self._hardware(design, counts, alpha)
        if self.variant == "synchronized":
            # each process runs TC / (stages t) cycles, whose chain allows at most
            # U = 1 - stages t / TC (Eq. 2); U = 1 - 1/TC, derived without counters,
            # is beyond it; and each process's share is at least one cycle (a law
            # that puts a training size below zero, under a small trial alpha)
            tc = np.maximum(tc, (1.0 + 1e-9) * self.stages * counts)
            u = np.clip(u, 0.0, np.maximum(1.0 - self.stages * counts / tc, 0.0))
        return np.array(
            [
                model(float(a), float(b), float(c), self.frequency, int(t), self.stages)
                for a, b, c, t in zip(u, tc, sc, counts, strict=True)
            ]
        )

    def predict(self, X):
        """Predicted computation time in seconds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        design, counts = self._split(X)
        return self._times(design, counts, self.alpha_)

    def predict_hardware(self, X):
        """Extrapolated ``(U, TC, SC)`` per row (Eq. 12), as an (n, 3) array."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        design, counts = self._split(X)
        return np.column_stack(self._hardware(design, counts, self.alpha_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.target_tags.positive_only = True
        tags.regressor_tags.poor_score = True
        return tags


# ----------------------------------------------------------------------------
# FiM-Cal's sensitivity alpha (Eq. 12): the scale of the hardware parameters.
#
# FiM-Cal scales the regressed ``U``, ``TC`` and ``SC`` by one :math:`\alpha` so that
# the Markov model reproduces the measured computation times. Algorithm 1 of the
# paper walks from 1 in steps of ``epsilon`` until the relative RMS error drops below
# ``tau`` or stops falling; ``"optimize"`` minimises the same error with a bounded 1-D
# optimiser over :math:`\log\alpha`.


#: How alpha is calibrated: a bounded optimiser, or Algorithm 1 as published.
ALPHA_METHODS = ("optimize", "published")


def calibrate(times, y, method="optimize", epsilon=1e-3, tau=0.01):
    """Eq. 12's alpha: the scale whose modelled times best reproduce ``y``.

    Parameters
    ----------
    times : callable
        ``times(alpha, rows)``: the modelled times of the rows selected by the
        boolean mask ``rows`` under the scale ``alpha``.
    y : ndarray of shape (n,)
        Measured times, s; rows not above zero say nothing of a ratio and are
        left out of the error.
    method : {"optimize", "published"}, default="optimize"
        A bounded 1-D optimiser of the relative RMS error, or Algorithm 1.
    epsilon : float, default=1e-3
        Algorithm 1's step.
    tau : float, default=0.01
        Algorithm 1's threshold.

    Returns
    -------
    float
        1 without a positive time.

    Warns
    -----
    DegenerateFitWarning
        When Algorithm 1 stops with the error above ``tau``.

    Examples
    --------
    >>> y = np.array([2.0, 4.0])
    >>> round(calibrate(lambda a, rows: a * np.array([1.0, 2.0])[rows], y), 6)
    2.0
    """
    positive = y > 0
    if not positive.any():
        return 1.0

    def error(alpha):
        predicted = times(alpha, positive)
        return float(np.sqrt(np.mean((predicted / y[positive] - 1.0) ** 2)))

    if method == "optimize":
        best = minimize_scalar(
            lambda log_a: error(math.exp(log_a)),
            bounds=(-12.0, 12.0),
            method="bounded",
            options={"xatol": 1e-6},
        )
        return math.exp(best.x)
    return _algorithm1(error, times, y, epsilon, tau)


def _algorithm1(error, times, y, epsilon, tau):
    """Algorithm 1: from alpha = 1, steps of ``epsilon`` towards the measured
    times while the error falls, until it is below ``tau``."""
    alpha, current = 1.0, error(1.0)
    predicted = times(1.0, np.ones(len(y), dtype=bool))
    direction = 1.0 if np.mean(y - predicted) > 0 else -1.0
    for _ in range(100_000):
        if current < tau:
            return alpha
        step = alpha + direction * epsilon
        if step <= 0 or error(step) >= current:
            break
        alpha, current = step, error(step)
    warn(
        f"Algorithm 1 stopped at alpha={alpha:.6g} with relative RMS error "
        f"{current:.3g} > tau={tau}",
        DegenerateFitWarning,
    )
    return alpha
