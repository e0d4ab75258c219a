"""Rank candidate points and plan the ones a budget affords, with their reasons."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .criterion import Candidate, Planned, expected_log_width, separation

__all__ = ["Design", "Ranked", "narrowing", "plan_design", "rank_candidates"]


def narrowing(gain):
    """The share by which a gain narrows the width at the target.

    Parameters
    ----------
    gain : float
        An expected reduction of the log width (:attr:`Ranked.gain`).

    Returns
    -------
    float
        ``1 - exp(-gain)``: 0.1 for a width 10 % narrower.

    Examples
    --------
    >>> round(narrowing(0.1053605), 6)
    0.1
    """
    return -math.expm1(-gain)


# A gain below this (log width) is no gain: the laws and noise say nothing more.
_NO_GAIN = 1e-6
# Rounding of the cost law's exponentials must not refuse a point that fits exactly.
_SLACK = 1.0 + 1e-9


@dataclass(frozen=True)
class Ranked:
    """One candidate, scored.

    Attributes
    ----------
    candidate : Candidate
    gain : float
        Expected reduction of the log width at the target.
    core_seconds, wall_seconds : float
        Its predicted cost (all its repeats).
    reason : str
        Why it helps, in plain words.
    credit : float, default=None
        The gain it is ranked by, per core-second: what it adds on top of the
        largest single gain on offer, with the cost of both (:func:`rank_candidates`);
        None: its own gain per core-second.
    """

    candidate: Candidate
    gain: float
    core_seconds: float
    wall_seconds: float
    reason: str
    credit: float | None = None

    @property
    def score(self):
        """Gain per core-hour it is ranked by."""
        own = self.gain / self.core_seconds if self.credit is None else self.credit
        return 3600.0 * own


@dataclass(frozen=True)
class Design:
    """A ranking of candidates and the plan a budget affords.

    Attributes
    ----------
    ranking : list of Ranked
        Every candidate, best gain per cost first (as the first pick sees them).
    plan : list of Ranked
        The points picked, in order, each scored given the ones before.
    width_now, width_planned : float
        The interval's width at the target (upper / lower) now, and expected once
        the plan is measured.
    spent_wall, spent_core : float
        Predicted cost of the plan, wall seconds and core-seconds.
    """

    ranking: list
    plan: list
    width_now: float
    width_planned: float
    spent_wall: float
    spent_core: float


def _nodes(x):
    return f"{x:g} node" + ("" if x == 1 else "s")


def _a(x):
    """The article a count takes as it is read out: "an 8-node", "an 11-node".

    >>> [f"{_a(x)} {x:g}" for x in (1, 8, 11, 18, 80, 110, 1100, 11000, 16)]
    ['a 1', 'an 8', 'an 11', 'an 18', 'an 80', 'a 110', 'a 1100', 'an 11000', 'a 16']
    """
    digits = f"{x:.0f}"
    eleven = len(digits) % 3 == 2 and digits[:2] in ("11", "18")
    return "an" if digits.startswith("8") or eleven else "a"


def _reason(state, candidate, gain):
    """Why a candidate helps, in plain words."""
    runs = "one run" if candidate.repeats == 1 else f"{candidate.repeats} runs"
    where = f"at {_nodes(state.target)}"
    if gain <= _NO_GAIN:
        return f"{runs} at {_nodes(candidate.x)} would not narrow the interval {where}"
    pair = separation(state, candidate.x, candidate.repeats)
    if pair is not None and pair[-1] > state.z:
        a, b, near, far, widths = pair
        return (
            f"{_a(candidate.x)} {candidate.x:g}-node run separates the laws {a} and "
            f"{b}, which disagree by {far:.2g}x {where} (by {near:.2g}x here, "
            f"{widths:.1f} noise widths)"
        )
    if len(state.laws) == 1:
        what = f"the one plausible law ({state.laws[0].name})"
    else:
        what = f"the {len(state.laws)} plausible laws"
    kind = "a repeat:" if not candidate.new else "a new count:"
    return (
        f"{kind} {runs} at {_nodes(candidate.x)} pins down the coefficients of "
        f"{what} against the run-to-run noise ({100 * state.noise:.2g} %): the "
        f"width {where} shrinks by {100 * narrowing(gain):.2g} %"
    )


def rank_candidates(state, candidates, cost, planned=None):
    """Score every candidate by its expected gain per predicted cost, looking one
    step past the largest single gain.

    The candidate with the largest gain ``g`` is scored by its own gain per cost;
    every other candidate ``c`` by the gain of ``g`` and ``c`` measured together
    per the cost of both: a cheap point is credited only with what it still adds
    once the step that narrows the interval most is taken (a greedy ratio alone
    spends on cheap points whose gain a farther count would make up anyway).

    Parameters
    ----------
    state : DesignState
    candidates : sequence of Candidate
    cost : CostLaw
    planned : Planned, default=None
        Points already planned (their effect is counted first).

    Returns
    -------
    list of Ranked
        Best score first; candidates without gain last, cheapest first.
    """
    planned = Planned.start(state) if planned is None else planned
    base = planned.log_width(state)
    ranked = []
    for candidate in candidates:
        gain = base - planned.extend(state, candidate).log_width(state)
        core = float(cost.core_seconds(candidate.x)) * candidate.repeats
        wall = float(cost.wall_seconds(candidate.x)) * candidate.repeats
        reason = _reason(state, candidate, gain)
        ranked.append(Ranked(candidate, max(gain, 0.0), core, wall, reason))
    ranked = _look_past_the_largest(state, ranked, planned, base)
    return sorted(
        ranked,
        key=lambda r: (-(r.score if r.gain > _NO_GAIN else 0.0), r.core_seconds),
    )


def _look_past_the_largest(state, ranked, planned, base):
    """Credit every candidate but the one of the largest gain with the gain of
    both together per the cost of both."""
    if not ranked or max(r.gain for r in ranked) <= _NO_GAIN:
        return ranked
    largest = max(ranked, key=lambda r: r.gain)
    after = planned.extend(state, largest.candidate)
    out = []
    for r in ranked:
        if r is largest:
            out.append(replace(r, credit=r.gain / r.core_seconds))
            continue
        both = base - after.extend(state, r.candidate).log_width(state)
        credit = max(both, 0.0) / (r.core_seconds + largest.core_seconds)
        out.append(replace(r, credit=credit))
    return out


def plan_design(state, candidates, cost, *, wall_budget=None, core_budget=None):
    """Pick points greedily, best gain per cost first, until the budget is spent.

    Parameters
    ----------
    state : DesignState
    candidates : sequence of Candidate
        A repeat may be picked several times; a new count once (then it is
        measured, and its further runs are repeats).
    cost : CostLaw
    wall_budget, core_budget : float, default=None
        Wall seconds and core-seconds the plan may spend (None: no limit of that
        kind; at least one must be given).

    Returns
    -------
    Design
        No point whose predicted cost exceeds what remains is picked; the plan
        stops when no affordable candidate narrows the interval.

    Examples
    --------
    >>> from scaleprobe.models.design import CostLaw, design_state
    >>> state = design_state([1, 2, 4], [[1.0, 1.02], [0.99, 1.01], [1.0, 1.01]], 64)
    >>> cost = CostLaw.fit([1, 2, 4], [1, 2, 4], [60.0, 60.0, 60.0])
    >>> design = plan_design(state, [Candidate(1, new=False), Candidate(8)], cost,
    ...                      wall_budget=600)
    >>> [r.candidate.x for r in design.plan]
    [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
    """
    if wall_budget is None and core_budget is None:
        raise ValueError("give a wall_budget or a core_budget (seconds), got neither")
    wall_left = math.inf if wall_budget is None else float(wall_budget)
    core_left = math.inf if core_budget is None else float(core_budget)
    pool, planned, plan = list(candidates), Planned.start(state), []
    ranking = rank_candidates(state, pool, cost)
    while pool:
        within = [
            c
            for c in pool
            if float(cost.wall_seconds(c.x)) * c.repeats <= wall_left * _SLACK
            and float(cost.core_seconds(c.x)) * c.repeats <= core_left * _SLACK
        ]
        ranked = rank_candidates(state, within, cost, planned)
        affordable = [r for r in ranked if r.gain > _NO_GAIN]
        if not affordable:
            break
        pick = affordable[0]
        plan.append(pick)
        planned = planned.extend(state, pick.candidate)
        wall_left -= pick.wall_seconds
        core_left -= pick.core_seconds
        if pick.candidate.new:
            pool = [_as_repeat(c, pick.candidate) for c in pool]
    return Design(
        ranking=ranking,
        plan=plan,
        width_now=math.exp(expected_log_width(state)),
        width_planned=math.exp(planned.log_width(state)),
        spent_wall=float(sum(r.wall_seconds for r in plan)),
        spent_core=float(sum(r.core_seconds for r in plan)),
    )


def _as_repeat(candidate, picked):
    """Once a new count is planned, more runs there are repeats."""
    if candidate is picked or (candidate.new and np.isclose(candidate.x, picked.x)):
        return Candidate(candidate.x, candidate.repeats, False, candidate.coords)
    return candidate
