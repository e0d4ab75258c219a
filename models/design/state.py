"""What a design knows: the measured series, its noise, its plausible laws, costs.

The plausible laws are those that pass the check a user would make by hand: fitted
without the largest count, they predict it within the noise; and every trend they
claim is larger than its own standard error allows by chance (so that pure noise
does not pass for a trend).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import norm

from ..core.interface import DEFAULT_LEVEL
from ..laws.regime import find_jumps, past_break
from ..profiles.model import interval_scale
from .laws import default_laws, fit_law

__all__ = [
    "NOISE_FLOOR",
    "CostLaw",
    "DesignState",
    "calibration_ratios",
    "conformal_rate",
    "design_state",
    "pooled_rate",
]

#: Smallest noise (log units) a design assumes: repeated runs never agree better.
NOISE_FLOOR = 0.01
#: A held-out prediction may miss by this much (log) beyond its noise.
TOLERANCE = 0.05
#: Standard errors a trend coefficient must exceed to count as seen.
TREND_SIGNIFICANCE = 2.0
#: Prefixes the calibration re-fits on (the largest one, two and three counts out).
NESTED = 3
#: Factor of a series too short to calibrate on: the scale itself.
UNCALIBRATED_RATE = 1.0


def _noise(samples):
    """Pooled standard deviation of ``log t`` about each count's mean, and its dof."""
    dof = sum(len(s) - 1 for s in samples)
    if dof <= 0:
        return None, 0
    squares = sum(float(np.sum((np.log(s) - np.log(s).mean()) ** 2)) for s in samples)
    return math.sqrt(squares / dof), dof


@dataclass(frozen=True)
class CostLaw:
    """What a point costs: ``core_seconds = exp(a) * nodes**b`` (wall time x ranks).

    When every rank of the measured points ran on one host of ``cores`` cores (the
    embedded cluster emulating the nodes), a point's ranks take turns on those
    cores: its wall time is at least its ranks times the processor time one rank
    took at the largest measured count, over ``cores``. The line through the
    measured counts misses that floor once the ranks outnumber the cores (on two
    cores, ``commbench.compute`` at 1, 2 and 4 nodes extrapolates to 0.58 s a
    point at 16 nodes, which take 1.8 s).

    Attributes
    ----------
    intercept, slope : float
        ``a`` and ``b`` of the line through ``log(core_seconds)`` against
        ``log(nodes)`` of the measured points.
    ranks_per_node : float
        Ranks per node of the measured points (their median).
    cores : float
        Cores of the one host the ranks share; 0 when they do not share one.
    rank_seconds : float
        Processor seconds of one rank at the largest measured count (wall time x
        ranks running at once / ranks, median); 0 when ``cores`` is 0.

    Examples
    --------
    >>> cost = CostLaw.fit([1, 2, 4], [1, 2, 4], [10.0, 10.0, 10.0])
    >>> round(float(cost.core_seconds(8)), 3), round(float(cost.wall_seconds(8)), 3)
    (80.0, 10.0)
    >>> shared = CostLaw.fit([1, 2, 4], [1, 2, 4], [4.0, 2.0, 2.0], cores=2)
    >>> round(float(shared.wall_seconds(16)), 3)  # 16 ranks x 1 s / 2 cores
    8.0
    """

    intercept: float
    slope: float
    ranks_per_node: float = 1.0
    cores: float = 0.0
    rank_seconds: float = 0.0

    @classmethod
    def fit(cls, nodes, ranks, wall_seconds, cores=None):
        """Fit the cost law to measured points (one entry per point).

        Parameters
        ----------
        nodes, ranks : array-like of int
        wall_seconds : array-like of float
            Each point's wall time (its launch time).
        cores : int, optional
            Cores of the one host on which every rank ran (None: the ranks of a
            point do not share a host's cores).

        Returns
        -------
        CostLaw
            With one node count measured, cost grows with the ranks (slope 1).
        """
        nodes = np.asarray(nodes, dtype=float)
        ranks = np.asarray(ranks, dtype=float)
        wall = np.asarray(wall_seconds, dtype=float)
        cost = wall * ranks
        keep = np.isfinite(cost) & (cost > 0)
        if not keep.any():
            raise ValueError("no measured point has a positive wall time to price by")
        nodes, ranks, wall, cost = nodes[keep], ranks[keep], wall[keep], cost[keep]
        per_node = float(np.median(ranks / nodes))
        shared = {}
        if cores:
            largest = nodes == nodes.max()
            busy = wall * np.minimum(ranks, cores) / ranks
            shared = {
                "cores": float(cores),
                "rank_seconds": float(np.median(busy[largest])),
            }
        if np.unique(nodes).size < 2:
            return cls(float(np.mean(np.log(cost / nodes))), 1.0, per_node, **shared)
        slope, intercept = np.polyfit(np.log(nodes), np.log(cost), 1)
        return cls(float(intercept), float(max(slope, 0.0)), per_node, **shared)

    def core_seconds(self, nodes):
        """Predicted core-seconds of one point at ``nodes``."""
        nodes = np.asarray(nodes, dtype=float)
        return self.wall_seconds(nodes) * nodes * self.ranks_per_node

    def wall_seconds(self, nodes):
        """Predicted wall seconds of one point at ``nodes``."""
        nodes = np.asarray(nodes, dtype=float)
        ranks = nodes * self.ranks_per_node
        line = np.exp(self.intercept + self.slope * np.log(nodes)) / ranks
        if not self.cores:
            return line
        return np.maximum(line, self.rank_seconds * np.maximum(ranks / self.cores, 1.0))


@dataclass(frozen=True)
class DesignState:
    """A measured series and what a design makes of it.

    Attributes
    ----------
    x : ndarray of shape (m,)
        Measured counts, increasing.
    count : ndarray of shape (m,)
        Repetitions at each count.
    noise : float
        Standard deviation of ``log t`` of one run (pooled over the counts).
    laws : list of FittedLaw
        The plausible laws, fitted on every count.
    rejected : dict of str to str
        The laws left out and why.
    target : float
        The count the interval is wanted at.
    level : float
        Coverage of the interval.
    rate : float
        The factor ``kappa`` of the distance term of the interval
        (:func:`conformal_rate`); 0 leaves only the laws' own intervals.
    """

    x: np.ndarray
    count: np.ndarray
    noise: float
    laws: list
    rejected: dict
    target: float
    level: float = DEFAULT_LEVEL
    rate: float = 0.0

    @property
    def z(self):
        """Normal quantile of the interval's level."""
        return _quantile(self.level)

    @property
    def unchecked(self):
        """True when no law held its check on the largest count: the laws kept
        are the closest, and the interval's factor is at least 1, uncalibrated."""
        return any(why.startswith("kept") for why in self.rejected.values())

    @property
    def standard(self):
        """Standard error (log) of the centre the extrapolation leans on: the
        noise over the root of the runs at the largest count measured (one run
        there is known to its noise, however often the small counts ran)."""
        return float(self.noise / math.sqrt(float(self.count[-1])))


@lru_cache(maxsize=16)
def _quantile(level):
    """Normal quantile of a two-sided interval of ``level`` (kept: the design
    asks for it at every candidate)."""
    return float(norm.ppf(0.5 + level / 2))


def _errors(laws, x, centre, count, length, jumps=()):
    """The laws fitted on the first ``length`` counts, at each later count before
    a jump beyond the prefix (:func:`~scaleprobe.models.laws.regime.past_break`):
    the log error of the law furthest from the centre, their spread (log) and the
    doublings from the prefix's largest count."""
    fitted = [fit_law(law, x[:length], centre[:length], count[:length]) for law in laws]
    later = x[length:]
    predicted = [f.log_predict(later) for f in fitted if f is not None]
    if not predicted:
        return np.empty(0), np.empty(0), np.empty(0)
    high, low = np.max(predicted, axis=0), np.min(predicted, axis=0)
    truth = np.log(centre[length:])
    error = np.maximum(np.abs(truth - high), np.abs(truth - low))
    keep = np.isfinite(error) & ~past_break(jumps, length, x.size)
    distance = np.log2(later / x[length - 1])
    return error[keep], (high - low)[keep], distance[keep]


def calibration_ratios(laws, x, centre, count, noise):
    """The series' own extrapolation errors over the calibrated scale, for the
    factor of the interval's distance term (:func:`conformal_rate`).

    The laws are fitted again on the prefixes of the counts (the largest one, two
    and three counts left out); at every count after a prefix, the log error of
    the law furthest from the measured centre (at the counts before a jump beyond
    the prefix, as the profile fit takes them) is divided by the calibrated scale of the
    profiles, :func:`~scaleprobe.models.profiles.model.interval_scale`
    ``("combined", spread, d, se)`` = ``spread + 0.05 d + sqrt(d) + se (1 + d)``
    with ``spread`` the range of the laws' predictions there, ``d`` the doublings
    beyond the prefix and ``se`` the standard error of the centre at the
    prefix's largest count (as :attr:`DesignState.standard` takes it).

    Parameters
    ----------
    laws : sequence of DesignLaw
    x, centre, count : ndarray of shape (m,)
        The counts (increasing), the mean time at each and its runs.
    noise : float
        Standard deviation of ``log t`` of one run.

    Returns
    -------
    ndarray
        One ratio per held-out count and prefix.

    Examples
    --------
    A straight power law is predicted exactly: nothing to widen.

    >>> from scaleprobe.models.design import default_laws
    >>> x = np.array([1.0, 2.0, 4.0, 8.0])
    >>> power = [law for law in default_laws() if law.name == "a*p^b"]
    >>> np.round(calibration_ratios(power, x, 3 * x**0.5, np.ones(4), 0.01), 9).tolist()
    [0.0, 0.0, 0.0]
    """
    ratios = [np.empty(0)]
    jumps = find_jumps(x, np.log(centre)) if x.size >= 3 else []
    for length in range(x.size - 1, max(1, x.size - 1 - NESTED), -1):
        error, spread, distance = _errors(laws, x, centre, count, length, jumps)
        standard = noise / math.sqrt(float(count[length - 1]))
        ratios.append(error / interval_scale("combined", spread, distance, standard))
    return np.concatenate(ratios)


def conformal_rate(ratios, level=DEFAULT_LEVEL):
    """The factor ``kappa``: the ``level`` split-conformal quantile of the ratios
    (the ``ceil((n + 1) level)``-th smallest of ``n``, the largest when that is
    past ``n``); :data:`UNCALIBRATED_RATE` without any.

    Parameters
    ----------
    ratios : array-like of float
        Pooled :func:`calibration_ratios` (of one series, or of the series of a
        profile, as the profile fit pools them).
    level : float, default=DEFAULT_LEVEL

    Returns
    -------
    float

    Examples
    --------
    >>> conformal_rate([0.1, 0.3, 0.2]), conformal_rate([])
    (0.3, 1.0)
    """
    ratios = np.sort(np.asarray(ratios, dtype=float))
    if ratios.size == 0:
        return UNCALIBRATED_RATE
    rank = min(math.ceil((ratios.size + 1) * level), ratios.size)
    return float(ratios[rank - 1])


def _scatter(laws, x, centre, count):
    """Root mean square log residual of the law closest to the centres (per
    degree of freedom): the noise of a series measured once per count."""
    best = math.inf
    for law in laws:
        fitted = fit_law(law, x, centre, count)
        dof = x.size - law.size
        if fitted is None or dof < 1:
            continue
        residual = fitted.log_predict(x) - np.log(centre)
        best = min(best, math.sqrt(float(np.sum(count * residual**2)) / dof))
    return best if math.isfinite(best) else NOISE_FLOOR


def _held_out(law, x, centre, count, noise, z):
    """Why the law fails its held-out check at the largest count (or None), and
    its miss there (log; None where it cannot be held out)."""
    if x.size < law.size + 1:
        return None, None  # too few counts to hold one out: judged on its fit alone
    fitted = fit_law(law, x[:-1], centre[:-1], count[:-1])
    if fitted is None:
        return "cannot be fitted without the largest count", None
    predicted = fitted.log_predict(x[-1:])[0]
    if not np.isfinite(predicted):
        return "is not positive at the largest count", None
    miss = abs(predicted - math.log(centre[-1]))
    spread = noise * math.sqrt(1.0 / count[-1] + fitted.variance(x[-1:])[0])
    if miss > z * spread + TOLERANCE:
        text = (
            f"misses the largest count by {math.exp(miss):.2f}x when fitted without it"
        )
        return text, miss
    return None, miss


def _judge(law, x, centre, count, noise, z, reach):
    """The law fitted on every count (None if it cannot be), why it is not
    plausible (None if it is), and how far it is off (log: its held-out miss or
    its rms departure from the counts, the larger)."""
    fitted = fit_law(law, x, centre, count)
    if fitted is None:
        return None, "cannot be fitted to these counts", None
    if not np.all(np.isfinite(fitted.log_predict(reach))):
        return None, "is not positive up to the target", None
    if not law.log:
        # a law of the time itself whose band at the target reaches zero: its
        # interval in log has no lower end (c0 + c1 log2 p through 0.21, 0.11,
        # 0.066 s on 1, 2, 4 nodes put 8 nodes at 1 ms and the width at 3e12)
        relative = z * noise * np.sqrt(np.maximum(fitted.variance([reach[-1]]), 0.0))
        if relative[0] >= 1.0:
            return None, "its band reaches zero before the target", None
    if law.size > 1:
        errors = noise * np.sqrt(np.diag(np.linalg.pinv(fitted.information)))[1:]
        if np.all(np.abs(fitted.coef[1:]) < TREND_SIGNIFICANCE * errors):
            return fitted, "its trend is within the noise", None
    reason, miss = _held_out(law, x, centre, count, noise, z)
    residual = fitted.log_predict(x) - np.log(centre)
    scatter = math.sqrt(float(np.sum(count * residual**2) / np.sum(count)))
    if scatter > 2 * noise + TOLERANCE:
        reason = f"departs from the measured counts by {100 * scatter:.2g} % (rms)"
    return fitted, reason, max(scatter, miss or 0.0)


def _closest(judged, rejected):
    """When no law passes: the laws at most twice as far off as the closest
    (their disagreement is the interval)."""
    misses = [(miss, fitted) for fitted, reason, miss in judged if miss is not None]
    if not misses:
        return None
    best = min(miss for miss, _ in misses)
    kept = [fitted for miss, fitted in misses if miss <= 2 * best + TOLERANCE]
    for fitted in kept:
        why = rejected[fitted.name]
        rejected[fitted.name] = f"kept: no law passed; among the closest ({why})"
    return kept


def design_state(
    x, samples, target, *, laws=None, level=DEFAULT_LEVEL, rate=None, pooled=None
):
    """Measured series -> noise and plausible laws.

    Parameters
    ----------
    x : array-like of float
        The measured counts (nodes or ranks).
    samples : sequence of array-like
        The times measured at each count (one entry per run, positive).
    target : float
        The count the interval is wanted at.
    laws : list of DesignLaw, default=None
        The laws weighed; :func:`default_laws` by default.
    level : float, default=DEFAULT_LEVEL
    rate : float, default=None
        The factor of the interval's distance term, as it is; by default
        calibrated on the series' own extrapolation errors
        (:func:`calibration_ratios`).
    pooled : float, default=None
        The factor pooled over the series of a profile (:func:`pooled_rate`),
        when there is one: the state takes the larger of it and the series' own
        factor, so that a campaign whose own counts are extrapolated worse than
        its profile's widens its interval (ignored when ``rate`` is given).

    Returns
    -------
    DesignState
        When no law passes, the laws at most twice as far off (held out or from
        the counts) as the closest are kept: their disagreement makes the
        interval wide; the level law when none could be fitted. Their interval
        then takes at least :data:`UNCALIBRATED_RATE` as its factor (unless
        ``rate`` is given): a factor is calibrated on laws that describe the
        series, and none held its check on the latest count.

    Examples
    --------
    >>> import numpy as np
    >>> x = [1, 2, 4, 8]
    >>> state = design_state(x, [[2.0 * v, 2.02 * v] for v in x], 64)
    >>> [law.name for law in state.laws]
    ['a*p^b', 'c0 + c1*p']
    """
    order = np.argsort(np.asarray(x, dtype=float))
    x = np.asarray(x, dtype=float)[order]
    samples = [np.asarray(samples[i], dtype=float) for i in order]
    centre = np.array([s.mean() for s in samples])
    count = np.array([float(s.size) for s in samples])
    noise, _ = _noise(samples)
    laws = default_laws() if laws is None else list(laws)
    if noise is None:  # no repeats: the scatter about the closest law bounds it
        noise = _scatter(laws, x, centre, count)
    noise = max(noise, NOISE_FLOOR)
    z = float(norm.ppf(0.5 + level / 2))
    reach = np.geomspace(x[0], max(target, x[-1]), 16)
    plausible, rejected, judged = [], {}, []
    for law in laws:
        fitted, reason, miss = _judge(law, x, centre, count, noise, z, reach)
        if reason is None:
            plausible.append(fitted)
        else:
            rejected[law.name] = reason
            judged.append((fitted, reason, miss))
    checked = bool(plausible)
    if not plausible:
        plausible = _closest(judged, rejected)
    if not plausible:
        level_law = fit_law(default_laws()[0], x, centre, count)
        plausible, rejected = [level_law], {**rejected, "level": "kept: no law passed"}
    if rate is None:
        laws = [f.law for f in plausible]
        rate = conformal_rate(calibration_ratios(laws, x, centre, count, noise), level)
        rate = rate if pooled is None else max(rate, float(pooled))
        rate = rate if checked else max(rate, UNCALIBRATED_RATE)
    return DesignState(x, count, noise, plausible, rejected, float(target), level, rate)


def pooled_rate(series, level=DEFAULT_LEVEL):
    """The factor ``kappa`` pooled over several series of one program, as the
    profile fit pools it over a profile's series (one series alone has few
    extrapolation errors to calibrate on, and under-covers).

    Parameters
    ----------
    series : iterable of (array-like, sequence of array-like)
        Each series' counts and the times measured at each (as
        :func:`design_state` takes them); a series of fewer than three counts
        has no extrapolation error to give.
    level : float, default=DEFAULT_LEVEL

    Returns
    -------
    float
        The ``level`` split-conformal quantile (:func:`conformal_rate`) of every
        series' :func:`calibration_ratios`, their laws the plausible ones of each
        series; :data:`UNCALIBRATED_RATE` when no series gives a ratio.

    Examples
    --------
    Straight power laws are extrapolated exactly: nothing to widen.

    >>> x = [1, 2, 4, 8]
    >>> laws = [(x, [[3 * v**0.5] * 2 for v in x]), (x, [[5 / v, 5.05 / v] for v in x])]
    >>> round(pooled_rate(laws), 9), pooled_rate([([1, 2], [[1.0], [2.0]])])
    (0.0, 1.0)
    """
    ratios = [np.empty(0)]
    for x, samples in series:
        if len(x) < 3:
            continue
        order = np.argsort(np.asarray(x, dtype=float))
        xs = np.asarray(x, dtype=float)[order]
        runs = [np.asarray(samples[i], dtype=float) for i in order]
        state = design_state(xs, runs, float(xs[-1]), level=level, rate=0.0)
        centre = np.array([r.mean() for r in runs])
        laws = [fitted.law for fitted in state.laws]
        ratios.append(calibration_ratios(laws, xs, centre, state.count, state.noise))
    return conformal_rate(np.concatenate(ratios), level)
