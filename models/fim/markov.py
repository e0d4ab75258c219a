r"""FiM's stochastic Markov model of parallel computation time (Eq. 1-10), and a
synchronized variant.

The model of Bhimani et al., *FiM: Performance Prediction for Parallel Computation
in Iterative Data Processing Applications* (Section 2.1), describes each process as a
two-state chain (active, passive) driven by three hardware parameters: the
utilisation per process :math:`U`, the total cycles :math:`TC` and the stall cycles
:math:`SC`. The base case (Eq. 1-5):

.. math::

    P_{act} = U, \quad P_{a2p} = 1 - P_{act} - 1/TC, \quad
    P_{pass} = SC/TC, \quad P_{p2a} = 1 - P_{pass}, \quad
    P_{s1} = 1 - P_{act} - P_{a2p} = 1/TC.

With :math:`t` processes the state is the number :math:`i` of active ones, and
Eq. 6-8 give the transition probabilities :math:`P_{ij}(t)` as a binomial convolution
(:math:`k` active processes turn passive while passive ones turn active). Eq. 9 takes
the completion probability of a stage as what the all-active row :math:`i = t` leaves
out, and Eq. 10 the time as :math:`T_n = 1/(P_{s_n} F)`.

**Closed form.** In the all-active row no process is passive, so the row of Eq. 6-8
sums to :math:`(P_{act} + P_{a2p})^t = (1 - 1/TC)^t` and Eq. 9 is

.. math::

    P_{s} = 1 - (1 - 1/TC)^t, \qquad
    T = \frac{1}{F \,(1 - (1 - 1/TC)^t)} \approx \frac{TC}{t F}.

:math:`U` and :math:`SC` cancel: the published model is an ideal :math:`1/t` speedup
of :math:`TC/F`, whatever the stalls. :func:`stage_completion_probability` computes
Eq. 9 from the matrix of Eq. 6-8 and the tests check it against this closed form.

**Stage chaining (our reading of Eq. 9).** Eq. 9 conditions stage :math:`s` on stage
:math:`s-1` having completed (:math:`X_{s-1} = n-1`). We read it as stages run one
after the other, each entered only when the previous one completed, so that with
:math:`TC` the cycles of the whole computation split evenly over :math:`n` stages,
each stage completes with the probability of Eq. 9 for :math:`TC/n` cycles and the
expected times of the stages add: :math:`T_n = n / (P_{s}(TC/n)\, F)`. For
:math:`n = 1` this is Eq. 10 exactly; for large :math:`TC` it tends to
:math:`TC/(tF)` for every :math:`n`.

**Synchronized variant.** :func:`synchronized_time` gives each of the :math:`t`
processes its own share :math:`TC/t` of the cycles and its own two-state chain (a
process completes only from the active state); a stage ends when the slowest process
completes, as at a barrier. The expected time is
:math:`E[\max_t] / F` with :math:`E[\max_t] = \sum_{k \ge 0} 1 - (1 - S(k))^t` and
:math:`S(k)` the survival function of one process's phase-type completion time, so the
cost of waiting grows with :math:`t` (like the harmonic number :math:`H_t` when
completion is nearly memoryless), and :math:`U` and :math:`SC` matter.

Examples
--------
>>> base = base_probabilities(utilisation=0.8, total_cycles=100, stall_cycles=10)
>>> round(base.complete, 6)
0.01
>>> round(calculation_time(0.8, 1e9, 1e8, frequency=2e9, processes=4), 4)
0.125
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from scipy import integrate
from scipy.special import comb

__all__ = [
    "CHAINS",
    "BaseProbabilities",
    "base_probabilities",
    "calculation_time",
    "stage_completion_probability",
    "synchronized_time",
    "transition_matrix",
]

# Beyond this many steps the barrier sum is evaluated as an integral (its terms vary
# by a relative 1/TC per step, so Euler-Maclaurin's first correction is exact enough).
_EXACT_SUM_STEPS = 2_000_000


@dataclass(frozen=True)
class BaseProbabilities:
    """Transition probabilities of one process in FiM's base case (Eq. 1-5).

    Attributes
    ----------
    active : float
        :math:`P_{act}`, remain active.
    active_to_passive : float
        :math:`P_{a2p}`, stall.
    passive : float
        :math:`P_{pass}`, remain passive.
    passive_to_active : float
        :math:`P_{p2a}`, resume.
    complete : float
        :math:`P_{s1}`, complete the stage from the active state.
    """

    active: float
    active_to_passive: float
    passive: float
    passive_to_active: float
    complete: float


def _positive_int(name, value) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _real(name, value) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def base_probabilities(utilisation, total_cycles, stall_cycles):
    """Base-case probabilities of one process and one stage (Eq. 1-5).

    Parameters
    ----------
    utilisation : float
        :math:`U`, the fraction of time a process does useful work, in [0, 1].
    total_cycles : float
        :math:`TC`, cycles to process, at least 1.
    stall_cycles : float
        :math:`SC`, stalled cycles, with ``0 <= SC < TC``.

    Returns
    -------
    BaseProbabilities

    Raises
    ------
    ValueError
        If a parameter is outside its range, or if ``U + 1/TC > 1`` (Eq. 2 would
        give a negative probability of stalling).

    Examples
    --------
    >>> p = base_probabilities(0.5, 4, 1)
    >>> p.active, p.active_to_passive, p.passive, p.passive_to_active, p.complete
    (0.5, 0.25, 0.25, 0.75, 0.25)
    """
    u = _real("utilisation", utilisation)
    tc = _real("total_cycles", total_cycles)
    sc = _real("stall_cycles", stall_cycles)
    if not 0.0 <= u <= 1.0:
        raise ValueError(f"utilisation must be in [0, 1], got {u}")
    if tc < 1.0:
        raise ValueError(f"total_cycles must be at least 1, got {tc}")
    if not 0.0 <= sc < tc:
        raise ValueError(f"stall_cycles must satisfy 0 <= SC < TC = {tc}, got {sc}")
    a2p = 1.0 - u - 1.0 / tc
    if a2p < -1e-12:
        raise ValueError(
            f"utilisation + 1/total_cycles must not exceed 1 (Eq. 2), got "
            f"U={u}, TC={tc}"
        )
    a2p = max(a2p, 0.0)
    passive = sc / tc
    return BaseProbabilities(
        active=u,
        active_to_passive=a2p,
        passive=passive,
        passive_to_active=1.0 - passive,
        complete=1.0 - u - a2p,
    )


def transition_matrix(base, processes):
    """Transition probabilities :math:`P_{ij}(t)` between active counts (Eq. 6-8).

    Parameters
    ----------
    base : BaseProbabilities
        The base case of one process (:func:`base_probabilities`).
    processes : int
        :math:`t`, the number of processes.

    Returns
    -------
    numpy.ndarray
        ``(t + 1, t + 1)`` array; entry ``[i, j]`` is the probability of moving from
        ``i`` to ``j`` active processes without completing. Row ``i`` sums to
        :math:`(1 - P_{s1})^i` (what is missing is completion).

    Examples
    --------
    >>> p = base_probabilities(0.5, 4, 1)
    >>> m = transition_matrix(p, 2)
    >>> float(m[1, 1]) == 0.5 * 0.25 + 0.25 * 0.75  # P_act P_pass + P_a2p P_p2a
    True
    """
    t = _positive_int("processes", processes)
    act, a2p = base.active, base.active_to_passive
    pas, p2a = base.passive, base.passive_to_active
    out = np.zeros((t + 1, t + 1))
    for i in range(t + 1):
        for j in range(t + 1):
            total = 0.0
            if i == j:  # Eq. 6
                for k in range(min(i, t - i) + 1):
                    total += (
                        comb(i, k, exact=True)
                        * comb(t - i, t - i - k, exact=True)
                        * act ** (i - k)
                        * a2p**k
                        * pas ** (t - i - k)
                        * p2a**k
                    )
            elif i < j:  # Eq. 7
                for k in range(min(i, t - j) + 1):
                    total += (
                        comb(i, k, exact=True)
                        * comb(t - i, t - j - k, exact=True)
                        * act ** (i - k)
                        * a2p**k
                        * pas ** (t - j - k)
                        * p2a ** (j - i + k)
                    )
            else:  # Eq. 8
                for k in range(min(j, t - i) + 1):
                    total += (
                        comb(i, i - j + k, exact=True)
                        * comb(t - i, t - i - k, exact=True)
                        * act ** (j - k)
                        * a2p ** (i - j + k)
                        * pas ** (t - i - k)
                        * p2a**k
                    )
            out[i, j] = total
    return out


def stage_completion_probability(utilisation, total_cycles, stall_cycles, processes):
    """Completion probability of a stage with ``t`` processes (Eq. 9).

    One minus the all-active row of :func:`transition_matrix`; equal to the closed
    form :math:`1 - (1 - 1/TC)^t` (module docstring), computed here from the matrix.

    Parameters
    ----------
    utilisation, total_cycles, stall_cycles : float
        :math:`U`, :math:`TC`, :math:`SC` as in :func:`base_probabilities`.
    processes : int
        :math:`t`.

    Returns
    -------
    float

    Examples
    --------
    >>> round(stage_completion_probability(0.5, 4, 1, 2), 6)  # 1 - (3/4)**2
    0.4375
    """
    base = base_probabilities(utilisation, total_cycles, stall_cycles)
    matrix = transition_matrix(base, processes)
    return float(1.0 - matrix[-1].sum())


def calculation_time(
    utilisation, total_cycles, stall_cycles, frequency, processes, stages=1
):
    """Calculation time of ``stages`` chained stages as published (Eq. 9-10).

    Parameters
    ----------
    utilisation, total_cycles, stall_cycles : float
        :math:`U`, :math:`TC` (cycles of the whole computation), :math:`SC`.
    frequency : float
        :math:`F`, clock rate in Hz.
    processes : int
        :math:`t`.
    stages : int, default=1
        :math:`n`, stages run one after the other, :math:`TC/n` cycles each (module
        docstring: our reading of Eq. 9).

    Returns
    -------
    float
        Seconds, :math:`n / (P_s F)`; Eq. 10 for one stage.

    Examples
    --------
    >>> calculation_time(0.5, 2.0, 0.0, frequency=1.0, processes=1)  # TC / F
    2.0
    >>> round(calculation_time(0.5, 2.0, 0.0, frequency=1.0, processes=2), 4)
    1.3333
    """
    f = _real("frequency", frequency)
    if f <= 0:
        raise ValueError(f"frequency must be positive, got {f}")
    n = _positive_int("stages", stages)
    t = _positive_int("processes", processes)
    tc = _real("total_cycles", total_cycles) / n
    sc = _real("stall_cycles", stall_cycles) / n
    u = _real("utilisation", utilisation)
    base_probabilities(u, tc, sc)  # validates the per-stage parameters
    # Eq. 9 through its closed form (equal to the matrix, see the tests), written so
    # that it keeps its digits when TC ~ 1e9: 1 - (1 - 1/TC)**t would lose them all.
    p_stage = -math.expm1(t * math.log1p(-1.0 / tc)) if tc > 1 else 1.0
    return n / (p_stage * f)


def _survival_parts(base):
    """Eigen-decomposition of one process's survival ``S(k) = sum c_m lam_m**k``."""
    q = np.array(
        [
            [base.active, base.active_to_passive],
            [base.passive_to_active, base.passive],
        ]
    )
    lam, vec = np.linalg.eig(q)
    start = np.array([1.0, 0.0])  # a process starts active
    coef_right = np.linalg.solve(vec, np.ones(2))
    weights = (start @ vec) * coef_right
    return np.real(lam), np.real(weights)


def synchronized_time(
    utilisation, total_cycles, stall_cycles, frequency, processes, stages=1
):
    """Expected calculation time when every stage waits for its slowest process.

    Each of the ``t`` processes runs the base-case chain on :math:`TC/(n t)` cycles
    (and :math:`SC/(n t)` stall cycles); a stage ends when all have completed.

    Parameters
    ----------
    utilisation, total_cycles, stall_cycles, frequency, processes, stages
        As in :func:`calculation_time`.

    Returns
    -------
    float
        Seconds, :math:`n\\,E[\\max_t]/F` (module docstring).

    Examples
    --------
    >>> one = synchronized_time(0.9, 1e6, 1e5, frequency=1e6, processes=1)
    >>> four = synchronized_time(0.9, 1e6, 1e5, frequency=1e6, processes=4)
    >>> 0.25 < four / one < 1.0  # faster than one process, slower than ideal
    True
    """
    f = _real("frequency", frequency)
    if f <= 0:
        raise ValueError(f"frequency must be positive, got {f}")
    n = _positive_int("stages", stages)
    t = _positive_int("processes", processes)
    share = _real("total_cycles", total_cycles) / (n * t)
    stalls = _real("stall_cycles", stall_cycles) / (n * t)
    base = base_probabilities(_real("utilisation", utilisation), share, stalls)
    lam, weights = _survival_parts(base)

    def survival(k):
        k = np.asarray(k, dtype=float)[..., None]
        return np.clip(np.sum(weights * lam**k, axis=-1), 0.0, 1.0)

    def barrier(k):
        # 1 - (1 - S)**t without cancellation when S is small
        s = survival(k)
        return -np.expm1(t * np.log1p(-np.minimum(s, 1.0 - 2.0**-53)))

    slow = float(np.max(np.abs(lam)))
    # steps until even the slowest of t has completed with probability 1 - 1e-15
    horizon = math.ceil((math.log(1e-15) - math.log(t)) / math.log(slow)) + 1
    if horizon <= _EXACT_SUM_STEPS:
        expected = float(np.sum(barrier(np.arange(horizon))))
    else:
        # exact over the first steps, where a negative eigenvalue still alternates;
        # then an integral of the decaying positive modes (Euler-Maclaurin)
        head = 1000
        expected = float(np.sum(barrier(np.arange(head))))
        lam = np.where(lam > 0, lam, 0.0)
        value, _ = integrate.quad(barrier, float(head), float(horizon), limit=200)
        expected += value + 0.5 * float(barrier(float(head)))
    return n * expected / f


#: FiM's Markov chains by name (``variant`` of :class:`~scaleprobe.models.FiMCal` and
#: :class:`~scaleprobe.models.FiM`): the published chain and the synchronized one.
CHAINS = {"published": calculation_time, "synchronized": synchronized_time}
