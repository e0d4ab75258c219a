"""What to measure next: a stored campaign's series, its candidates, and a spec.

:func:`suggest` reads a store, takes the series of the target's slice (every sweep
key but ``nodes`` and ``run`` fixed), lists the candidate points (more runs at the
measured node counts, the spec's node counts not measured yet, and node counts
outside the spec's grid that its rules admit up to ``max_nodes``), prices them with
the cost law of the measured points and asks
:func:`scaleprobe.models.design.plan_design` which ones the budget affords.
:func:`extension_spec` writes them as a spec that ``scaleprobe run`` takes as it
is: the same campaign (kernel, parameters, throttle, sweep keys, output), its sweep
narrowed to the planned points, so running it resumes the campaign and measures
only them.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

import yaml

from .admissible import compile_rule
from .planning import plan
from .spec import SpecError, load_spec, machine_fits
from .store import ResultStore, StoreError, atomic_write
from .units import UnitError, parse_duration

__all__ = [
    "Budget",
    "Suggestion",
    "extension_spec",
    "parse_budget",
    "parse_target",
    "suggest",
]

#: Node counts outside the grid are considered up to this factor beyond its largest.
REACH = 4
_CORE_HOURS = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*core[- ]?h(ours?)?\s*$", re.I)


@dataclass(frozen=True)
class Budget:
    """What a plan may spend: wall seconds, or core-seconds.

    Attributes
    ----------
    seconds : float
    kind : {"wall", "core"}
    text : str
        As typed.
    """

    seconds: float
    kind: str
    text: str

    def limits(self):
        """Keyword arguments of :func:`~scaleprobe.models.design.plan_design`."""
        key = "wall_budget" if self.kind == "wall" else "core_budget"
        return {key: self.seconds}


def parse_budget(text):
    """Parse ``"2 h"`` (wall time) or ``"40 core-h"`` (core-hours).

    Parameters
    ----------
    text : str

    Returns
    -------
    Budget

    Raises
    ------
    ValueError
        One line naming what was typed and what is allowed.

    Examples
    --------
    >>> parse_budget("2 h").seconds, parse_budget("40 core-h").kind
    (7200.0, 'core')
    """
    match = _CORE_HOURS.match(text)
    if match:
        seconds = float(match.group(1)) * 3600.0
        kind = "core"
    else:
        try:
            seconds, kind = parse_duration(text, require_unit=True), "wall"
        except UnitError:
            seconds = -1.0
    if not seconds > 0:
        raise ValueError(
            f"--budget {text!r}: give a positive wall time with a unit ('2 h', "
            "'90 min') or core-hours ('40 core-h')"
        )
    return Budget(float(seconds), kind, text)


def parse_target(text, axes):
    """Parse ``"nodes=1024 bandwidth=25"`` against a campaign's sweep axes.

    Parameters
    ----------
    text : str
        ``key=value`` pairs separated by spaces or commas; ``nodes`` is required,
        the other keys are sweep keys with a measured value.
    axes : dict of str to list
        The campaign's sweep axes.

    Returns
    -------
    target_nodes : float
    fixed : dict
        The value of every sweep key but ``nodes`` and ``run`` (keys with one
        value take it without being named).

    Raises
    ------
    ValueError
        A pair that does not parse, an unknown key, a value not measured, or a key
        with several values that the target does not name.

    Examples
    --------
    >>> parse_target("nodes=1024", {"nodes": [1, 2], "ppn": [1], "run": [0, 1]})
    (1024.0, {'ppn': 1})
    """
    pairs = {}
    for part in re.split(r"[\s,]+", text.strip()):
        key, sep, value = part.partition("=")
        if not sep or not key or not value:
            raise ValueError(
                f"--target {text!r}: write key=value pairs, e.g. 'nodes=1024' or "
                "'nodes=1024 bandwidth=25'"
            )
        pairs[key] = value
    if "nodes" not in pairs:
        raise ValueError(f"--target {text!r}: name the node count, e.g. 'nodes=1024'")
    try:
        target = float(pairs.pop("nodes"))
    except ValueError:
        target = -1.0
    if not target > 0:
        raise ValueError(f"--target {text!r}: nodes must be a positive number")
    return target, _fixed(text, pairs, axes)


def _fixed(text, pairs, axes):
    fixed = {}
    allowed = [k for k in axes if k not in ("nodes", "run")]
    for key in pairs:
        if key not in allowed:
            raise ValueError(
                f"--target {text!r}: unknown key {key!r}; allowed: nodes, "
                + ", ".join(allowed)
            )
    for key in allowed:
        values = axes[key]
        if key in pairs:
            chosen = [v for v in values if str(v) == pairs[key]]
            chosen = chosen or [v for v in values if _same(v, pairs[key])]
            if not chosen:
                raise ValueError(
                    f"--target {text!r}: {key}={pairs[key]} was not swept; the "
                    f"campaign has {key} " + ", ".join(map(str, values))
                )
            fixed[key] = chosen[0]
        elif len(values) == 1:
            fixed[key] = values[0]
        else:
            raise ValueError(
                f"--target {text!r}: the campaign sweeps {key} over "
                + ", ".join(map(str, values))
                + f"; name one, e.g. '{key}={values[0]}'"
            )
    return fixed


def _same(value, text):
    try:
        return math.isclose(float(value), float(text))
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class Suggestion:
    """A design for a stored campaign.

    Attributes
    ----------
    design : scaleprobe.models.design.Design
    state : scaleprobe.models.design.DesignState
    spec : Spec
        The campaign's spec, as stored.
    fixed : dict
        The target's slice (every sweep key but nodes and run).
    runs : dict of float to list of int
        The run indices stored at each node count of the slice, of any status
        (a planned run takes an index none of them holds).
    budget : Budget
    metric : str
    store : str
    failed : dict of float to list of str
        The node counts of the slice where every stored run failed, with their
        statuses: not offered again (``scaleprobe run --retry`` measures them).
    """

    design: object
    state: object
    spec: object
    fixed: dict
    runs: dict
    budget: Budget
    metric: str
    store: str
    failed: dict = field(default_factory=dict)


def _series(results, fixed, metric):
    """Samples and cost of the slice: ``{nodes: [values]}``, the run indices
    stored at each count (of any status), and the
    :class:`~scaleprobe.models.design.CostLaw` of its priced points (None when no
    point has a wall time), told the host's cores when all of them ran every rank
    on one host (the emulated link's ``core_slots``)."""
    samples, runs, cost = {}, {}, []
    seen_metrics, hosts, slots = set(), set(), set()
    for result in results:
        coords = result["coords"]
        if any(coords.get(k) != v for k, v in fixed.items()):
            continue
        nodes = float(coords["nodes"])
        # every stored index is taken, whatever its status: a new run takes another
        runs.setdefault(nodes, []).append(int(coords["run"]))
        if result.get("status") != "ok":
            continue
        record = result.get("record") or {}
        metrics = record.get("metrics") or {}
        seen_metrics.update(metrics)
        value = metrics.get(metric)
        wall = result.get("launch_time")
        if wall:
            ranks = int(coords["nodes"]) * int(coords["ppn"])
            cost.append((nodes, ranks, float(wall)))
            hosts.update((record.get("placement") or {}).get("hosts") or [None])
            slots.add((record.get("link") or {}).get("core_slots") or 0)
        if value is not None and math.isfinite(value) and value > 0:
            samples.setdefault(nodes, []).append(float(value))
    if seen_metrics and metric not in seen_metrics:
        raise ValueError(
            f"--metric {metric!r} is not in the stored records; allowed: "
            + ", ".join(sorted(seen_metrics))
        )
    return samples, runs, _cost_law(cost, hosts, slots)


def _cost_law(cost, hosts, slots):
    """The cost law of the priced points; the host's cores when one host ran them."""
    from scaleprobe.models.design import CostLaw

    if not cost:
        return None
    shared = len(hosts) == 1 and None not in hosts and len(slots) == 1
    return CostLaw.fit(*zip(*cost, strict=True), cores=slots.pop() if shared else None)


def _failed(results, fixed):
    """Node count -> the statuses of its points, for the counts of the slice
    where no stored point is ok (every run failed, timed out or was invalid)."""
    statuses = {}
    for result in results:
        coords = result["coords"]
        if all(coords.get(k) == v for k, v in fixed.items()):
            nodes = float(coords["nodes"])
            statuses.setdefault(nodes, set()).add(result.get("status"))
    return {x: sorted(s) for x, s in sorted(statuses.items()) if "ok" not in s}


def _pooled(results, fixed, metric):
    """The interval's factor pooled over every slice of the store (the values of
    the fixed keys: bandwidths, scales, ...), as the profile fit pools a profile's
    series; None with one slice (the series calibrates on its own errors)."""
    from scaleprobe.models.design import pooled_rate

    slices = {}
    for result in results:
        value = ((result.get("record") or {}).get("metrics") or {}).get(metric)
        if result.get("status") != "ok" or value is None:
            continue
        if not (math.isfinite(value) and value > 0):
            continue
        coords = result["coords"]
        where = tuple(str(coords.get(key)) for key in sorted(fixed))
        times = slices.setdefault(where, {})
        times.setdefault(float(coords["nodes"]), []).append(float(value))
    if len(slices) < 2:
        return None
    series = [(sorted(t), [t[x] for x in sorted(t)]) for t in slices.values()]
    return pooled_rate(series)


def _candidates(spec, fixed, measured, target, max_nodes, factor=REACH, barred=()):
    """Repeats at the measured counts, then new admitted counts up to max_nodes
    (by default ``factor`` times the grid's largest count), but for the
    ``barred`` counts (where every stored run failed)."""
    from scaleprobe.models.design import Candidate

    rule = compile_rule(spec.admissible)
    ppn = int(fixed.get("ppn", 1))
    # the stored spec may be an earlier suggestion's, narrowed to its picks: the
    # grid is every count the spec or the store holds
    grid = [float(n) for n in spec.sweep["nodes"]] + [float(x) for x in measured]
    reach = max_nodes or factor * max(grid)
    outside = [2.0**k for k in range(int(math.log2(max(reach, 1))) + 1)]
    counts = sorted({*grid, *outside, *_grid_form(grid, ppn, reach)})
    out = [Candidate(x, new=False, coords={"nodes": int(x)}) for x in sorted(measured)]
    for x in counts:
        if x in measured or x in barred or x > reach or x >= target:
            continue
        nodes = int(x)
        if nodes * ppn < spec.min_ranks or not rule(
            nodes=nodes, ppn=ppn, ranks=nodes * ppn
        ):
            continue
        try:
            machine_fits(spec.throttle, [nodes])
        except SpecError:
            continue
        out.append(Candidate(x, coords={"nodes": nodes}))
    return out


def _grid_form(grid, ppn, reach):
    """Node counts up to ``reach`` whose ranks are cubes (squares) when every
    count of ``grid`` runs a cube (square) of ranks: the counts a code that
    decomposes a cube (square) can run at, which powers of two mostly are not."""
    from scaleprobe.models.profiles.result import grid_power

    power = grid_power(sorted({x * ppn for x in grid}))
    if power is None:
        return []
    ranks = [side**power for side in range(1, int((reach * ppn) ** (1 / power)) + 2)]
    return [float(r // ppn) for r in ranks if r % ppn == 0 and r // ppn <= reach]


def suggest(path, target, budget, *, metric="time", max_nodes=None, reach=REACH):
    """Rank what to measure next in a stored campaign, and plan it.

    Parameters
    ----------
    path : str
        The campaign's store.
    target : str
        ``"nodes=1024"``, with the value of every other swept key that has several
        (``"nodes=1024 bandwidth=25"``).
    budget : str or Budget
        ``"2 h"`` of wall time or ``"40 core-h"``.
    metric : str, default="time"
    max_nodes : int, default=None
        Largest node count a candidate may have; default ``reach`` times the
        largest count in the spec's grid or measured (and below the target).
    reach : float, default=REACH
        How far beyond the grid's largest count new counts are offered, as a
        factor of 1 or more, when ``max_nodes`` is not given.

    Returns
    -------
    Suggestion
        A count of the slice where every stored run failed is not offered again
        (:attr:`Suggestion.failed`).

    Raises
    ------
    ValueError
        Bad target, budget or metric, or too little measured to design from.
    """
    from scaleprobe.models.design import design_state, plan_design

    if not (isinstance(reach, (int, float)) and math.isfinite(reach) and reach >= 1):
        raise ValueError(f"reach={reach!r}: a factor of 1 or more is allowed")
    store = ResultStore(path)
    if not store.exists():
        raise StoreError(f"{path} is not a scaleprobe store (no campaign.json)")
    campaign = store.campaign()
    text = campaign.get("attrs", {}).get("spec")
    if not text:
        raise ValueError(f"{path} does not keep its spec; suggest needs a store of run")
    spec = load_spec(text.rstrip("\n") + "\n")
    target_nodes, fixed = parse_target(target, campaign["sweep"])
    budget = parse_budget(budget) if isinstance(budget, str) else budget
    results = store.results()  # read once: the slice and every other
    samples, runs, cost_law = _series(results, fixed, metric)
    if len(samples) < 2:
        raise ValueError(
            f"{path}: the slice {fixed or 'of the campaign'} has {metric} at "
            f"{len(samples)} node count(s); a design needs at least 2"
        )
    if cost_law is None:
        raise ValueError(f"{path}: no stored point has a wall time to price by")
    counts = sorted(samples)
    rate = _pooled(results, fixed, metric)
    state = design_state(
        counts, [samples[x] for x in counts], target_nodes, pooled=rate
    )
    failed = _failed(results, fixed)
    candidates = _candidates(
        spec, fixed, set(counts), target_nodes, max_nodes, reach, barred=failed
    )
    design = plan_design(state, candidates, cost_law, **budget.limits())
    return Suggestion(design, state, spec, fixed, runs, budget, metric, path, failed)


def _planned_points(picked, runs):
    """Node count -> new run indices of the ``picked`` points (``runs``: the run
    indices stored per count)."""
    planned = {}
    for ranked in picked:
        x = ranked.candidate.x
        taken = set(runs.get(x, ())) | set(planned.get(x, ()))
        index = next(i for i in range(len(taken) + 1) if i not in taken)
        planned.setdefault(x, []).append(index)
    return planned


def _extension_raw(suggestion, planned, output):
    raw = yaml.safe_load(suggestion.spec.text)
    sweep = dict(raw["sweep"])
    for key, value in suggestion.fixed.items():
        sweep[key] = [value]
    sweep["nodes"] = sorted(int(x) for x in planned)
    sweep["run"] = sorted({i for indices in planned.values() for i in indices})
    raw["sweep"] = sweep
    # the sweep alone narrows the points; the rule stays the campaign's, so that
    # the next suggestion on the store admits what the campaign admits
    raw["output"] = output
    return raw


def extension_spec(suggestion, path, picks=None):
    """Write the planned points as a spec that resumes the campaign.

    The spec is the stored one with its sweep narrowed to the planned node counts
    and new run indices (and the target's slice); a spec's sweep is a product, so
    it may hold a few more points than the plan (a new count gets every run index
    planned anywhere): the planned picks are dropped from the last until the
    points it measures fit the budget.

    Parameters
    ----------
    suggestion : Suggestion
    path : str
        The spec file to write (YAML); its ``output`` is the store, relative to it.
    picks : sequence of int, default=None
        The positions in the plan of the picks to write (None: all of them).

    Returns
    -------
    points : list of Point
        The points ``scaleprobe run`` will measure with it (empty: nothing planned,
        no file written).
    seconds : float
        Their predicted cost, in the budget's kind (wall or core-seconds).
    """
    store = ResultStore(suggestion.store)
    done = store.done_keys()
    folder = os.path.dirname(os.path.abspath(path))
    output = os.path.relpath(os.path.abspath(store.path), folder)
    _, _, cost = _series(store.results(), suggestion.fixed, suggestion.metric)
    plan_ = suggestion.design.plan
    chosen = plan_ if picks is None else [plan_[i] for i in sorted(picks)]
    for taken in range(len(chosen), 0, -1):
        planned = _planned_points(chosen[:taken], suggestion.runs)
        raw = _extension_raw(suggestion, planned, output)
        points = plan(load_spec(raw), done)
        spent = sum(_price(cost, p, suggestion.budget.kind) for p in points)
        if spent <= suggestion.budget.seconds * (1 + 1e-9):
            text = yaml.safe_dump(raw, sort_keys=False)
            atomic_write(os.path.abspath(path), text, "suggested spec")
            return points, spent
    return [], 0.0


def _price(cost, point, kind):
    nodes = point.coords["nodes"]
    if kind == "wall":
        return float(cost.wall_seconds(nodes))
    return float(cost.core_seconds(nodes))
