r"""FiM-Com: communication time of a collective from a simulated queueing network.

FiM-Com (Bhimani et al. 2019, Section 3) estimates the time of a scatter, broadcast
or gather by simulating jobs (data points) through the D -> M -> C -> R tandem
queues of :mod:`scaleprobe.models.fim.queues` (its docstring states how Eq. 13-16 are
read).
The data transfer rate comes from the network (Eq. 13: 90-100 % of the link per
job); the initialisation delay :math:`\eta`, the receive time :math:`\psi` and the
metadata rate :math:`\nu` are calibrated on measured transfers, among them transfers
of a unit job (Section 3.3), by a bounded optimiser of the relative error of the
simulated mean (common random numbers, so the objective is smooth).

Predictions average independent replications of the simulation; the replications run
as a Dask graph (a row's replications are split over one to eight tasks by the cells
they simulate, each task simulating its share of every row side by side, on the active
Dask client if there is one) and :meth:`FiMCom.predict_interval` gives a Student-t
confidence interval of the mean over them.
"""

from __future__ import annotations

import math

import dask
import numpy as np
from scipy import stats
from scipy.optimize import minimize
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core.interface import ModelBase, PerformanceModelTags, check_level, fitted_ranges
from ..core.warnings import DegenerateFitWarning, warn
from .queues import PATTERNS, ServiceLaws, replication_cells, simulate_many

__all__ = ["FiMCom"]

#: Bounds of log(eta), log(psi) (s) and log(nu) (data points/s) while calibrating.
_LOG_LOWER = np.log([1e-12, 1e-15, 1e-3])
_LOG_UPPER = np.log([1e3, 1e3, 1e15])


def _seed(random_state, task, jobs, processes):
    """A task's random stream for one row: independent of the other rows and tasks."""
    return np.random.default_rng(
        [int(random_state), int(task), int(jobs), int(processes)]
    )


#: A collective of fewer data points than this is cheap to simulate and noisy (one
#: exponential delay dominates it): it gets up to this many times the replications.
_BOOST = 32

#: Most Dask tasks one row's replications are split over.
_TASKS = 8
#: Cells (:func:`~scaleprobe.models.fim.queues.replication_cells`) a task's share of
#: a row's replications must reach to be split off: the simulation also loops over
#: the groups of data points once per task, whatever its replications, so a task of a
#: few small replications costs nearly what one of many does (a scatter of 3e4
#: points in 1024 groups, 30 replications: 0.8 s over 8 tasks, 0.15 s in one), while
#: tasks of large ones run side by side on the workers (a binomial tree over 1024
#: ranks: 32 groups, eight tasks).
_CELLS_PER_TASK = 1 << 17


def _tasks(pattern, rows, counts, max_groups):
    """Tasks each row's replications are split over: one per
    :data:`_CELLS_PER_TASK` cells they simulate, at least one, at most
    :data:`_TASKS` and one per replication; a row's own, whatever the other rows."""
    cells = np.array(
        [replication_cells(pattern, jobs, procs, max_groups) for jobs, procs in rows],
        dtype=float,
    ).reshape(-1)
    wanted = np.ceil(cells * counts / _CELLS_PER_TASK).astype(np.int64)
    return np.clip(wanted, 1, np.minimum(_TASKS, np.maximum(counts, 1)))


def _counts(rows, replications):
    """Replications of each row: more for small collectives, as many for large."""
    small = np.clip(rows[:, 0], 1, _BOOST)
    return replications * (_BOOST // small)


def _share(pattern, laws, rows, counts, task, tasks, random_state, max_groups):
    """Task ``task``: its share of every row's replications, simulated side by side
    (a Dask task); one array per row, empty for a row split over ``tasks <= task``
    (``tasks``: per row, or one count for all)."""
    splits = np.broadcast_to(tasks, len(rows))
    return [
        simulate_many(
            pattern,
            jobs,
            procs,
            laws,
            _seed(random_state, task, jobs, procs),
            count // split + (task < count % split),
            max_groups,
        )
        if task < split
        else np.zeros(0)
        for (jobs, procs), count, split in zip(rows, counts, splits, strict=True)
    ]


class FiMCom(PerformanceModelTags, ModelBase, RegressorMixin, BaseEstimator):
    """FiM-Com as a scikit-learn regressor: time of one collective call.

    ``X`` holds the data points the call moves (column ``jobs``; see
    :func:`~scaleprobe.models.fim.queues.simulate_many` for what they count per pattern)
    and the process count (column ``processes``); ``y`` the measured time of the call
    in seconds.

    Parameters
    ----------
    pattern : str, default="scatter"
        ``"scatter"``, ``"broadcast"``, ``"gather"`` (the paper's) or ``"allgather"``,
        ``"allreduce"``, ``"alltoall"`` (compositions).
    job_bytes : float, default=8.0
        Bytes of one data point.
    link_bandwidth : float, default=1.25e8
        Bandwidth of the link, bytes/s (after any throttle).
    eager_limit : float, default=65536
        Largest message (bytes to one receiver in one transfer) sent with the eager
        protocol; a larger one waits for the rendezvous handshake, two more
        initialisation delays (Bhimani et al. 2019, Section 4.1.1: 64 KB).
        ``math.inf``: every message eager.
    bandwidth_range : tuple of float, default=(0.9, 1.0)
        Share of the link a job is sent at: Eq. 13's uniform range.
    replications : int, default=50
        Replications averaged by :meth:`predict` (a collective of fewer than 32
        data points, cheap and dominated by one random delay, gets ``32 // jobs``
        times as many).
    calibration_replications : int, default=8
        Replications per training row while calibrating.
    max_groups : int, default=32
        Largest number of simulated groups of data points per collective, in the
        calibration and the predictions alike: the metadata server's speed depends
        on how the points arrive, and parameters calibrated on one grouping predict
        another 1-2 % off (a gather's up to 10 %). More groups follow single data
        points more closely at a cost linear in them (a binomial tree of 1e5 points
        over 64 ranks: 0.02 s for 40 replications in 32 groups, 0.7-0.95 s in
        1024).
    max_iter : int, default=100
        Iterations of the calibration's optimiser (Nelder-Mead).
    random_state : int, default=0
    jobs : int, default=0
        Column of ``X`` with the data points.
    processes : int, default=-1
        Column of ``X`` with the process count.

    Attributes
    ----------
    eta_ : float
        Mean initialisation delay (s) of the delay server C.
    psi_ : float
        Mean receive time of one data point (s) at R.
    metadata_rate_ : float
        :math:`\\nu` of the metadata server M (data points/s per unit of
        :math:`\\ln(1 + \\chi)`).
    zeta_range_ : tuple of float
        Data transfer rates (data points/s) of Eq. 13.
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1, 2], [1, 4], [1000, 2], [1000, 4], [4000, 4]])
    >>> y = 1e-5 + X[:, 0] * 8 / 1.25e8  # a latency, then the link
    >>> model = FiMCom(replications=8).fit(X, y)
    >>> bool(np.all(np.abs(model.predict(X) / y - 1) < 0.25))
    True
    """

    interval_method = "consistent-range"

    def __init__(
        self,
        *,
        pattern="scatter",
        job_bytes=8.0,
        link_bandwidth=1.25e8,
        eager_limit=65536,
        bandwidth_range=(0.9, 1.0),
        replications=50,
        calibration_replications=8,
        max_groups=32,
        max_iter=100,
        random_state=0,
        jobs=0,
        processes=-1,
    ):
        self.pattern = pattern
        self.job_bytes = job_bytes
        self.link_bandwidth = link_bandwidth
        self.eager_limit = eager_limit
        self.bandwidth_range = bandwidth_range
        self.replications = replications
        self.calibration_replications = calibration_replications
        self.max_groups = max_groups
        self.max_iter = max_iter
        self.random_state = random_state
        self.jobs = jobs
        self.processes = processes

    def _check_params(self):
        if self.pattern not in PATTERNS:
            raise ValueError(f"pattern must be one of {PATTERNS}, got {self.pattern!r}")
        for name in ("job_bytes", "link_bandwidth", "eager_limit"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"{name} must be positive, got {value!r}")
        low, high = self.bandwidth_range
        if not 0 < low <= high <= 1:
            raise ValueError(
                f"bandwidth_range must satisfy 0 < low <= high <= 1, got "
                f"{self.bandwidth_range!r}"
            )
        for name in (
            "replications",
            "calibration_replications",
            "max_groups",
            "max_iter",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    def _rows(self, X):
        width = X.shape[1]
        jobs = np.maximum(np.rint(X[:, self.jobs % width]), 0)
        procs = np.maximum(np.rint(X[:, self.processes % width]), 1)
        return np.column_stack([jobs, procs]).astype(np.int64)

    def _laws(self, eta, psi, nu):
        low, high = self.zeta_range_
        limit = getattr(self, "eager_limit", math.inf)  # models kept before it
        return ServiceLaws(low, high, nu, eta, psi, float(self.job_bytes), limit)

    def _mean(self, rows, laws, replications, max_groups):
        counts = _counts(rows, replications)
        runs = _share(
            self.pattern, laws, rows, counts, 0, 1, self.random_state, max_groups
        )
        return np.array([run.mean() for run in runs])

    def fit(self, X, y):
        """Calibrate eta, psi and the metadata rate on measured transfers.

        Nelder-Mead minimises the mean squared relative error of the simulated
        means (common random numbers) from the best of four starts: R receiving
        a data point as fast as the link sends it or at the measured time per data
        point, M's rate that of the link or 100 times it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Measured time of the collective, s.

        Returns
        -------
        self : FiMCom
        """
        self._check_params()
        X, y = validate_data(self, X, y, y_numeric=True)
        self.fitted_ranges_ = fitted_ranges(X)
        rows = self._rows(X)
        per_job = self.job_bytes / self.link_bandwidth
        self.zeta_range_ = tuple(float(b) / per_job for b in self.bandwidth_range)
        useful = (rows[:, 0] > 0) & (rows[:, 1] > 1) & (y > 0)
        # start: the smallest transfer is latency, a data point is received as fast
        # as it is sent, a lone job's metadata goes at the data rate
        eta = float(y[useful].min()) if useful.any() else 1e-6
        lone = self.zeta_range_[1] / math.log(2.0)
        start = np.clip(np.log([eta, per_job, lone]), _LOG_LOWER, _LOG_UPPER)
        self.eta_, self.psi_, self.metadata_rate_ = np.exp(start).tolist()
        if not useful.any():
            warn(
                "no training row moves data between two or more processes: FiM-Com "
                "keeps its starting parameters",
                DegenerateFitWarning,
            )
            return self
        # one simulation per distinct (jobs, processes), against the mean measured
        train, inverse = np.unique(rows[useful], axis=0, return_inverse=True)
        target = np.bincount(inverse.ravel(), y[useful]) / np.bincount(inverse.ravel())
        groups = self.max_groups

        def error(theta):
            theta = np.clip(theta, _LOG_LOWER, _LOG_UPPER)
            laws = self._laws(*np.exp(theta))
            mean = self._mean(train, laws, self.calibration_replications, groups)
            return float(np.mean((mean / target - 1.0) ** 2))

        # Nelder-Mead finds the minimum near where it starts: a start that gives M's
        # time to R can stall far from one that gives it to M, and which one a fit
        # reaches must not depend on the random numbers. Four starts are scored (R
        # at the link's time or at the measured time per data point, M at the
        # link's rate or 100 times it) and the best one taken.
        measured = float(np.median(target / np.maximum(train[:, 0], 1)))
        starts = [
            np.clip(np.log([eta, psi, nu]), _LOG_LOWER, _LOG_UPPER)
            for psi in (per_job, measured)
            for nu in (lone, 100 * lone)
        ]
        start = min(starts, key=error)
        best = minimize(
            error,
            start,
            method="Nelder-Mead",
            options={"maxiter": self.max_iter, "xatol": 1e-2, "fatol": 1e-6},
        )
        theta = np.clip(best.x, _LOG_LOWER, _LOG_UPPER)
        self.eta_, self.psi_, self.metadata_rate_ = np.exp(theta).tolist()
        return self

    def _replications(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False)
        rows = self._rows(X)
        laws = self._laws(self.eta_, self.psi_, self.metadata_rate_)
        if not len(rows):
            return np.zeros((1, 0))
        counts = _counts(rows, self.replications)
        # the same split whatever the other rows: a row's prediction is its own
        tasks = _tasks(self.pattern, rows, counts, self.max_groups)
        shares = dask.compute(
            *[
                dask.delayed(_share, pure=True)(
                    self.pattern,
                    laws,
                    rows,
                    counts,
                    task,
                    tasks,
                    self.random_state,
                    self.max_groups,
                )
                for task in range(int(tasks.max()))
            ]
        )
        out = np.full((int(counts.max()), len(rows)), np.nan)
        for row in range(len(rows)):
            runs = np.concatenate([share[row] for share in shares])
            out[: len(runs), row] = runs
        return out

    def goodness_of_fit(self, X, y, calls=1):
        """Kolmogorov-Smirnov test of the fitted service laws against measured times.

        FiM-Com's service times (Eq. 13-16) are never observed one by one, only
        through the collective's time they add up to. For every row, the measured
        time's place among the simulated ones (the probability integral transform:
        the share of replications below it) is uniform on (0, 1) when the laws
        are right; the test is of those places against the uniform law. A measured
        time that is the mean of ``calls`` calls is placed among the simulated mean
        of as many independent calls (the replications' spread about their mean
        divided by ``sqrt(calls)``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
            Measured time of one call, s.
        calls : int or array-like, default=1
            Calls each measured time is the mean of.

        Returns
        -------
        dict
            ``statistic`` (Kolmogorov-Smirnov D), ``pvalue`` and ``rows``.
        """
        runs = self._replications(X)
        y = np.asarray(y, dtype=float).ravel()
        calls = np.broadcast_to(np.maximum(np.asarray(calls, dtype=float), 1), y.shape)
        mean = np.nanmean(runs, axis=0)
        means = mean + (runs - mean) / np.sqrt(calls)
        count = np.sum(~np.isnan(means), axis=0)
        below = np.sum(means < y, axis=0) + 0.5 * np.sum(means == y, axis=0)
        places = (below + 0.5) / (count + 1)
        test = stats.kstest(places, "uniform")
        return {
            "statistic": float(test.statistic),
            "pvalue": float(test.pvalue),
            "rows": len(y),
        }

    def predict(self, X):
        """Mean simulated time of the collective over the replications, s.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return np.nanmean(self._replications(X), axis=0)

    def predict_interval(self, X, *, level=0.9):
        """The Student-t confidence interval of the mean over the replications.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        level : float, default=0.9

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
            Bounds of the time, s.
        """
        return self.predict_with_interval(X, level=level)[1:]

    def predict_with_interval(self, X, *, level=0.9):
        """Mean over replications and its Student-t confidence interval, from the
        same replications.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        level : float, default=0.9

        Returns
        -------
        tuple of ndarray
            ``(mean, lower, upper)``, s.
        """
        check_level(level)
        runs = self._replications(X)
        mean = np.nanmean(runs, axis=0)
        count = np.sum(~np.isnan(runs), axis=0)
        if runs.shape[0] < 2:
            return mean, mean.copy(), mean.copy()
        spread = np.nanstd(runs, axis=0, ddof=1)
        half = stats.t.ppf(0.5 + level / 2, count - 1) * spread / np.sqrt(count)
        return mean, mean - half, mean + half
