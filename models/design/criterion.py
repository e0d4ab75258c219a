"""The design criterion: expected log width of the target's interval, per cost.

The interval at the target is the union of the plausible laws' intervals (each law's
prediction plus or minus ``z`` standard errors of its coefficients): it is wide
because the laws disagree there, or because their coefficients are uncertain, or
both. A planned measurement narrows it in the two ways at once:

- *discrimination*: where the plausible laws predict values further apart than the
  noise of the new measurement allows, the measurement rejects all but the true
  law's neighbours. For each law taken as the truth in turn (equal weights: each
  held its held-out check), the laws that would survive are those whose
  prediction at the planned count lies within ``z`` combined standard errors of the
  truth's;
- *noise reduction*: the new measurement adds to every surviving law's information
  matrix, so each law's own interval narrows, repeats included.

The expected log width is the mean over the laws taken as truth of the width of
the survivors' union. A candidate's score is the expected reduction of that log
width per core-second it is predicted to cost. A plan is built greedily: the best
candidate is added, the widths recomputed with it planned, until the budget is
spent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..profiles.fit import FLOOR
from ..profiles.model import interval_scale

__all__ = [
    "Candidate",
    "Planned",
    "expected_log_width",
    "log_width",
    "separation",
    "target_interval",
]


@dataclass(frozen=True)
class Candidate:
    """A point a design may plan: ``repeats`` more runs at count ``x``.

    Parameters
    ----------
    x : float
        The count (nodes or ranks).
    repeats : int, default=1
    new : bool, default=True
        False for a repeat of a measured count.
    coords : dict, default={}
        Any other coordinates the point carries (for the spec it is written to).
    """

    x: float
    repeats: int = 1
    new: bool = True
    coords: dict = field(default_factory=dict)


def _bounds(state, informations=None, memo=None):
    """Centre, lower and upper log bounds ``(laws,)`` of every law's interval at
    the target: its prediction plus or minus ``z`` standard errors of its
    coefficients (``informations``: with planned points added; ``memo``: a dict
    that keeps what does not change with them, the centres and gradients)."""
    memo = {} if memo is None else memo
    if "target" not in memo:
        target = np.array([state.target])
        memo["target"] = (
            np.array([float(law.log_predict(target)[0]) for law in state.laws]),
            [law.gradient(target)[0] for law in state.laws],
        )
    centre, gradients = memo["target"]
    if informations is None:
        informations = [law.information for law in state.laws]
    var = np.array(
        [
            g @ np.linalg.pinv(info) @ g
            for g, info in zip(gradients, informations, strict=True)
        ]
    )
    half = state.z * state.noise * np.sqrt(np.maximum(var, 0.0))
    return centre, centre - half, centre + half


def _band(state, bounds, alive=None, reach=None, runs=None):
    """Log bounds of the interval at the target of the laws ``alive``.

    The union of their intervals, widened as the profiles' calibrated intervals
    are when a law with a trend is among them: at least
    :data:`~scaleprobe.models.profiles.fit.FLOOR` per doubling ``d`` from the
    largest count measured (or planned: ``reach``) to the target either side, and
    never narrower than ``kappa (spread + 0.05 d + sqrt(d) + se (1 + d))`` either
    side of the middle of the laws' predictions, with ``spread`` their range,
    ``se`` the standard error of the centre at that largest count (of its
    ``runs``, measured and planned) and ``kappa`` the series' factor
    (:func:`~scaleprobe.models.design.conformal_rate`): laws that agree by
    construction still do not know how their trend goes on, and a larger count
    shortens the way to the target. The level law alone has no trend to carry:
    its interval is its noise's.
    """
    centre, lower, upper = bounds
    alive = np.ones(centre.size, dtype=bool) if alive is None else alive
    low, high = float(lower[alive].min()), float(upper[alive].max())
    if not any(law.law.size > 1 for law, a in zip(state.laws, alive, strict=True) if a):
        return low, high
    reach = float(np.max(state.x)) if reach is None else float(reach)
    doublings = max(math.log2(state.target / reach), 0.0)
    low, high = low - FLOOR * doublings, high + FLOOR * doublings
    top, bottom = float(centre[alive].max()), float(centre[alive].min())
    spread = top - bottom
    standard = state.standard if runs is None else state.noise / math.sqrt(runs)
    scale = interval_scale("combined", spread, doublings, standard)
    half, middle = state.rate * float(scale), (top + bottom) / 2
    return min(low, middle - half), max(high, middle + half)


def target_interval(state):
    """The interval at the target now: ``(lower, upper)`` of the union of the
    plausible laws' intervals, widened with the distance to the target
    (:func:`_band`), in the metric's units.

    Parameters
    ----------
    state : DesignState

    Returns
    -------
    tuple of float
    """
    lower, upper = _band(state, _bounds(state))
    return float(np.exp(lower)), float(np.exp(upper))


def log_width(state, laws=None, informations=None):
    """Log of the ratio upper / lower of the union of the laws' intervals.

    Parameters
    ----------
    state : DesignState
    laws : sequence of int, default=None
        Indices of the laws in ``state.laws`` to unite (all by default).
    informations : list of ndarray, default=None
        Information matrices to use instead of the laws' own (planned points).

    Returns
    -------
    float
    """
    alive = np.zeros(len(state.laws), dtype=bool)
    alive[np.arange(len(state.laws)) if laws is None else np.asarray(laws, int)] = True
    lower, upper = _band(state, _bounds(state, informations), alive)
    return upper - lower


@dataclass(frozen=True)
class Planned:
    """What a set of planned points does to the state, kept for quick extension.

    Attributes
    ----------
    informations : list of ndarray
        Each plausible law's information matrix with the planned points added.
    survive : ndarray of shape (laws, laws)
        ``survive[j, k]``: law ``k`` survives the planned points if law ``j`` is
        true.
    points : tuple of Candidate
    reach : float
        The largest count measured or planned.
    runs : float
        The runs at ``reach``, measured and planned.
    memo : dict
        What every plan grown from the same :meth:`start` shares: each law's
        prediction, variance and gradient at a count and at the target. A plan is
        extended with the state it started from.
    """

    informations: list
    survive: np.ndarray
    points: tuple = ()
    reach: float = 0.0
    runs: float = 1.0
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def start(cls, state):
        """Nothing planned yet."""
        size = len(state.laws)
        infos = [law.information for law in state.laws]
        survive = np.ones((size, size), dtype=bool)
        return cls(infos, survive, (), float(np.max(state.x)), float(state.count[-1]))

    def _at(self, state, x):
        """Every law's log prediction, variance (its own information) and
        gradient at ``x``: the same for every plan, so kept in ``memo``."""
        key = ("at", float(x))
        if key not in self.memo:
            point = np.array([float(x)])
            self.memo[key] = (
                np.array([law.log_predict(point)[0] for law in state.laws]),
                np.array([law.variance(point)[0] for law in state.laws]),
                [law.gradient(point)[0] for law in state.laws],
            )
        return self.memo[key]

    def extend(self, state, candidate):
        """The plan with one more point.

        Parameters
        ----------
        state : DesignState
        candidate : Candidate

        Returns
        -------
        Planned
        """
        centre, var, gradients = self._at(state, candidate.x)
        noise = state.noise**2 * (1.0 / candidate.repeats + var)
        allowed = state.z * np.sqrt(noise[:, None] + noise[None, :])
        survive = self.survive & (np.abs(centre[:, None] - centre[None, :]) <= allowed)
        infos = [
            info + candidate.repeats * np.outer(g, g)
            for info, g in zip(self.informations, gradients, strict=True)
        ]
        points = (*self.points, candidate)
        reach, runs = self.reach, self.runs
        if candidate.x > self.reach:  # the new largest count, known to its runs
            reach, runs = candidate.x, candidate.repeats
        elif candidate.x == self.reach:
            runs = self.runs + candidate.repeats
        return Planned(infos, survive, points, reach, runs, self.memo)

    def log_width(self, state):
        """Expected log width at the target once the planned points are measured."""
        bounds = _bounds(state, self.informations, self.memo)
        widths = [
            np.subtract(*_band(state, bounds, alive, self.reach, self.runs)[::-1])
            for alive in self.survive  # one row per law taken as the truth
        ]
        return float(np.mean(widths))


def expected_log_width(state, planned=()):
    """Expected log width at the target once ``planned`` points are measured.

    Parameters
    ----------
    state : DesignState
    planned : sequence of Candidate

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from scaleprobe.models.design import design_state
    >>> state = design_state([1, 2, 4], [[1.0, 1.02], [0.99, 1.01], [1.0, 1.01]], 4)
    >>> now = expected_log_width(state)
    >>> later = expected_log_width(state, [Candidate(1.0, repeats=6, new=False)])
    >>> round(later / now, 2)
    0.71
    """
    plan = Planned.start(state)
    for candidate in planned:
        plan = plan.extend(state, candidate)
    return plan.log_width(state)


def separation(state, x, repeats=1):
    """The pair of plausible laws a measurement at ``x`` tells apart best.

    Parameters
    ----------
    state : DesignState
    x : float
    repeats : int, default=1

    Returns
    -------
    tuple or None
        ``(law_a, law_b, ratio_at_x, ratio_at_target, noise_widths)``: the two
        laws' names, how far apart they predict at ``x`` and at the target (as
        ratios) and their gap at ``x`` in standard errors of the measurement;
        None with fewer than two plausible laws.
    """
    if len(state.laws) < 2:
        return None
    point = np.array([float(x)])
    target = np.array([state.target])
    best = None
    for i, a in enumerate(state.laws):
        for b in state.laws[i + 1 :]:
            gap = abs(float(a.log_predict(point)[0] - b.log_predict(point)[0]))
            var = 2.0 / repeats + a.variance(point)[0] + b.variance(point)[0]
            score = gap / (state.noise * math.sqrt(var))
            far = abs(float(a.log_predict(target)[0] - b.log_predict(target)[0]))
            if best is None or score > best[-1]:
                best = (a.name, b.name, math.exp(gap), math.exp(far), score)
    return best
