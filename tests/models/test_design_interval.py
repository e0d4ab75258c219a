"""The design's interval at the target widens with the distance to it, by the
factor calibrated on the series' extrapolation errors (the profiles' rule)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scaleprobe.models.design import (
    Candidate,
    calibration_ratios,
    conformal_rate,
    default_laws,
    design_state,
    expected_log_width,
    log_width,
    target_interval,
)

POWER = [law for law in default_laws() if law.name == "a*p^b"]
COUNTS = [1.0, 2.0, 4.0, 8.0, 16.0]


def _power_series(noise=0.02, repeats=3, seed=1):
    rng = np.random.default_rng(seed)
    return [3.0 * x**0.5 * np.exp(rng.normal(0.0, noise, repeats)) for x in COUNTS]


@pytest.mark.parametrize("target", [64.0, 1024.0])
def test_one_law_widens_by_the_calibrated_scale_beyond_the_largest_count(target):
    state = design_state(COUNTS, _power_series(), target, laws=POWER, rate=0.3)
    (law,) = state.laws
    d = math.log2(target / 16.0)
    own = state.z * state.noise * math.sqrt(law.variance(np.array([target]))[0])
    calibrated = 0.3 * (0.05 * d + math.sqrt(d) + state.standard * (1 + d))
    assert calibrated > own + 0.05 * d  # far out, the distance term rules
    assert log_width(state) == pytest.approx(2 * calibrated)
    lower, upper = target_interval(state)
    centre = float(law.log_predict(np.array([target]))[0])
    assert math.log(upper) - centre == pytest.approx(calibrated)
    assert centre - math.log(lower) == pytest.approx(calibrated)


def test_a_larger_count_shortens_the_way_to_the_target():
    state = design_state(COUNTS, _power_series(), 1024.0, laws=POWER, rate=0.3)
    now = expected_log_width(state)
    repeat = expected_log_width(state, [Candidate(16.0, new=False)])
    further = expected_log_width(state, [Candidate(128.0)])
    d_now, d_then = math.log2(1024 / 16), math.log2(1024 / 128)
    scale = 0.05 * (d_now - d_then) + math.sqrt(d_now) - math.sqrt(d_then)
    # the new largest count is known to its one run; 16 to its three
    se_now, se_then = state.noise / math.sqrt(3), state.noise
    assert state.standard == pytest.approx(se_now)
    assert now - further == pytest.approx(
        2 * 0.3 * (scale + se_now * (1 + d_now) - se_then * (1 + d_then))
    )
    # a repeat does not bring the target nearer; it only pins the centre there
    assert now - repeat == pytest.approx(
        2 * 0.3 * (se_now - state.noise / 2) * (1 + d_now)
    )


def test_a_straight_law_calibrates_to_nothing_a_drifting_one_widens():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    straight = 3.0 * x**0.5
    drifting = 3.0 * x ** (0.3 + 0.1 * np.log2(x))  # the slope grows per doubling
    ones = np.ones(x.size)
    assert np.allclose(calibration_ratios(POWER, x, straight, ones, 0.01), 0.0)
    ratios = calibration_ratios(POWER, x, drifting, ones, 0.01)
    assert ratios.size == 6  # 1 + 2 + 3 counts after the three prefixes
    assert conformal_rate(ratios) == pytest.approx(ratios.max())
    assert conformal_rate(ratios) > 0.05


def test_a_jump_at_the_largest_count_is_not_an_extrapolation_error():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    jumped = 3.0 * x**0.5
    jumped[-1] *= 10.0  # a protocol switch between 16 and 32
    ones = np.ones(x.size)
    # the three counts after the prefixes that lie before the jump (16 from the
    # shortest two, 8 from the shortest) are kept, the 32 of each prefix is not
    ratios = calibration_ratios(POWER, x, jumped, ones, 0.01)
    assert ratios.size == 3
    assert np.allclose(ratios, 0.0)


def _wandering(rng, x, target):
    """A power law whose log-log slope wanders by 0.15 (sd) per doubling, its
    truth at ``target`` and three runs (noise 0.02) at each count of ``x``."""
    slopes = 0.5 + np.cumsum(rng.normal(0.0, 0.15, int(math.log2(target))))
    truth = np.exp(1.0 + np.concatenate([[0.0], np.cumsum(slopes * math.log(2))]))
    runs = [truth[int(math.log2(c))] * np.exp(rng.normal(0.0, 0.02, 3)) for c in x]
    return float(truth[-1]), runs


def test_the_factor_pooled_over_series_covers_wandering_laws_4_times_beyond():
    x, target, covered, uncalibrated = 2.0 ** np.arange(7), 256.0, [], []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        series = [_wandering(rng, x, target) for _ in range(60)]
        ratios = []
        for _, runs in series:
            state = design_state(x, runs, target)
            centre = np.array([r.mean() for r in runs])
            laws = [law.law for law in state.laws]
            ratios.append(
                calibration_ratios(laws, x, centre, np.full(7, 3.0), state.noise)
            )
        rate = conformal_rate(np.concatenate(ratios))
        for truth, runs in series:
            lower, upper = target_interval(design_state(x, runs, target, rate=rate))
            covered.append(lower <= truth <= upper)
            lower, upper = target_interval(design_state(x, runs, target, rate=0.0))
            uncalibrated.append(lower <= truth <= upper)
    assert np.mean(covered) >= 0.8
    assert np.mean(uncalibrated) < 0.7  # the laws' own band, as agreeing as they are


def test_the_conformal_rate_is_the_ceil_n_plus_one_level_th_ratio():
    ratios = np.arange(1.0, 20.0)  # 19 ratios: the ceil(20 * 0.9) = 18th
    assert conformal_rate(ratios, 0.9) == 18.0
    assert conformal_rate([0.2, 0.1], 0.9) == 0.2  # fewer: the largest
    assert conformal_rate([], 0.9) == 1.0


def test_the_interval_leans_on_the_runs_at_the_largest_count():
    three = _power_series()  # three runs at every count
    one = [*three[:-1], three[-1][:1]]  # one run at 16, three below
    d = math.log2(1024.0 / 16.0)
    for runs, at_top in ((three, 3), (one, 1)):
        state = design_state(COUNTS, runs, 1024.0, laws=POWER, rate=0.3)
        assert state.standard == pytest.approx(state.noise / math.sqrt(at_top))
        scale = 0.05 * d + math.sqrt(d) + state.noise / math.sqrt(at_top) * (1 + d)
        assert log_width(state) == pytest.approx(2 * 0.3 * scale)
    # two more runs at 16 bring the one-run campaign's centre back to three runs
    state = design_state(COUNTS, one, 1024.0, laws=POWER, rate=0.3)
    later = expected_log_width(state, [Candidate(16.0, repeats=2, new=False)])
    gain = 2 * 0.3 * state.noise * (1 - 1 / math.sqrt(3)) * (1 + d)
    assert log_width(state) - later == pytest.approx(gain)


def test_a_campaign_extrapolated_worse_than_its_profile_widens_its_factor():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
    rng = np.random.default_rng(3)
    noisy = np.exp(rng.normal(0.0, 0.01, (x.size, 3)))
    drifting = 3.0 * x[:, None] ** (0.3 + 0.1 * np.log2(x[:, None])) * noisy
    straight = 3.0 * x[:, None] ** 0.5 * noisy
    own = design_state(x, drifting, 256.0).rate
    assert own > 0.1  # its own earlier counts were extrapolated badly
    assert design_state(x, drifting, 256.0, pooled=0.01).rate == own
    assert design_state(x, drifting, 256.0, pooled=own + 1).rate == own + 1
    assert design_state(x, straight, 256.0, pooled=0.3).rate == 0.3
    assert design_state(x, drifting, 256.0, rate=0.01, pooled=5.0).rate == 0.01


def _broken(jump):
    """``3 p^0.2`` on 1 to 32, its largest count ``jump`` times above the trend."""
    x = 2.0 ** np.arange(6)
    centre = 3.0 * x**0.2
    centre[-1] *= jump
    return x, [[c * 0.99, c * 1.01] for c in centre], centre


def _own_rate(x, runs, centre):
    state = design_state(x, runs, 64.0, rate=0.0)
    laws = [law.law for law in state.laws]
    return conformal_rate(calibration_ratios(laws, x, centre, state.count, state.noise))


def test_when_no_law_holds_its_check_the_factor_is_not_calibrated_below_one():
    x, runs, centre = _broken(1.6)  # every law misses 32 or departs from the counts
    state = design_state(x, runs, 64.0, pooled=0.1)
    assert all(
        why.startswith("kept")
        for why in (state.rejected[law.name] for law in state.laws)
    )
    assert state.unchecked
    assert _own_rate(x, runs, centre) < 0.6  # its own errors alone would narrow it
    assert state.rate == 1.0
    assert design_state(x, runs, 64.0, pooled=2.0).rate == 2.0
    assert design_state(x, runs, 64.0, rate=0.3).rate == 0.3  # given: as it is
    x, runs, centre = _broken(1.3)  # a law still holds: the calibrated factor
    state = design_state(x, runs, 64.0, pooled=0.1)
    assert not any(why.startswith("kept") for why in state.rejected.values())
    assert not state.unchecked
    assert state.rate == pytest.approx(max(_own_rate(x, runs, centre), 0.1))
    assert state.rate < 0.5
