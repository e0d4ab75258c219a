"""FiM: computation by FiM-Cal plus collectives by FiM-Com, one regressor of the time.

Bhimani et al. 2019 (FiM) predict the end-to-end time of an iterative application
as the sum of its parallel computation and its communication, with no overlap
(Section 4).
:class:`FiM` fits both from the records of scaleprobe's iterative kernels
(``iterative.*``, ``npb.*``), which carry per point:

- ``comp_time_iterations`` and the hardware parameters ``hw_utilisation``,
  ``hw_total_cycles``, ``hw_frequency``: the computation, fitted by
  :class:`~scaleprobe.models.FiMCal` (Eq. 1-12); with ``comp_time_iterations_mean``
  (the mean rank's, beside the slowest rank's), FiM-Cal fits the mean rank's and
  the wait for the slowest of ``q`` ranks is fitted apart
  (:mod:`scaleprobe.models.fim.wait`);
- for every collective kind ``k``: ``k_time``, ``k_calls``, ``k_jobs`` (data points)
  and ``k_job_bytes``: one :class:`~scaleprobe.models.FiMCom` per kind is calibrated
  on the time of one call against its data points and process count.

To predict a configuration that was never run, FiM needs the number of calls and the
data points per call there. Like the hardware parameters (Eq. 11), they are regressed
on the application parameters, with non-negative least squares on the forms a
collective's data take: calls on ``1, x_i``; data points on ``1, [q > 1], q - 1,
q(q - 1), x_i, x_i [q > 1], x_i (q - 1)/q, x_i (q - 1)/q**2`` (``q`` the process
count), which hold a broadcast's ``N``, a scatter's ``N (q-1)/q``, a gather of
partial sums ``K (q-1)``, an all-to-all's ``N (q-1)/q**2`` exactly. Of the forms
that reproduce the measured counts, the one with the fewest terms is taken. Counts
measured at a single multi-process count (1 and 2 processes: the fold of an
extrapolation check that holds out 4) are reproduced alike by several (a scatter's
``N/2`` is ``0.5 N [q > 1]``, ``N (q-1)/q`` and ``2 N (q-1)/q**2``): the data points of
the collective's own form are taken
(:data:`~scaleprobe.models.fim.regressions.PREFERRED_FORMS`), and a prediction where
the forms part warns (:class:`~scaleprobe.models.InsufficientDataWarning`).

An iterative kernel's records also say how many iterations were timed
(``stages``). Iterations multiply the computation and the calls of every collective
and change nothing else, so FiM fits both per iteration and multiplies them back:
NPB CG runs 15 iterations in classes S, W, A and 75 in class B, which no regression
on the training classes could learn.

The kernels also record the bytes a rank's iterations touch (``working_set``), the
host's last-level cache (``llc_bytes``) and the most ranks of a host computing at once
(``cache_sharers``: its ranks, or its core slots when fewer). FiM regresses the
working set on the forms a rank's share takes (``1, x_i, x_i/q``); the cache's *load*
is the working sets of the ranks computing at once on it (``min(q, cache_sharers)``
of them). When the training's loads lie on both sides of the cache, the cycles per
unit of work can be read as a function of the load, and the *load law* of
:mod:`scaleprobe.models.fim.cache` predicts the computation when it predicts the
held-out largest process count better than FiM-Cal (NPB IS: class B on 1 to 32 ranks
4.2 and 1.7 % off on average in two measurements, 25-31 % with FiM-Cal). FiM warns
(:class:`~scaleprobe.models.MemoryRegimeWarning`) when a prediction puts the load on
the other side of the cache from every training point: the cycles per unit of work
change there, and the training cannot tell by how much (NPB CG on a host with a 32 MiB
cache: 98 cycles per nonzero and iteration in class A, whose matrix fits, 117 in class
B, whose 165 MB do not); and when training points were out of the cache and a
prediction puts more than twice the largest of their loads on it: further out, a
random access misses the cache more often (how much depends on how much of the cache
the rank really has: on a virtual machine whose cache other tenants may share, NPB
IS's class A took 50-60 ns per key on one rank one day and 72-91 ns another); and when
every training point was in the cache and a prediction fills it more than twice as
much as the fullest: the data still fit, but leave the smaller caches and share the
last level with other data (NPB CG's class W, 6.3 MiB, took 12.3 ns per nonzero and
iteration, class A's 22 MiB 17.8 ns, in a 32 MiB cache).

Without those columns (any other data) FiM is FiM-Cal on the whole time.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core.configs import MEASURED_COLUMNS, REPLICATE_COLUMNS, is_measured
from ..core.interface import ModelBase, PerformanceModelTags, check_level, fitted_ranges
from ..core.warnings import InsufficientDataWarning, quiet, warn
from .cache import LoadLaw, fit_computation
from .cal import FiMCal
from .com import FiMCom
from .processes import typical
from .regressions import (
    PREFERRED_FORMS,
    _calls,
    _calls_basis,
    _check_forms,
    _check_memory,
    _count_basis,
    _count_forms,
    _fit_counts,
    _fit_memory,
    _projected_loads,
)
from .wait import (
    BEYOND,
    TAILS,
    collective_wait,
    fit_collective_wait,
    fit_wait,
    host_cores,
    slowest,
    turn_factor,
)

__all__ = [
    "COLLECTIVE_PATTERNS",
    "MEAN_COMPUTATION",
    "FiM",
    "critical_computation",
    "fim_measurements",
]


#: FiM-Com's pattern of a ``bcast`` for each choice of ``FiM(broadcast=...)``.
_BROADCASTS = {"tree": "tree_broadcast", "queue": "broadcast"}
#: FiM-Com's pattern of an ``allgather`` for each choice of ``FiM(allgather=...)``.
_ALLGATHERS = {"ring": "ring_allgather", "queue": "allgather"}
_NOT_PARAMETERS = ("nodes", "ranks", "ppn", "D", "bandwidth", *REPLICATE_COLUMNS)


def fim_measurements(columns) -> list[str]:
    """The columns of a feature frame that are FiM's measurements, not features.

    Examples
    --------
    >>> fim_measurements(["ranks", "points", "comp_time_iterations", "bcast_time",
    ...                   "bcast_job_bytes", "cp_comp_time"])
    ['comp_time_iterations', 'bcast_time', 'bcast_job_bytes']
    """
    return [c for c in columns if is_measured(c) and str(c) not in MEASURED_COLUMNS]


def _sizes(X, parameters):
    """The parameters' values, ``scale`` as the size it stands for (``2**scale``).

    Eq. 11 and the count forms are linear in the application parameters, which
    holds for a size (points, keys, edges), not for its logarithm.
    """
    columns = [
        2.0 ** X[c].to_numpy(float) if c == "scale" else X[c].to_numpy(float)
        for c in parameters
    ]
    return np.column_stack(columns) if columns else np.empty((len(X), 0))


class FiM(PerformanceModelTags, ModelBase, RegressorMixin, BaseEstimator):
    """FiM-Cal plus FiM-Com: the time of an iterative, multi-stage MPI kernel.

    Parameters
    ----------
    over : {"ranks", "nodes"}, default="ranks"
        Process-count column ``q`` of a DataFrame (arrays: the last column).
    features : sequence of str, default=None
        Application parameters; default every other numeric column but process
        counts, ``ppn``, ``D``, ``bandwidth``, replicates and measurements.
        ``scale`` (log2 of the problem size, as in scaleprobe's sweeps) enters as
        the size ``2**scale``: the regressions are linear in a size.
    frequency : float, default=None
        Clock rate F; default the median of ``hw_frequency`` (1 GHz without it).
    link_bandwidth : float, default=1.25e8
        Bytes/s of the link at 100 %; a ``bandwidth`` column (percent) scales it.
    variant : {"published", "synchronized"}, default="published"
        FiM-Cal's Markov model.
    size_law : {"cv", "linear", "power"}, default="cv"
        FiM-Cal's form of Eq. 11 (``"linear"`` as published); see
        :class:`~scaleprobe.models.FiMCal`.
    process_law : {"cv", "constant", "replicated", "contention"}, default="cv"
        FiM-Cal's growth of the total cycles with the process count; see
        :class:`~scaleprobe.models.FiMCal`.
    broadcast : {"tree", "queue"}, default="tree"
        FiM-Com's model of a ``bcast``: ``"tree"``, the binomial tree of MPI
        libraries and of scaleprobe's emulated communicator (``ceil(log2 q)``
        one-receiver transfers of the whole data), or ``"queue"``, the paper's
        (every data point duplicated to all receivers through one queue, time linear
        in ``q``). See :mod:`scaleprobe.models.fim.queues`.
    allgather : {"ring", "queue"}, default="ring"
        FiM-Com's model of an ``allgather``: ``"ring"``, the ring of MPI libraries
        for long messages and of scaleprobe's emulated communicator (``q - 1``
        rounds in which every rank passes one block to its neighbour; each rank
        receives ``(q - 1)/q`` of the data once), or ``"queue"``, a gather to one
        root followed by the paper's queue broadcast (the root receives and sends
        everything; time linear in ``q``).
    eager_limit : float, default=65536
        FiM-Com's eager limit, bytes: a larger message to one receiver waits for
        the rendezvous handshake (:class:`~scaleprobe.models.FiMCom`).
    wait : {"exponential", "normal", "none"}, default="exponential"
        The wait for the slowest of ``q`` processes (:mod:`scaleprobe.models.
        _fim_wait`), where the frame has the mean rank's computation
        (``comp_time_iterations_mean``): the computation is fitted on the mean
        rank's and multiplied by the expected maximum of ``q`` ranks' times, whose
        spread about the mean has the tail named; ``"none"`` fits the slowest
        rank's computation itself (as without that column, or with it missing or
        not positive on some rows, which warns:
        :class:`~scaleprobe.models.InsufficientDataWarning`).
    iterations : str or None, default="stages"
        Column counting the iterations a point timed: the computation and the calls
        are fitted per iteration and multiplied back (not an application
        parameter). Ignored when the frame lacks it; a frame to predict from may
        lack it when every training point timed the same number.
    replications : int, default=30
        FiM-Com's replications per prediction.
    random_state : int, default=0

    Attributes
    ----------
    mode_ : {"fim", "time"}
        ``"fim"`` with the kernel measurements, else ``"time"`` (FiM-Cal alone).
    computation_ : FiMCal
    communication_ : dict of str to FiMCom
        One per collective kind.
    counts_ : dict of str to tuple of ndarray
        Non-negative coefficients of the calls in a run (per iteration timed and
        once a run: a scatter of the input before the iterations is not repeated
        by them) and of the data points per call.
    count_forms_ : dict of str to list of ndarray
        Every form with the fewest terms that reproduces a kind's measured data
        points per call; ``counts_`` holds the one a collective of that kind takes
        (:data:`~scaleprobe.models.fim.regressions.PREFERRED_FORMS`), and a
        prediction where they part warns
        (:class:`~scaleprobe.models.InsufficientDataWarning`).
    trained_counts_ : ndarray
        The distinct process counts of the training points.
    parameters_ : list of str
    iterations_ : str or None
        The iterations column used, None without one.
    memory_ : dict or None
        Without ``working_set`` and ``llc_bytes``, None; else ``coef`` of the
        working set per rank on ``1, x_i, x_i/q``, ``cache`` (bytes), ``sharers``
        (the most ranks computing at once on one cache; 1 without
        ``cache_sharers``) and ``trained``, the smallest and largest load of the
        cache (working set times sharers) of the training points, and ``loads``,
        that load of every training point.
    cache_errors_ : dict
        When the training's loads of the cache lie on both sides of it: the
        held-out largest count's error (mean absolute log, weighted by time) of
        FiM-Cal (``"none"``) and of the load law (``"load"``: the work times the
        cycles per unit of work at the cache's load,
        :mod:`scaleprobe.models.fim.cache`), fitted on the smaller counts; the
        load law predicts the computation when its error is the lower. Else empty.
    load_law_ : dict or None
        The load law taken: ``work`` (its coefficients on the application
        parameters), ``knots`` (logarithms of the training loads, bytes),
        ``costs`` (logarithms of the cycles per unit of work there),
        ``variant`` (the Markov model of its time, FiM's ``variant``), ``miss``
        and ``cache`` (the hit law beyond the largest training load: what a miss
        costs over a hit per unit of work, and the cache, bytes; 0 and None when
        the cost is held flat there); None when FiM-Cal predicts the computation.
    wait_ : dict or None
        The spread ``s`` of a rank's computation about the mean rank's, per tail
        (``W(q) = 1 + s e(q)``); where a training point ran more ranks than the
        host computed at once (``cache_sharers``), also the host's ``cores`` and
        the growth ``turns`` of a rank's computation per turn on them, per tail,
        and the turn count ``held`` beyond which it is held (the one oversubscribed
        count measured; None where there were more)
        (:mod:`scaleprobe.models.fim.wait`); None when the computation fitted is
        the slowest rank's (``wait="none"``, or no ``comp_time_iterations_mean``).
    service_checks_ : dict of str to dict
        Per collective kind, the Kolmogorov-Smirnov test of FiM-Com's fitted
        service laws against its training rows' measured times
        (:meth:`~scaleprobe.models.FiMCom.goodness_of_fit`).
    trained_iterations_ : ndarray
        Its distinct training values.
    residuals_ : ndarray
        Log ratios of the training configurations' measured times (the median of
        their runs) to FiM's predictions of them; :meth:`predict_interval` widens
        by their root mean square, weighted by ``residual_weights_``, times the
        normal ``level`` quantile.
    residual_weights_ : ndarray
        Those measured times, s: a long run's ratio weighs more than a short
        one's, whose fixed costs a larger size does not keep.
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1e6, 1], [1e6, 2], [2e6, 1], [2e6, 2]])
    >>> FiM().fit(X, X[:, 0] * 1e-7 / X[:, 1]).mode_
    'time'
    """

    interval_method = "consistent-range"
    structural = True
    # Model files written before these were kept lack them.
    memory_ = None
    load_law_ = None
    collective_wait_ = None
    service_checks_ = MappingProxyType({})
    count_forms_ = MappingProxyType({})
    trained_counts_ = ()

    def __init__(
        self,
        *,
        over="ranks",
        features=None,
        frequency=None,
        link_bandwidth=1.25e8,
        variant="published",
        size_law="cv",
        process_law="cv",
        broadcast="tree",
        allgather="ring",
        eager_limit=65536,
        wait="exponential",
        iterations="stages",
        replications=30,
        random_state=0,
    ):
        self.over = over
        self.features = features
        self.frequency = frequency
        self.link_bandwidth = link_bandwidth
        self.variant = variant
        self.size_law = size_law
        self.process_law = process_law
        self.broadcast = broadcast
        self.allgather = allgather
        self.eager_limit = eager_limit
        self.wait = wait
        self.iterations = iterations
        self.replications = replications
        self.random_state = random_state

    def _parameters(self, X):
        if self.features is not None:
            return list(self.features)
        skip = {
            self.over,
            self.iterations,
            *_NOT_PARAMETERS,
            *MEASURED_COLUMNS,
            *fim_measurements(X.columns),
        }
        return [
            c
            for c in X.columns
            if c not in skip and pd.api.types.is_numeric_dtype(X[c])
        ]

    def fit(self, X, y):
        """Fit the computation and every collective.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Measured time, s (used alone in mode ``"time"``).

        Returns
        -------
        self : FiM
        """
        if self.broadcast not in _BROADCASTS:
            raise ValueError(
                f"broadcast must be one of {sorted(_BROADCASTS)}, "
                f"got {self.broadcast!r}"
            )
        if self.allgather not in _ALLGATHERS:
            raise ValueError(
                f"allgather must be one of {sorted(_ALLGATHERS)}, "
                f"got {self.allgather!r}"
            )
        if self.wait not in (*TAILS, "none"):
            raise ValueError(
                f"wait must be one of {[*TAILS, 'none']}, got {self.wait!r}"
            )
        self.wait_ = None
        named = isinstance(X, pd.DataFrame) and "comp_time_iterations" in X.columns
        if not named:
            self._fit_time(X, y)
        else:
            self._fit_records(X, y)
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def _fit_time(self, X, y):
        """Without the kernels' records: FiM-Cal on the whole time."""
        self.mode_ = "time"
        self.parameters_ = None
        self.computation_ = FiMCal(
            frequency=self.frequency or 1e9,
            variant=self.variant,
            size_law=self.size_law,
            process_law=self.process_law,
        )
        self.computation_.fit(X, y)
        self.n_features_in_ = self.computation_.n_features_in_
        self.communication_, self.counts_, self.count_forms_ = {}, {}, {}
        self.service_checks_ = {}
        self.cache_errors_, self.load_law_ = {}, None
        self.residuals_, self.residual_weights_ = log_residuals(self, X, y, X)

    def _fit_records(self, X, y):
        """From the kernels' records: the computation and every collective."""
        if self.over not in X.columns:
            raise ValueError(
                f"FiM needs the process-count column {self.over!r}; "
                f"the frame has {', '.join(map(str, X.columns))}"
            )
        self.mode_ = "fim"
        self.parameters_ = self._parameters(X)
        validate_data(self, X[[self.over, *self.parameters_]], y, y_numeric=True)
        self.iterations_ = self.iterations if self.iterations in X.columns else None
        per = np.ones(len(X))
        if self.iterations_ is not None:
            per = X[self.iterations_].to_numpy(float)
            if not np.all(np.isfinite(per) & (per > 0)):
                raise ValueError(
                    f"the iterations column {self.iterations_!r} must be positive"
                )
        self.trained_iterations_ = np.unique(per)
        q = X[self.over].to_numpy(float)
        x = _sizes(X, self.parameters_)
        fitted = fit_computation_part(self, X, x, q, per, y)
        for name, value in fitted.items():
            setattr(self, name, value)
        link = self.link_bandwidth
        if "bandwidth" in X.columns:
            link = link * float(np.median(X["bandwidth"])) / 100.0
        self.trained_counts_ = np.unique(q)
        (
            self.communication_,
            self.counts_,
            self.count_forms_,
            self.service_checks_,
        ) = fit_collectives(
            X,
            (x, q, per),
            lambda kind, job_bytes: FiMCom(
                pattern=self._pattern(kind),
                job_bytes=job_bytes,
                link_bandwidth=link,
                eager_limit=getattr(self, "eager_limit", 65536),
                replications=self.replications,
                random_state=self.random_state,
            ),
        )
        self.residuals_, self.residual_weights_ = log_residuals(
            self, X, y, np.column_stack([x, q, per])
        )

    def _pattern(self, kind):
        pattern = COLLECTIVE_PATTERNS[kind]
        if pattern == "broadcast":
            return _BROADCASTS[self.broadcast]
        if pattern == "allgather":
            return _ALLGATHERS[self.allgather]
        return pattern

    def _frame(self, X):
        check_is_fitted(self)
        if self.mode_ == "time":
            return None, None, None
        if not isinstance(X, pd.DataFrame):
            raise ValueError("FiM was fitted on a named frame: predict takes one too")
        missing = [c for c in (self.over, *self.parameters_) if c not in X.columns]
        if missing:
            raise ValueError(f"FiM needs the column(s) {missing} to predict")
        data = validate_data(self, X[[self.over, *self.parameters_]], reset=False)
        return _sizes(X, self.parameters_), data[:, 0], self._per_iteration(X)

    def _per_iteration(self, X):
        """Iterations of each row to predict (1 without an iterations column)."""
        if getattr(self, "iterations_", None) is None:
            return np.ones(len(X))
        if self.iterations_ in X.columns:
            return X[self.iterations_].to_numpy(float)
        if len(self.trained_iterations_) == 1:
            return np.full(len(X), float(self.trained_iterations_[0]))
        raise ValueError(
            f"FiM needs the column {self.iterations_!r} to predict: the training "
            f"points timed {self.trained_iterations_.tolist()} iterations"
        )

    def predict_parts(self, X):
        """Predicted computation and time of each collective kind, s.

        Parameters
        ----------
        X : DataFrame or array-like

        Returns
        -------
        dict of str to ndarray
            ``"computation"`` and one entry per collective kind.
        """
        x, q, per = self._frame(X)
        if x is None:
            return {"computation": self.computation_.predict(X)}
        parts = {"computation": per * self._computation(x, q)}
        parts.update(predict_collectives(self, x, q, per))
        parts["computation"] = parts["computation"] + self._collective_wait(x, q, per)
        return parts

    def _collective_wait(self, x, q, per):
        """The wait at every collective of rows (:func:`~scaleprobe.models.fim.
        wait.collective_wait`), s; zeros without one."""
        calls = np.zeros(len(q))
        for kind in self.communication_:
            calls = calls + _calls(self.counts_[kind][0], x, q, per)
        return collective_wait(getattr(self, "collective_wait_", None), calls, q)

    def _computation(self, x, q, ranged=None):
        """Computation time per iteration of rows, the slowest rank's: the mean
        rank's times the wait for the slowest (:func:`~scaleprobe.models.
        _fim_computation.mean_computation`); with
        ``ranged`` a level, ``(lower, upper)`` spanning both tails of the wait."""
        wait = getattr(self, "wait_", None)
        mean = mean_computation(self, x, q, ranged)
        if wait is not None and self.wait in TAILS:  # ranks taking turns on cores
            if ranged:  # from the growth held beyond the turns measured to it grown
                mean = tuple(
                    m * turn_factor(wait, q, self.wait, beyond)
                    for m, beyond in zip(mean, BEYOND, strict=True)
                )
            else:
                mean = mean * turn_factor(wait, q, self.wait)
        return slowest(wait, q, mean, self.wait, bool(ranged))

    def predict_interval(self, X, *, level=0.9):
        """The time's range over the process laws the training cannot reject and
        their coefficients' noise, widened by how far the training's own times lie
        from the fit.

        The computation's part is FiM-Cal's :meth:`~scaleprobe.models.FiMCal.
        predict_range` (under the load law of the cache, a point within the
        training's loads and, beyond, the cost held flat to every access a miss:
        :meth:`~scaleprobe.models.fim.cache.LoadLaw.cost`), every
        collective adds FiM-Com's confidence interval of its mean over the
        replications at ``level``, and the sum is widened by the training
        configurations' spread about FiM (``residuals_``); see
        :mod:`scaleprobe.models.fim.model`. Calibration on held-out node
        counts (:mod:`scaleprobe.models.evaluation.intervals`) widens it further
        with the distance beyond the training counts.

        Parameters
        ----------
        X : DataFrame or array-like
        level : float, default=0.9
            Level of FiM-Com's confidence intervals, of the central part of
            FiM-Cal's refits and of the residuals' band.

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
        """
        check_level(level)
        width = np.exp(
            band(
                getattr(self, "residuals_", None),
                level,
                getattr(self, "residual_weights_", None),
            )
        )
        x, q, per = self._frame(X)
        if x is None:
            low, high = self.computation_.predict_range(X, level=level)
            return low / width, high * width
        low, high = self._computation(x, q, ranged=level)
        waited = self._collective_wait(x, q, per)
        low, high = per * low + waited, per * high + waited
        for lower, upper in predict_collectives(self, x, q, per, level=level).values():
            low, high = low + lower, high + upper
        return low / width, high * width

    def predict(self, X):
        """Predicted time, s: computation plus every collective (no overlap).

        Parameters
        ----------
        X : DataFrame or array-like

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return np.sum(list(self.predict_parts(X).values()), axis=0)

    def predict_components(self, X):
        """Predicted computation, each collective kind and their sum, s.

        Parameters
        ----------
        X : DataFrame or array-like

        Returns
        -------
        pandas.DataFrame
            ``computation``, one column per collective kind and ``communication``
            (their sum); without the kernels' records (mode ``"time"``) the time is
            one ``total`` part.
        """
        check_is_fitted(self)
        if self.mode_ == "time":
            return super().predict_components(X)
        parts = pd.DataFrame(
            {
                name: np.asarray(value, dtype=float)
                for name, value in self.predict_parts(X).items()
            }
        )
        parts["communication"] = parts.drop(columns="computation").sum(axis=1)
        return parts

    def describe(self):
        """The computation's law and every collective's queue, in words.

        Returns
        -------
        str
        """
        check_is_fitted(self)
        parts = [f"computation: FiM-Cal (alpha {self.computation_.alpha_:.3g})"]
        parts[0] += self.computation_.size_note()
        load = getattr(self, "load_law_", None)
        if load is not None:
            mib = np.exp(np.asarray(load["knots"])[[0, -1]]) / 2**20
            beyond = ""
            if load.get("miss", 0.0) > 0:
                beyond = (
                    f"; beyond, a cache of {load['cache'] / 2**20:.3g} MiB hit by a "
                    "share cache/load of accesses"
                )
            parts = [
                "computation: the work times its cycles per unit at the cache's load "
                f"({mib[0]:.3g}-{mib[1]:.3g} MiB measured{beyond})"
            ]
        wait = getattr(self, "wait_", None)
        if wait is not None:
            parts[0] += (
                f", the slowest of q ranks the mean rank's x (1 + "
                f"{wait[self.wait]:.3g} e(q)), e of the {self.wait} tail"
            )
            delay = getattr(self, "collective_wait_", None)
            if delay:
                parts[0] += (
                    f"; every collective waits {delay:.3g} s e(q) for the slowest "
                    "burst before it"
                )
            if wait.get("cores") is not None:
                parts[0] += (
                    f"; t = q/{wait['cores']:g} turns on the cores: the mean rank x "
                    f"(1 + {wait['turns'][self.wait]:.3g} (t - 1)/2), the slowest "
                    "as much again"
                )
                if wait.get("held") is not None:
                    parts[0] += (
                        f", held at t = {wait['held']:g} beyond it (the one "
                        "oversubscribed turn count measured; the range carries "
                        "it on)"
                    )
        checks = getattr(self, "service_checks_", {})
        parts += [
            f"{kind}: FiM-Com {com.pattern} queue (eta {com.eta_:.3g} s, psi "
            f"{com.psi_:.3g} s{_check_words(checks.get(kind))})"
            for kind, com in self.communication_.items()
        ]
        return "; ".join(parts)


# ----------------------------------------------------------------------------
# FiM's collectives: one FiM-Com per kind a record names, the calls and the data
# points per call regressed on the application parameters, and their predictions.


def _check_words(check):
    """A kind's goodness of fit in words (empty without one)."""
    if not check:
        return ""
    return (
        f"; its times against the measured: KS D {check['statistic']:.2f}, p "
        f"{check['pvalue']:.2g} over {check['rows']} rows"
    )


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
        ``(communication, counts, count_forms, service_checks)`` as
        :class:`~scaleprobe.models.FiM` keeps them (the last: each kind's
        :meth:`~scaleprobe.models.FiMCom.goodness_of_fit` on its training rows).
    """
    x, q, per = sizes
    communication, counts, count_forms, checks = {}, {}, {}, {}
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
        rows = np.column_stack([per_call[called], q[called]])
        communication[kind] = make(kind, job_bytes).fit(rows, seconds)
        checks[kind] = communication[kind].goodness_of_fit(rows, seconds, calls[called])
        jobs_basis = _count_basis(x, q, True)
        forms = _count_forms(jobs_basis, per_call)
        prefer = PREFERRED_FORMS[COLLECTIVE_PATTERNS[kind]]
        counts[kind] = (
            _fit_counts(_calls_basis(x, q, per), calls),
            _fit_counts(jobs_basis, per_call, prefer=prefer, forms=forms),
        )
        count_forms[kind] = forms
    return communication, counts, count_forms, checks


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
        calls = _calls(calls_coef, x, q, per)
        basis = _count_basis(x, q, True)
        jobs = basis @ jobs_coef
        _check_forms(
            kind,
            COLLECTIVE_PATTERNS[kind],
            model.count_forms_.get(kind, []),
            (basis, jobs_coef, q),
            model.trained_counts_,
            model.parameters_,
        )
        rows = np.column_stack([jobs, q])
        if level is None:
            parts[kind] = calls * com.predict(rows)
        else:
            lower, upper = com.predict_interval(rows, level=level)
            parts[kind] = (calls * np.maximum(lower, 0.0), calls * upper)
    return parts


# ----------------------------------------------------------------------------
# FiM's computation: the mean rank's cycles, the cache's load, the slowest's wait.
#
# :class:`~scaleprobe.models.FiM` sums a computation and its collectives. Here is
# the computation part, fitted per iteration from ``comp_time_iterations`` and
# the hardware parameters ``hw_utilisation``, ``hw_total_cycles`` and
# ``hw_frequency``:
#
# - with the mean rank's computation beside the slowest rank's
#   (:data:`MEAN_COMPUTATION`), the cycles are fitted on the mean rank's, and the
#   wait for the slowest of ``q`` ranks apart (:mod:`scaleprobe.models.fim.wait`);
# - the cycles are FiM-Cal's (:class:`~scaleprobe.models.FiMCal`, Eq. 1-12), or the
#   load law of the cache where the training's loads lie on both sides of it and the
#   law predicts the held-out largest count better
#   (:mod:`scaleprobe.models.fim.cache`);
# - a prediction warns where a rank's data leave the side of the cache the training
#   measured (:func:`~scaleprobe.models.fim.regressions._check_memory`).


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


def critical_computation(X, time=None):
    """The slowest rank's computation of every record: the time its collectives
    leave, where that is more than the slowest rank's sum over the iterations.

    A collective's cost (``<kind>_time``) is what it took beyond the latest rank's
    arrival, so the time less the collectives is the computation on the critical
    path: the slowest rank between every two collectives, not the slowest over a
    whole iteration. Where an iteration has many collectives and short bursts
    between them, the two part (NPB CG's class S, 78 collectives an iteration: the
    time less its collectives 1.07, 1.15, 1.25 times ``comp_time_iterations`` on
    1, 2, 4 ranks, class A 1.01, 1.03, 1.09).

    Parameters
    ----------
    X : DataFrame
        Kernel records: ``comp_time_iterations`` and each collective's time.
    time : array-like of shape (n_samples,), optional
        Their measured time (without it, ``comp_time_iterations``).

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"comp_time_iterations": [1.0, 1.0], "bcast_time": [0.5, 0.5],
    ...                   "bcast_calls": [4, 4], "bcast_jobs": [8, 8]})
    >>> critical_computation(X, [1.2, 1.9]).tolist()
    [1.0, 1.4]
    """
    computation = X["comp_time_iterations"].to_numpy(float)
    if time is None:
        return computation
    rest = np.asarray(time, dtype=float).copy()
    for kind in kinds(X.columns):
        rest -= X[f"{kind}_time"].to_numpy(float)
    return np.where(np.isfinite(rest) & (rest > computation), rest, computation)


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
        sharers = X["cache_sharers"] if "cache_sharers" in X.columns else None
        cores = host_cores(q, sharers)
        wait = fit_wait(np.column_stack([x, q]), q, computation / mean, mean, cores)
        # the mean rank's computation as if it had the cores alone (ranks that
        # take turns on them: mod:`scaleprobe.models.fim.wait`)
        return mean / turn_factor(wait, q, model.wait), wait
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


def fit_computation_part(model, X, x, q, per, time=None):
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
    time : ndarray of shape (n_samples,), optional
        Their measured time: what the collectives leave of it beyond
        ``comp_time_iterations`` is the wait at every collective
        (:func:`critical_computation`, :func:`~scaleprobe.models.fim.wait.
        fit_collective_wait`).

    Returns
    -------
    dict
        FiM's fitted ``collective_wait_`` (the delay a collective waits, s, None
        without the time), ``wait_``, ``memory_``, ``computation_``, ``cache_errors_``
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
            parameter_names=tuple(model.parameters_),
        ),
        (np.column_stack([x, q]), computation / per, _hardware(X, per), q),
        memory,
    )
    delay = None
    if time is not None:
        calls = sum(X[f"{k}_calls"].to_numpy(float) for k in kinds(X.columns))
        extra = critical_computation(X, time) - X["comp_time_iterations"].to_numpy(
            float
        )
        delay = fit_collective_wait(extra, np.zeros(len(X)) + calls, q)
    return {
        "collective_wait_": delay,
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
    memory = model.memory_
    _check_memory(memory, x, q)
    if model.load_law_ is not None:
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


# ----------------------------------------------------------------------------
# FiM's interval: the process laws the training cannot reject, and the fit's spread.
#
# FiM-Cal takes one process law (:mod:`scaleprobe.models.fim.processes`) from a few
# process counts. Fitted on 1, 2 and 4 processes, a part every process repeats and a
# loss with the logarithm of the processes can agree there and differ by a factor of
# ten at a thousand, and 6 % noise of the runs hides either
# (``tests/benchmarks/bench_process_law.py``). :meth:`~scaleprobe.models.FiM.
# predict_interval` therefore spans the time under every law the hold-out cannot
# reject and the central part of each law's refits on resampled residuals, which
# carry the noise of its coefficients to the counts predicted
# (:meth:`~scaleprobe.models.FiMCal.predict_range`; all laws from two process counts,
# where nothing can be held out; one with a law given; under the load law of the
# cache, a point within the training's loads and, beyond them, from the cost held flat
# to every access a miss), adds FiM-Com's confidence interval of each collective's
# mean over the replications, and widens the sum by the training's spread about the
# fit:
#
# .. math::
#
#     b = z_{(1 + \ell)/2} \sqrt{\frac{\sum_c w_c r_c^2}{\sum_c w_c}},
#     \qquad r_c = \log \frac{\tilde y_c}{\hat y_c}, \quad w_c = \tilde y_c,
#
# over the training configurations :math:`c` (:math:`\tilde y_c` the median of their
# runs: the interval is of a configuration's time, as the ensemble's are, and one slow
# run of EP on 2 ranks, 22 % over its others, would otherwise set it), weighted by the
# measured time: where the time was spent (NPB CG's class S sits 0.1-0.5 above FiM in
# log time, a fixed cost that class B does not keep). A conformal quantile of nine
# configurations would be the largest residual, PageRank's 8 ms configuration's 0.54.


def log_residuals(model, X, y, keys):
    """Log ratios of the measured to the predicted times of the training's
    configurations, and their measured times.

    Parameters
    ----------
    model : FiM
        Fitted on ``X, y``.
    X : DataFrame or array-like
        The training rows.
    y : array-like of shape (n_samples,)
        Their measured times, s.
    keys : ndarray of shape (n_samples, k)
        What makes a configuration: rows of equal keys are its runs, and their
        median its time (a configuration timed at zero or less says nothing of a
        ratio and is left out).

    Returns
    -------
    ratios, medians : ndarray
    """
    y = np.asarray(y, dtype=float).ravel()
    # the training rows' own warnings; quiet() and errstate, not catch_warnings,
    # which swaps process-wide state under the other folds' threads
    with quiet(), np.errstate(all="ignore"):
        predicted = model.predict(X)
    _, group = np.unique(np.asarray(keys, dtype=float), axis=0, return_inverse=True)
    group = group.ravel()
    ratios, medians = [], []
    for index in np.unique(group):
        rows = group == index
        measured, modelled = float(np.median(y[rows])), float(predicted[rows][0])
        if measured > 0 and modelled > 0:
            ratios.append(math.log(measured / modelled))
            medians.append(measured)
    return np.array(ratios), np.array(medians)


def band(residuals, level, weights=None):
    """Half-width in log time of the measured times about the fit: the two-sided
    normal ``level`` quantile times the weighted root mean square of the log
    residuals, less any beyond :data:`~scaleprobe.models.fim.processes.OUTLYING`
    scaled median absolute deviations of their median (a misfit, not a spread).

    Parameters
    ----------
    residuals : array-like or None
    level : float
        In (0, 1).
    weights : array-like, optional
        Default equal.

    Returns
    -------
    float
        0 without residuals.

    Examples
    --------
    >>> round(band([0.1, -0.1], 0.9), 4)
    0.1645
    >>> round(band([0.1, -0.1, 0.1, -0.1, 16.0], 0.9), 4)  # 16: a misfit, left out
    0.1645
    """
    if residuals is None or not len(residuals):
        return 0.0
    residuals = np.asarray(residuals, dtype=float)
    weights = np.ones_like(residuals) if weights is None else np.asarray(weights, float)
    # a configuration the fit misses by many times the others' spread is its misfit
    # there (NPB CG's class S on one rank, the law's cycles floored near zero: a log
    # residual of 16 against |r| <= 0.43 had the band a factor 34), not a spread
    kept = typical(residuals)
    residuals, weights = residuals[kept], weights[kept]
    sigma = math.sqrt(float(np.average(residuals**2, weights=weights)))
    return float(stats.norm.ppf(0.5 + level / 2)) * sigma
