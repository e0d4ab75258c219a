"""The ranking looks one step past the largest single gain
(:func:`scaleprobe.models.design.rank_candidates`)."""

from __future__ import annotations

import numpy as np
import pytest
from scaleprobe.models.design import (
    Candidate,
    CostLaw,
    default_laws,
    design_state,
    expected_log_width,
    plan_design,
    rank_candidates,
)

POWER = [law for law in default_laws() if law.name == "a*p^b"]
COUNTS = [1.0, 2.0, 4.0, 8.0, 16.0]


def _state():
    rng = np.random.default_rng(1)
    runs = [3.0 * x**0.5 * np.exp(rng.normal(0.0, 0.02, 3)) for x in COUNTS]
    return design_state(COUNTS, runs, 1024.0, laws=POWER, rate=0.3)


def test_a_near_count_is_credited_only_with_what_it_adds_to_the_far_one():
    state = _state()
    cost = CostLaw.fit(COUNTS, COUNTS, [60.0] * len(COUNTS))  # core ~ nodes
    near, far = Candidate(32.0), Candidate(256.0)
    ranking = rank_candidates(state, [near, far], cost)
    by_x = {r.candidate.x: r for r in ranking}
    # On its own gain per cost, the near count is the better buy ...
    assert by_x[32.0].gain / by_x[32.0].core_seconds > (
        by_x[256.0].gain / by_x[256.0].core_seconds
    )
    # ... but the far count makes up its gain, and more: it is ranked first.
    assert ranking[0].candidate.x == 256.0
    now = expected_log_width(state)
    both = now - expected_log_width(state, [far, near])
    pair = by_x[32.0].core_seconds + by_x[256.0].core_seconds
    assert by_x[32.0].score == pytest.approx(3600 * both / pair)
    own = by_x[256.0].gain / by_x[256.0].core_seconds
    assert by_x[256.0].score == pytest.approx(3600 * own)


def test_an_unaffordable_far_count_leaves_the_near_one_to_the_plan():
    state = _state()
    cost = CostLaw.fit(COUNTS, COUNTS, [60.0] * len(COUNTS))
    budget = 1.5 * float(cost.core_seconds(32.0))  # the near count, not the far one
    design = plan_design(
        state, [Candidate(32.0), Candidate(256.0)], cost, core_budget=budget
    )
    assert [r.candidate.x for r in design.plan] == [32.0]
    assert design.spent_core <= budget
