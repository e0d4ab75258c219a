"""Known answers for FiM's Markov model: Eq. 1-10 by hand, the synchronized variant
against Monte-Carlo."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scaleprobe.models.fim.markov import (
    base_probabilities,
    calculation_time,
    stage_completion_probability,
    synchronized_time,
    transition_matrix,
)

U, TC, SC = 0.6, 5.0, 2.0  # P_act=.6, P_a2p=.2, P_pass=.4, P_p2a=.6, P_s1=.2


def test_base_case_by_hand():
    p = base_probabilities(U, TC, SC)
    assert p.active == pytest.approx(0.6)
    assert p.active_to_passive == pytest.approx(0.2)
    assert p.passive == pytest.approx(0.4)
    assert p.passive_to_active == pytest.approx(0.6)
    assert p.complete == pytest.approx(1 / TC)


def test_one_process_matrix_is_the_base_case():
    m = transition_matrix(base_probabilities(U, TC, SC), 1)
    # rows: from 0 active (passive), from 1 active
    np.testing.assert_allclose(m, [[0.4, 0.6], [0.2, 0.6]])


def test_two_processes_match_the_papers_worked_probabilities():
    a, s, q, r = 0.6, 0.2, 0.4, 0.6  # act, a2p, pass, p2a
    m = transition_matrix(base_probabilities(U, TC, SC), 2)
    assert m[2, 2] == pytest.approx(a * a)
    assert m[0, 0] == pytest.approx(q * q)
    assert m[1, 1] == pytest.approx(a * q + s * r)
    assert m[0, 1] == pytest.approx(2 * q * r)
    assert m[0, 2] == pytest.approx(r * r)
    assert m[1, 2] == pytest.approx(a * r)
    assert m[1, 0] == pytest.approx(s * q)
    assert m[2, 1] == pytest.approx(2 * a * s)
    assert m[2, 0] == pytest.approx(s * s)


def test_three_processes_by_enumeration():
    """Every P_ij(3) of Eq. 6-8 equals the sum over individual process moves."""
    base = base_probabilities(U, TC, SC)
    stay = {1: base.active, 0: base.passive}
    move = {1: base.active_to_passive, 0: base.passive_to_active}
    t = 3
    expected = np.zeros((t + 1, t + 1))
    for i in range(t + 1):
        states = [1] * i + [0] * (t - i)
        for flips in range(2**t):
            prob, active = 1.0, 0
            for n, state in enumerate(states):
                if flips >> n & 1:
                    prob *= move[state]
                    active += 1 - state
                else:
                    prob *= stay[state]
                    active += state
            expected[i, active] += prob
    np.testing.assert_allclose(transition_matrix(base, t), expected)


@pytest.mark.parametrize("t", [1, 2, 3, 7])
def test_eq9_reduces_to_closed_form(t):
    p = stage_completion_probability(U, TC, SC, t)
    assert p == pytest.approx(1 - (1 - 1 / TC) ** t)
    # U and SC cancel
    assert stage_completion_probability(0.1, TC, 4.0, t) == pytest.approx(p)


def test_eq10_time_and_stages():
    assert calculation_time(U, TC, SC, frequency=2.0, processes=1) == pytest.approx(
        TC / 2.0
    )
    t = 3
    expected = 1 / (2.0 * (1 - (1 - 1 / TC) ** t))
    assert calculation_time(U, TC, SC, 2.0, t) == pytest.approx(expected)
    # two stages of TC/2 cycles each, their expected times add
    half = 2 / (2.0 * (1 - (1 - 2 / TC) ** t))
    assert calculation_time(U, TC, SC, 2.0, t, stages=2) == pytest.approx(half)
    # large TC: ideal speedup TC / (t F), digits kept
    assert calculation_time(0.9, 1e12, 1e11, 1e9, 8) == pytest.approx(125.0, rel=1e-9)


def _monte_carlo_barrier(u, share, stalls, t, runs, rng):
    base = base_probabilities(u, share, stalls)
    finish = np.empty((runs, t))
    for r in range(runs):
        for proc in range(t):
            active, k = True, 0
            while True:
                x = rng.random()
                if active:
                    if x < base.complete:
                        break
                    active = x < base.complete + base.active
                else:
                    active = x >= base.passive
                k += 1
            finish[r, proc] = k + 1  # the completing cycle counts
    return finish.max(axis=1).mean(), finish.max(axis=1).std() / math.sqrt(runs)


@pytest.mark.parametrize("t", [1, 2, 3])
def test_synchronized_variant_against_monte_carlo(t):
    rng = np.random.default_rng(12)
    u, total, stall = 0.7, 8.0 * t, 2.0 * t
    mean, err = _monte_carlo_barrier(u, total / t, stall / t, t, 1500, rng)
    model = synchronized_time(u, total, stall, frequency=1.0, processes=t)
    assert abs(model - mean) < 4 * err + 1e-9


def test_synchronized_waiting_grows_with_processes():
    one = synchronized_time(0.9, 1e9, 1e8, 1e9, 1)
    ideal = [one / t for t in (2, 4, 8, 16)]
    sync = [synchronized_time(0.9, 1e9, 1e8, 1e9, t) for t in (2, 4, 8, 16)]
    ratio = [s / i for s, i in zip(sync, ideal, strict=True)]
    assert all(b > a for a, b in itertools.pairwise(ratio))
    # nearly memoryless completion: the slowest of t costs about the harmonic number
    harmonic = sum(1 / k for k in range(1, 17))
    assert ratio[-1] == pytest.approx(harmonic, rel=0.02)


def test_integral_branch_matches_exact_sum():
    # the same chain, just below and above the exact-sum threshold, scaled
    small = synchronized_time(0.8, 4e4, 4e3, 1.0, 4)
    large = synchronized_time(0.8, 4e6, 4e5, 1.0, 4)
    assert large / small == pytest.approx(100.0, rel=1e-3)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1.2, 10, 1), "utilisation"),
        ((0.5, 0.5, 0), "total_cycles"),
        ((0.5, 10, 10), "stall_cycles"),
        ((1.0, 10, 1), "Eq. 2"),
    ],
)
def test_bad_parameters_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        base_probabilities(*args)
    with pytest.raises(ValueError, match="processes"):
        calculation_time(0.5, 10, 1, 1.0, 0)
