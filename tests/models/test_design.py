"""Known-answer tests of the experiment design (:mod:`scaleprobe.models.design`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scaleprobe.models.design import (
    Candidate,
    CostLaw,
    DesignLaw,
    design_state,
    expected_log_width,
    fit_law,
    plan_design,
)

COUNTS = [1, 2, 4, 8, 16]


def _samples(law, counts, noise, repeats=3, seed=0):
    rng = np.random.default_rng(seed)
    return [law(x) * np.exp(rng.normal(0.0, noise, repeats)) for x in counts]


def _bent(x):
    """``x`` up to 64 nodes, growing quadratically faster beyond."""
    x = np.asarray(x, dtype=float)
    return x + np.where(x > 64, (x - 64) ** 2 / 16.0, 0.0)


LINEAR = DesignLaw("c0 + c1*p", lambda x: np.column_stack([np.ones_like(x), x]))
BENT = DesignLaw(
    "c0 + c1*bent(p)", lambda x: np.column_stack([np.ones_like(x), _bent(x)])
)


def _candidates(counts, new):
    return [Candidate(float(x), new=False) for x in counts] + [
        Candidate(float(x)) for x in new
    ]


def _flat_cost(counts):
    """One minute of wall time per point, whatever the count (core cost ~ nodes)."""
    return CostLaw.fit(counts, counts, [60.0] * len(counts))


def test_laws_that_differ_beyond_64_nodes_send_the_design_beyond_16():
    samples = _samples(lambda x: 10.0 + 2.0 * x, COUNTS, 0.02)
    state = design_state(COUNTS, samples, 1024, laws=[LINEAR, BENT])
    assert [law.name for law in state.laws] == ["c0 + c1*p", "c0 + c1*bent(p)"]
    design = plan_design(
        state,
        _candidates(COUNTS, [32, 64, 128, 256]),
        _flat_cost(COUNTS),
        wall_budget=2 * 3600,
    )
    first = design.plan[0]
    assert first.candidate.x > 16
    assert first.candidate.x > 64  # the laws agree up to 64 nodes: nothing to learn
    assert "c0 + c1*p and c0 + c1*bent(p)" in first.reason
    assert design.ranking[0].candidate.x == first.candidate.x
    # Telling the laws apart removes most of the width at the target.
    assert design.width_planned < 1 + (design.width_now - 1) / 2


def test_pure_noise_is_answered_with_a_repeat():
    samples = _samples(lambda x: 5.0 + 0.0 * x, [1, 2, 4, 8], 0.03, seed=3)
    state = design_state([1, 2, 4, 8], samples, 1024)
    assert [law.name for law in state.laws] == ["level"]
    assert "within the noise" in state.rejected["a*p^b"]
    design = plan_design(
        state,
        _candidates([1, 2, 4, 8], [16, 32]),
        _flat_cost([1, 2, 4, 8]),
        wall_budget=3600,
    )
    assert design.plan
    assert all(not r.candidate.new for r in design.plan)
    assert design.plan[0].candidate.x == 1.0  # the cheapest measured count
    assert "repeat" in design.plan[0].reason


def test_repeats_narrow_the_level_as_one_over_the_root_of_the_runs():
    samples = _samples(lambda x: 5.0 + 0.0 * x, [1, 2, 4, 8], 0.03, seed=3)
    state = design_state([1, 2, 4, 8], samples, 1024)
    # The level law has no trend: its interval does not widen beyond 8 nodes.
    now = expected_log_width(state)
    later = expected_log_width(state, [Candidate(2.0, repeats=6, new=False)])
    assert later / now == pytest.approx(math.sqrt(12 / 18))
    assert now == pytest.approx(2 * state.z * state.noise / math.sqrt(12))


@pytest.mark.parametrize("budget_minutes", [0.5, 1, 5, 30])
def test_the_plan_stays_within_its_budget(budget_minutes):
    samples = _samples(lambda x: 10.0 + 2.0 * x, COUNTS, 0.02)
    state = design_state(COUNTS, samples, 1024, laws=[LINEAR, BENT])
    walls = [30.0 * x**0.5 for x in COUNTS]
    cost = CostLaw.fit(COUNTS, COUNTS, walls)
    design = plan_design(
        state,
        _candidates(COUNTS, [32, 64, 128, 256]),
        cost,
        wall_budget=budget_minutes * 60,
    )
    assert design.spent_wall <= budget_minutes * 60 * (1 + 1e-9)
    assert design.spent_wall == pytest.approx(sum(r.wall_seconds for r in design.plan))
    cheapest = float(cost.wall_seconds(1.0))
    assert bool(design.plan) == (cheapest <= budget_minutes * 60 * (1 + 1e-9))


def test_a_core_hour_budget_is_respected_too():
    samples = _samples(lambda x: 10.0 + 2.0 * x, COUNTS, 0.02)
    state = design_state(COUNTS, samples, 1024, laws=[LINEAR, BENT])
    cost = _flat_cost(COUNTS)
    design = plan_design(
        state, _candidates(COUNTS, [32, 128]), cost, core_budget=100 * 60.0
    )
    # 128 nodes for a minute is 128 core-minutes: more than the budget.
    assert all(r.candidate.x < 128 for r in design.plan)
    assert design.spent_core <= 100 * 60.0 * (1 + 1e-9)


def test_the_cost_law_recovers_a_known_growth():
    nodes = np.array([1, 2, 4, 8])
    cost = CostLaw.fit(nodes, 2 * nodes, 3.0 * nodes**0.5)
    assert cost.slope == pytest.approx(1.5)
    assert float(cost.core_seconds(16)) == pytest.approx(6.0 * 16**1.5)
    assert float(cost.wall_seconds(16)) == pytest.approx(3.0 * 4.0)


def test_ranks_sharing_one_hosts_cores_take_turns_on_them():
    # A strong-scaling kernel on one 2-core host: 0.2 s of start-up per rank plus
    # 0.4 s of work shared by the ranks; 4 ranks take turns two at a time.
    def busy(ranks):
        return 0.2 + 0.4 / ranks

    nodes = np.array([1, 2, 4])
    walls = np.array([busy(n) * n / min(n, 2) for n in nodes])
    alone = CostLaw.fit(nodes, nodes, walls)
    shared = CostLaw.fit(nodes, nodes, walls, cores=2)
    assert shared.rank_seconds == pytest.approx(busy(4))
    # 16 ranks on 2 cores: 8 turns of at least one rank's 0.3 s at 4 ranks
    assert float(shared.wall_seconds(16)) == pytest.approx(8 * busy(4))
    assert float(shared.wall_seconds(16)) >= 8 * busy(16)
    assert float(alone.wall_seconds(16)) < 0.5 * 8 * busy(16)  # the line alone
    assert float(shared.core_seconds(16)) == pytest.approx(16 * 8 * busy(4))
    # where the ranks fit the cores the measured line stands
    assert float(shared.wall_seconds(1)) == pytest.approx(float(alone.wall_seconds(1)))


def test_a_linear_law_is_recovered_with_its_information():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    fitted = fit_law(LINEAR, x, 3.0 + 0.5 * x, np.full(4, 2.0))
    np.testing.assert_allclose(fitted.coef, [3.0, 0.5])
    gradient = np.column_stack([np.ones(4), x]) / (3.0 + 0.5 * x)[:, None]
    np.testing.assert_allclose(fitted.information, 2.0 * gradient.T @ gradient)


def test_no_budget_is_refused():
    samples = _samples(lambda x: 5.0 + 0.0 * x, [1, 2, 4], 0.03)
    state = design_state([1, 2, 4], samples, 64)
    with pytest.raises(ValueError, match="wall_budget or a core_budget"):
        plan_design(state, [Candidate(1.0, new=False)], _flat_cost([1, 2, 4]))


def test_when_no_law_fits_the_closest_ones_keep_the_interval_wide():
    # One node has no communication: a break no law of the family follows.
    times = {1: 0.008, 2: 0.071, 3: 0.064, 4: 0.060, 6: 0.044, 8: 0.042}
    counts = list(times)
    samples = [[t * 0.99, t * 1.01] for t in times.values()]
    state = design_state(counts, samples, 1024)
    assert "departs from the measured counts" in state.rejected["level"]
    assert len(state.laws) >= 2
    kept = [name for name, why in state.rejected.items() if why.startswith("kept")]
    assert sorted(kept) == sorted(law.name for law in state.laws)
    assert math.exp(expected_log_width(state)) > 10  # not the noise's 1.02x


def test_a_law_whose_band_reaches_zero_at_the_target_is_not_plausible():
    # a compute kernel on 1, 2, 4 nodes, two runs each, one of them slow: the law
    # linear in log2(p) runs through zero near 8 nodes, and its band there had no
    # lower end in log (the width at 8 nodes was 3e12)
    samples = [[0.2104, 0.2099], [0.1138, 0.1148], [0.0570, 0.0748]]
    state = design_state([1, 2, 4], samples, 8)
    assert (
        state.rejected["c0 + c1*log2(p)"] == "its band reaches zero before the target"
    )
    width = math.exp(expected_log_width(state))
    assert 1.0 < width < 10.0, width
    from scaleprobe.models.design.criterion import target_interval

    lower, upper = target_interval(state)
    assert 0.0 < lower < 0.033 < upper  # perfect speedup from 4 nodes lies within
