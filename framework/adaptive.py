"""Adaptive campaigns: measure, refit, pick the next points, until narrow enough.

``scaleprobe run SPEC --until "width <= 1.3 at nodes=1024" --budget "2 h"`` runs
(or resumes) the spec's sweep, then repeats one round until the interval at the
target is narrow enough or the budget is spent:
:func:`~scaleprobe.framework.suggest.suggest` on the store with what is left of the
budget, the plan written as a spec beside
the store (``STEM.next.yaml``), and that spec run like any other. A round measures
the plan's picks that narrow the interval by at least :data:`ROUND_GAIN` each; the
rest of the budget is planned again once they are measured, when larger counts may
be on offer. A count never measured is priced by the cost law of the smaller ones,
which a new regime (the ranks outgrowing the host, a collective changing algorithm)
breaks: a round's plan offers new counts up to :data:`ROUND_REACH` times the
largest the campaign holds, a round whose picks hold new counts measures one run at
each of them alone (:func:`round_picks`), and the next plan prices them by what that
run took; a later new count is measured only if its price, times the largest
overrun of such a first run, fits what is left of a wall budget. Every round is an
ordinary resumable sweep on the same store: a killed campaign loses nothing, and
the same command resumes it (its budget counts from the new start). The widths of
the rounds are kept in ``STEM.adaptive.json`` beside the store.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

from ._adaptive_record import adaptive_record, record_path
from .runner import run_sweep
from .spec import load_spec
from .store import ResultStore, atomic_write
from .suggest import Budget, extension_spec, parse_budget, suggest

__all__ = [
    "AdaptiveCampaign",
    "adaptive_record",
    "parse_until",
    "round_picks",
    "run_until",
    "worthwhile_picks",
]

_UNTIL = re.compile(
    r"^\s*width\s*<=\s*(?P<width>[0-9]*\.?[0-9]+)\s+at\s+(?P<target>.+?)\s*$"
)
#: Rounds at most: a plan that never narrows the interval must still stop.
MAX_ROUNDS = 50
#: A round measures the plan's picks that narrow the width at the target by at
#: least this share each; the others wait for the next round's plan, made with
#: what the round measured.
ROUND_GAIN = 0.01
#: A round's plan offers new counts up to this factor beyond the largest count the
#: campaign holds: no run is priced more than one doubling beyond a measured cost.
ROUND_REACH = 2.0


def parse_until(text):
    """Parse ``"width <= 1.3 at nodes=1024"`` (other sweep keys may follow).

    Parameters
    ----------
    text : str

    Returns
    -------
    width : float
        The goal: upper / lower of the interval at the target, above 1.
    target : str
        What :func:`~scaleprobe.framework.suggest.parse_target` reads.

    Raises
    ------
    ValueError
        One line naming what was typed and what is allowed.

    Examples
    --------
    >>> parse_until("width <= 1.3 at nodes=1024 bandwidth=25")
    (1.3, 'nodes=1024 bandwidth=25')
    """
    match = _UNTIL.match(text or "")
    width = float(match.group("width")) if match else 0.0
    if not width > 1.0:
        raise ValueError(
            f"--until {text!r}: write 'width <= W at nodes=N' with W above 1 (the "
            "interval's upper / lower), e.g. 'width <= 1.3 at nodes=1024'"
        )
    return width, match.group("target")


@dataclass
class AdaptiveCampaign:
    """What an adaptive campaign did.

    Attributes
    ----------
    rounds : list of dict
        Per round: ``width`` (upper / lower at the target before the round),
        ``lower``, ``upper``, ``spent`` (wall seconds so far), ``points``
        (measured in the round), ``largest`` (the largest count measured before
        it), ``unchecked`` (no law held its check there, so the width takes
        the uncalibrated factor) and, for a round that measured new counts once
        first, ``new`` (those counts).
    reason : str
        Why it stopped.
    measured_nothing : bool
        No point of the campaign's sweep succeeded, so no round could plan
        (``reason`` names the failures).
    """

    rounds: list = field(default_factory=list)
    reason: str = ""
    measured_nothing: bool = False


def _record(store, goal, target, campaign):
    path = record_path(store)
    text = json.dumps(
        {"goal": goal, "target": target, "rounds": campaign.rounds}, indent=1
    )
    atomic_write(path, text, "adaptive campaign record")


def run_until(
    spec_or_path, until, budget, client=None, *, workers=None, clock=time.monotonic
):
    """Run a sweep, then measure suggested points until the interval is narrow.

    Parameters
    ----------
    spec_or_path : str, path-like, dict or Spec
        The campaign spec (its sweep is run first, resuming what is stored).
    until : str
        ``"width <= 1.3 at nodes=1024"`` (:func:`parse_until`).
    budget : str or Budget
        Wall time (``"2 h"``) for the whole command, the first sweep included;
        ``"40 core-h"`` counts the core-seconds the rounds are predicted to cost.
    client : distributed.Client, optional
        Where to run; by default one embedded cluster serves every round.
    workers : int, optional
        Workers of the embedded cluster.
    clock : callable, default=time.monotonic
        Seconds, to measure the wall time spent.

    Returns
    -------
    AdaptiveCampaign
        A round of measured counts whose points took longer than predicted makes
        the next rounds plan for that much less of what is left (a wall budget);
        a new count's first run enters the cost law instead, and a later new
        count is measured only if its price, times the largest such overrun of a
        first run, fits what is left.
    """
    goal, target = parse_until(until)
    budget = parse_budget(budget) if isinstance(budget, str) else budget
    spec = load_spec(spec_or_path)
    if client is None:
        from .cluster import cluster_client

        with cluster_client(workers=workers, announce=False) as own:
            return _rounds(spec, goal, target, budget, own, clock)
    return _rounds(spec, goal, target, budget, client, clock)


def _rounds(spec, goal, target, budget, client, clock):
    start = clock()
    ds = run_sweep(spec, client, progress=False)
    campaign, spent_core, slower, dearer = AdaptiveCampaign(), 0.0, 1.0, 1.0
    if "status" not in ds or not (ds["status"] == "ok").any():
        from ._summary import failure_line

        campaign.measured_nothing = True
        campaign.reason = "nothing to plan from: " + (
            failure_line(ds, spec.output) or "the sweep stored no point"
        )
        return campaign
    barred = set()  # the counts whose every run failed, named once
    nxt = ResultStore(spec.output).stem + ".next.yaml"
    for _ in range(MAX_ROUNDS):
        spent = clock() - start if budget.kind == "wall" else spent_core
        left = max(budget.seconds - spent, 0.0)
        plan_for = left / slower if budget.kind == "wall" else left
        suggestion = suggest(
            spec.output,
            target,
            Budget(plan_for, budget.kind, budget.text),
            reach=ROUND_REACH,
        )
        campaign.rounds.append(_round(suggestion, clock() - start, barred))
        barred.update(suggestion.failed)
        _record(spec.output, goal, target, campaign)
        if suggestion.design.width_now <= goal:
            campaign.reason = f"the width at the target is {_width(suggestion)}"
            return campaign
        picks, probe = _affordable(suggestion.design.plan, plan_for, dearer)
        points, predicted = (
            extension_spec(suggestion, nxt, picks) if left else ([], 0.0)
        )
        if not points:
            campaign.reason = "the budget is spent (no suggested point fits the rest)"
            return campaign
        began = clock()
        run_sweep(nxt, client, progress=False)
        took = clock() - began
        # a probe's time enters the cost law, and says how dear new counts run
        # beyond their price; the others' say how the law errs where measured
        if budget.kind == "wall" and predicted > 0 and probe:
            dearer = max(dearer, took / predicted)
        elif budget.kind == "wall" and predicted > 0:
            slower = max(slower, took / predicted)
        spent_core += predicted if budget.kind == "core" else 0.0
        campaign.rounds[-1]["points"] = len(points)
        if probe:
            campaign.rounds[-1]["new"] = sorted({p.coords["nodes"] for p in points})
    campaign.reason = f"{MAX_ROUNDS} rounds did not narrow the interval enough"
    return campaign


def worthwhile_picks(plan):
    """The picks of a plan a round measures.

    Parameters
    ----------
    plan : list of Ranked
        :attr:`Design.plan`, each pick with its gain given the ones before it.

    Returns
    -------
    list of int
        The positions of the picks that narrow the width at the target by at least
        :data:`ROUND_GAIN` each; every position when none does (a goal set by the
        noise alone, where every repeat narrows it a little).

    Examples
    --------
    >>> from types import SimpleNamespace as Pick
    >>> worthwhile_picks([Pick(gain=g) for g in (2.0, 0.001, 0.1, 0.005, 0.001)])
    [0, 2]
    >>> worthwhile_picks([Pick(gain=0.002)] * 3)
    [0, 1, 2]
    """
    from scaleprobe.models.design import narrowing

    narrows = [i for i, r in enumerate(plan) if narrowing(r.gain) >= ROUND_GAIN]
    return narrows or list(range(len(plan)))


def round_picks(plan):
    """The picks of a plan one round measures.

    Parameters
    ----------
    plan : list of Ranked
        :attr:`Design.plan`.

    Returns
    -------
    list of int
        Positions in the plan. When the :func:`worthwhile_picks` include counts
        never measured, the first pick at each of them alone: one run per new
        count, whose time the next plan prices the count by (a spec's sweep is a
        product, so a round of probes and repeats would run every planned index at
        the new counts). Otherwise the worthwhile picks.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> def pick(x, new, gain):
    ...     return S(candidate=S(x=x, new=new), gain=gain)
    >>> round_picks([pick(16, True, 0.9), pick(1, False, 0.1), pick(16, True, 0.2),
    ...              pick(64, True, 0.05), pick(2, False, 0.0001)])
    [0, 3]
    >>> round_picks([pick(1, False, 0.1), pick(2, False, 0.0001), pick(2, False, 0.05)])
    [0, 2]
    >>> round_picks([])  # nothing fits the budget: the campaign stops
    []
    """
    picks = worthwhile_picks(plan)
    first = {}
    for i in picks:
        if plan[i].candidate.new:
            first.setdefault(plan[i].candidate.x, i)
    return sorted(first.values()) or picks


def _affordable(plan, left, dearer):
    """The :func:`round_picks` of a plan whose new counts, priced ``dearer``
    times the cost law's price (what earlier first runs at new counts took over
    theirs), fit in ``left`` wall seconds; when none does, its worthwhile repeats.
    With whether they are probes (:func:`_probes`).

    >>> from types import SimpleNamespace as S
    >>> def pick(x, new, gain, wall):
    ...     return S(candidate=S(x=x, new=new), gain=gain, wall_seconds=wall)
    >>> plan = [pick(128, True, 0.5, 50.0), pick(1, False, 0.1, 0.4)]
    >>> _affordable(plan, 60.0, 1.0), _affordable(plan, 60.0, 1.6)
    (([0], True), ([1], False))
    """
    picks = round_picks(plan)
    if not _probes(plan, picks):
        return picks, False
    kept = [i for i in picks if plan[i].wall_seconds * dearer <= left]
    if kept:
        return kept, True
    return [i for i in worthwhile_picks(plan) if not plan[i].candidate.new], False


def _probes(plan, picks):
    """Whether the picks are one run at each of some new counts, and nothing else.

    >>> from types import SimpleNamespace as S
    >>> plan = [S(candidate=S(x=x, new=new)) for x, new in ((16, 1), (1, 0), (16, 1))]
    >>> _probes(plan, [0]), _probes(plan, [0, 1]), _probes(plan, [0, 2])
    (True, False, False)
    """
    counts = [plan[i].candidate.x for i in picks if plan[i].candidate.new]
    return bool(counts) and len(set(counts)) == len(picks)


def _width(suggestion):
    return f"{suggestion.design.width_now:.3g}x"


def _round(suggestion, elapsed, barred):
    """A round's row of the record; ``failed`` names the counts whose every run
    failed that no earlier row (``barred``) named."""
    from scaleprobe.models.design import target_interval

    lower, upper = target_interval(suggestion.state)
    row = {
        "width": suggestion.design.width_now,
        "lower": lower,
        "upper": upper,
        "spent": elapsed,
        "points": 0,
        "unchecked": suggestion.state.unchecked,
        "largest": float(max(suggestion.state.x)),
    }
    failed = sorted(set(suggestion.failed) - barred)
    if failed:
        row["failed"] = {f"{x:g}": suggestion.failed[x] for x in failed}
    return row
