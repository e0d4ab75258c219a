r"""FiM's computation where the training measured it on both sides of the cache.

Eq. 11 carries the cycles per unit of work as a function of the application
parameters: a size law in which a larger size costs more per unit (its data spilling
from the cache) charges that cost to the size, on any number of processes. What a
rank's cost per unit follows is the *load* of its cache, the working sets of the
ranks computing at once on it: divided over more processes, a large size's data come
back into the cache. NPB IS on a 2-core host with a 35.8 MiB cache (two
measurements, medians of three runs, ns per key over all ranks): class A 137-146 on
one rank (a load of 192 MiB), 52-93 on four (96 MiB); class B 145-149 on one rank
(768 MiB), 55-67 on 16 (96 MiB) and 49-64 on 32 (48 MiB). FiM-Cal's power law of
the size put class B on 16 and 32 ranks 78-102 % over.

When the training's loads lie on both sides of the cache, FiM can read the cost per
unit as a function of the load. The *load law* takes the total cycles as

.. math::

    TC(x, q) = (\beta \cdot x)\; c\big(L(x, q)\big), \qquad \beta \ge 0,

the total cycles (counted, or CPU time times clock), as the work proportional to the
application parameters (relative non-negative least squares) times the cycles per
unit of work :math:`c` at the load :math:`L`: the
median at each training load, interpolated in the logarithm of the load and held
flat below the smallest load measured. Beyond the largest, :math:`L_n`, the data of
a load :math:`L` larger than the cache :math:`C` are found in it by a share
:math:`C/L` of random accesses, so the cost per unit rises towards that of a miss
as the share falls (the *hit law*):

.. math::

    c(L) = c_{\mathrm{hit}} + \Delta\,(1 - C/L) \quad (L > C),
    \qquad c(L) = c(L_n) + \Delta\,C\,(1/L_n - 1/L) \quad (L > L_n),

with :math:`\Delta \ge 0`, what a miss costs over a hit per unit of work, fitted
by least squares on the training loads out of the cache (two or more; with fewer
the cost is held flat beyond :math:`L_n`, as it is when the costs there do not
rise). It can rise no further than :math:`c(L_n) + \Delta C/L_n`, every access a
miss: :meth:`LoadLaw.seconds` bounds a prediction between that and the flat cost.
NPB IS in seven record sets of one 2-core host (medians of three runs, trained on
2**16, 2**20 and 2**23 keys on 1, 2, 4 ranks: loads 100 and 201 MB out of a 33.6 MB
cache): class B's cost per key at 805 MB (1 and 2 ranks) over that at 201 MB (8
ranks) was 1.09 to 1.42, 1.21 on average; the hit law put it at 1.15 to 1.26, 1.21
on average, where held flat it is 1 (at 402 MB, 4 ranks: 1.12 to 1.35 measured,
1.10 to 1.17 by the law). The bound of every access a miss was 1.20 to 1.35, and
the measured cost went beyond it in two sets (1.34 and 1.42 against 1.33 and 1.35):
further out more than the cache misses (the translation of addresses too), and
FiM's interval is widened past it by the training's spread about the fit. The time
is FiM's Markov
model's for :math:`q` processes (the published chain,
:func:`~scaleprobe.models.fim.markov.calculation_time`, or the synchronized one,
as FiM's ``variant`` says), scaled by the median ratio of the measured times to
it (the role of Eq. 12's :math:`\alpha`). It is taken when it predicts the
held-out largest process count better than FiM-Cal (error weighted by the measured
time, which the large sizes carry). Where the training stayed on one side of the
cache there is nothing to read, and FiM warns instead
(:class:`~scaleprobe.models.MemoryRegimeWarning`).
"""

from __future__ import annotations

import numpy as np

from ..core.warnings import InsufficientDataWarning, quiet, warn
from ..laws.lsq import nnls
from .markov import CHAINS

__all__ = ["LoadLaw", "fit_computation"]

_TINY = 1e-300
#: Held-out error (mean absolute log, weighted by time) beyond which neither FiM-Cal
#: nor the load law follows the computation in the processes, when also beyond three
#: times the scatter of repeated runs.
UNEXPLAINED = np.log(1.25)


def _run_scatter(points, seconds):
    """Median absolute log deviation of repeated runs from their point's median (0
    without repeated runs): the noise of the measurements themselves."""
    _, point = np.unique(points, axis=0, return_inverse=True)
    point = point.ravel()
    logs = np.log(np.maximum(seconds, _TINY))
    deviations = []
    for index in np.unique(point):
        runs = logs[point == index]
        if runs.size > 1:
            deviations.extend(np.abs(runs - np.median(runs)))
    return float(np.median(deviations)) if deviations else 0.0


def _work(x, cycles):
    """Non-negative ``beta`` of the work ``x @ beta`` relative to ``cycles``."""
    scale = np.maximum(cycles, _TINY)[:, None]
    beta, _ = nnls(x / scale, np.ones(len(x)))
    return beta


class LoadLaw:
    """Total cycles as the work times the cycles per unit of work at the load.

    Parameters
    ----------
    work : ndarray of shape (p,)
        :math:`\\beta`, non-negative, one per application parameter.
    knots : ndarray
        Logarithms of the distinct training loads (bytes), increasing.
    costs : ndarray
        Logarithm of the median cycles per unit of work at each knot.
    variant : {"published", "synchronized"}, default="published"
        The Markov model that turns the cycles into time, as
        :class:`~scaleprobe.models.FiMCal`'s ``variant``: the published chain
        (Eq. 9-10) or a stage that waits for the slowest process.
    miss : float, default=0.0
        :math:`\\Delta` of the hit law, cycles per unit of work (0: the cost held
        flat beyond the largest knot).
    cache : float, optional
        :math:`C`, bytes; needed when ``miss`` is positive.

    Examples
    --------
    >>> x = np.array([[1e6], [1e6], [1e8]])
    >>> law = LoadLaw.fit(x, np.array([20e6, 20e6, 8e9]), np.array([1e6, 1e6, 1e8]))
    >>> np.round(law.cycles(np.array([[1e9]]), np.array([1e7])) / 1e9, 1).tolist()
    [40.0]

    Costs of 60 and 70 cycles per unit at 200 and 400 MB, out of a 100 MB cache: a
    miss costs 40 more than a hit, so 800 MB costs 75, and no load more than 80.

    >>> law = LoadLaw.fit(x[:2] * 1e3, np.array([60e9, 70e9]), np.array([2e8, 4e8]),
    ...                   cache=1e8)
    >>> scale = 60.0 / law.cost(np.array([2e8]))[0]  # the work's unit is the fit's
    >>> round(float(law.miss * scale), 3)
    40.0
    >>> [round(float(law.cost(np.array([8e8]), bound)[0] * scale), 3)
    ...  for bound in (None, "lower", "upper")]
    [75.0, 70.0, 80.0]
    """

    def __init__(self, work, knots, costs, variant="published", miss=0.0, cache=None):
        if variant not in CHAINS:
            raise ValueError(
                f"variant must be one of {sorted(CHAINS)}, got {variant!r}"
            )
        if not (miss >= 0 and (miss == 0 or (cache is not None and cache > 0))):
            raise ValueError(
                f"miss must be non-negative, with a positive cache when positive; "
                f"got miss={miss!r}, cache={cache!r}"
            )
        self.work = np.asarray(work, dtype=float)
        self.knots = np.asarray(knots, dtype=float)
        self.costs = np.asarray(costs, dtype=float)
        self.variant = variant
        self.miss = float(miss)
        self.cache = None if cache is None else float(cache)

    @classmethod
    def fit(cls, x, cycles, loads, variant="published", cache=None):
        """Fit the work and the cost per unit of work of training rows.

        Parameters
        ----------
        x : ndarray of shape (n, p)
            Application parameters.
        cycles : ndarray of shape (n,)
            Total cycles.
        loads : ndarray of shape (n,)
            The cache's load of every row, bytes.
        variant : {"published", "synchronized"}, default="published"
            The Markov model of the time (see the class).
        cache : float, optional
            The cache, bytes: with two or more training loads beyond it, the hit
            law's :math:`\\Delta` is fitted on them; without, the cost is held flat
            beyond the largest load.

        Returns
        -------
        LoadLaw
        """
        logs = np.round(np.log(np.maximum(loads, _TINY)), 6)
        knots = np.unique(logs)
        # the work first as if every unit cost the same, then again on the cycles
        # at the cost of each row's load: two passes settle it
        factor = np.ones(len(x))
        for _ in range(2):
            work = _work(x, cycles / factor)
            units = np.maximum(x @ work, _TINY)
            costs = np.log(np.maximum(cycles, _TINY) / units)
            medians = np.array([np.median(costs[logs == k]) for k in knots])
            factor = np.exp(np.interp(logs, knots, medians) - medians.mean())
        miss = _miss(knots, medians, cache)
        return cls(work, knots, medians, variant, miss, cache if miss else None)

    def state(self):
        """The law's parameters, as ``LoadLaw(**state)`` restores it (a model
        file keeps them).

        Returns
        -------
        dict
            ``work``, ``knots``, ``costs``, ``variant``, ``miss`` and ``cache``.
        """
        return {
            "work": self.work,
            "knots": self.knots,
            "costs": self.costs,
            "variant": self.variant,
            "miss": self.miss,
            "cache": self.cache,
        }

    def cost(self, loads, bound=None):
        """Cycles per unit of work at the cache loads ``loads`` (bytes).

        Parameters
        ----------
        loads : ndarray of shape (n,)
        bound : {None, "lower", "upper"}, default=None
            Beyond the largest training load: the hit law (None), the cost held
            flat (``"lower"``) or every access a miss (``"upper"``).

        Returns
        -------
        ndarray of shape (n,)
        """
        logs = np.log(np.maximum(np.asarray(loads, dtype=float), _TINY))
        cost = np.exp(np.interp(logs, self.knots, self.costs))
        if self.miss == 0 or bound == "lower":
            return cost
        beyond = logs > self.knots[-1]
        hits = self.cache * np.exp(-self.knots[-1])  # the share at the largest load
        left = 0.0 if bound == "upper" else self.cache * np.exp(-logs[beyond])
        cost[beyond] += self.miss * (hits - left)
        return cost

    def cycles(self, x, loads, bound=None):
        """Total cycles of rows ``x`` at the cache loads ``loads`` (bytes).

        Parameters
        ----------
        x : ndarray of shape (n, p)
        loads : ndarray of shape (n,)
        bound : {None, "lower", "upper"}, default=None
            As :meth:`cost` takes it.

        Returns
        -------
        ndarray of shape (n,)
        """
        return (x @ self.work) * self.cost(loads, bound)

    def seconds(self, x, q, loads, frequency, bound=None):
        """Computation time of rows on ``q`` processes, s (the Markov model of
        their total cycles: ``variant``'s, with :math:`U = 1 - 1/TC` and no stall
        cycles, clipped for the synchronized chain as FiM-Cal clips it).

        Parameters
        ----------
        x : ndarray of shape (n, p)
        q : ndarray of shape (n,)
        loads : ndarray of shape (n,)
        frequency : float
        bound : {None, "lower", "upper"}, default=None
            As :meth:`cost` takes it.

        Returns
        -------
        ndarray of shape (n,)
        """
        total = np.maximum(self.cycles(x, loads, bound), 2.0)
        counts = np.maximum(np.rint(q), 1)
        utilisation = 1.0 - 1.0 / total
        if self.variant == "synchronized":
            # each of t processes runs TC / t cycles, whose chain allows at most
            # U = 1 - t / TC (Eq. 2)
            utilisation = np.clip(utilisation, 0.0, np.maximum(1.0 - counts / total, 0))
        model = CHAINS[self.variant]
        return np.array(
            [
                model(u, c, 0.0, frequency, int(t))
                for u, c, t in zip(utilisation, total, counts, strict=True)
            ]
        )


def _miss(knots, medians, cache):
    """The hit law's :math:`\\Delta`: the least-squares slope of the costs per unit at
    the knots out of the cache on the share of misses, :math:`1 - C/L` (0 with fewer
    than two such knots, or a slope that is not positive)."""
    if cache is None or not cache > 0:
        return 0.0
    out = np.exp(knots) > cache
    if np.count_nonzero(out) < 2:
        return 0.0
    share = 1.0 - cache * np.exp(-knots[out])
    slope = np.polyfit(share, np.exp(medians[out]), 1)[0]
    return max(float(slope), 0.0)


def _weighted_error(predicted, measured):
    """Mean absolute log error weighted by the measured times."""
    logs = np.abs(np.log(np.maximum(predicted, _TINY) / np.maximum(measured, _TINY)))
    return float(np.average(logs, weights=np.maximum(measured, _TINY)))


def _cycles(hardware, seconds, q, frequency):
    """Total cycles: the counters' (or CPU time's), else those of the time."""
    if hardware is not None:
        return np.maximum(hardware[:, 1], 2.0)
    return np.maximum(seconds * q * frequency, 2.0)


def _fit_law(x, cycles, loads, q, seconds, frequency, variant, cache):
    """The load law of training rows, its scale (Eq. 12's alpha) the median ratio
    of their measured to modelled times."""
    law = LoadLaw.fit(x, cycles, loads, variant, cache)
    timed = seconds > 0  # a row timed at zero says nothing of the scale
    if not timed.any():
        return law
    modelled = law.seconds(x[timed], q[timed], loads[timed], frequency)
    ratio = np.log(seconds[timed] / modelled)
    scaled = law.work * np.exp(np.median(ratio))
    return LoadLaw(scaled, law.knots, law.costs, variant, law.miss, law.cache)


def _held_out(make, inputs, seconds, hardware, q, loads, cache):
    """Errors of FiM-Cal and of the load law at the largest count, fitted on the
    smaller ones: ``{"none": e, "load": e}``."""
    held, rest = q == q.max(), q < q.max()
    with quiet(), np.errstate(all="ignore"):  # thread-safe, unlike catch_warnings
        alone = make().fit(
            inputs[rest],
            seconds[rest],
            hardware=None if hardware is None else hardware[rest],
        )
    frequency = alone.frequency
    part = None if hardware is None else hardware[rest]
    cycles = _cycles(part, seconds[rest], q[rest], frequency)
    law = _fit_law(
        inputs[rest, :-1],
        cycles,
        loads[rest],
        q[rest],
        seconds[rest],
        frequency,
        alone.variant,
        cache,
    )
    predicted = law.seconds(inputs[held, :-1], q[held], loads[held], frequency)
    return {
        "none": _weighted_error(alone.predict(inputs[held]), seconds[held]),
        "load": _weighted_error(predicted, seconds[held]),
    }


def fit_computation(make, data, memory):
    """FiM's computation: FiM-Cal, and the load law when it predicts better.

    Parameters
    ----------
    make : callable
        ``make() -> FiMCal``, unfitted.
    data : tuple
        ``(inputs, seconds, hardware, q)``: FiM-Cal's ``X`` (application
        parameters, then the process count), its times (per iteration), the
        hardware parameters ``(U, TC, SC)`` or None, and the process counts.
    memory : dict or None
        :class:`~scaleprobe.models.FiM`'s ``memory_`` (its ``loads``: the
        training rows' loads of the cache, bytes).

    Returns
    -------
    tuple
        ``(computation, law, errors)``: the fitted FiM-Cal, the :class:`LoadLaw`
        taken or None, and the held-out errors (empty when the load law was not
        considered).

    Warns
    -----
    InsufficientDataWarning
        When the load law was considered and neither it nor FiM-Cal predicts the
        held-out count within :data:`UNEXPLAINED` and three times the scatter of
        repeated runs.
    """
    inputs, seconds, hardware, q = data
    loads = None if memory is None else memory["loads"]
    considered = (
        memory is not None
        and inputs.shape[1] > 1
        and np.unique(q).size >= 2
        and memory["trained"][0] <= memory["cache"] < memory["trained"][1]
    )
    cache = None if memory is None else memory["cache"]
    errors = {}
    if considered:
        errors = _held_out(make, inputs, seconds, hardware, q, loads, cache)
    # a tie keeps FiM-Cal, the published model
    take = bool(errors) and errors["load"] < errors["none"] - 1e-9
    computation = make().fit(inputs, seconds, hardware=hardware)
    law = None
    if take:
        frequency = computation.frequency
        cycles = _cycles(hardware, seconds, q, frequency)
        variant = computation.variant
        law = _fit_law(
            inputs[:, :-1], cycles, loads, q, seconds, frequency, variant, cache
        )
    best = min(errors.values(), default=0.0)
    if best > max(UNEXPLAINED, 3.0 * _run_scatter(inputs, seconds)):
        warn(
            "neither FiM-Cal's laws of the processes nor the load of the cache follow "
            f"the computation: fitted on the smaller counts, they put it on "
            f"{q.max():g} processes {errors['none']:.2f} and {errors['load']:.2f} off "
            "(mean absolute log error weighted by time), and the computation beyond "
            f"{q.max():g} processes cannot be told from these runs; measure more "
            "process counts",
            InsufficientDataWarning,
            stacklevel=3,
        )
    return computation, law, errors
