"""FiM's wait for the slowest of q ranks: the expected maximum of q ranks' times over
the mean rank's, fitted on the training's ratios and carried to counts never run."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import InsufficientDataWarning, describe_model
from scaleprobe.models.fim.model import FiM
from scaleprobe.models.fim.wait import excess, fit_wait, wait_factor
from scaleprobe.models.io.serialization import _decode, _encode

F = 2e9
CYCLES_PER_POINT = 400.0


def test_the_exponential_excess_is_the_harmonic_number_less_one():
    q = np.array([1, 2, 3, 4, 32])
    harmonic = np.array([sum(1 / k for k in range(1, n + 1)) for n in q])
    np.testing.assert_allclose(excess(q, "exponential"), harmonic - 1, rtol=1e-12)


def test_the_normal_excess_has_its_closed_forms_at_two_and_three():
    # E[max of 2 standard normals] = 1/sqrt(pi), of 3 = 3/(2 sqrt(pi))
    values = excess([1, 2, 3], "normal")
    np.testing.assert_allclose(
        values, [0.0, 1 / math.sqrt(math.pi), 1.5 / math.sqrt(math.pi)], rtol=1e-7
    )


@pytest.mark.parametrize("tail", ["exponential", "normal"])
def test_the_excess_is_the_mean_maximum_of_simulated_draws(tail):
    rng = np.random.default_rng(3)
    draw = rng.standard_exponential if tail == "exponential" else rng.standard_normal
    for q in (4, 32):
        maxima = draw((40000, q)).max(axis=1)
        mean = 1.0 if tail == "exponential" else 0.0
        # the Monte-Carlo mean's standard error is below 0.01 for both tails
        assert abs(maxima.mean() - mean - excess([q], tail)[0]) < 0.03


def test_an_unknown_tail_is_refused():
    with pytest.raises(ValueError, match="tail must be one of"):
        excess([2], "pareto")


@pytest.mark.parametrize("tail", ["exponential", "normal"])
def test_the_spread_of_known_ratios_is_recovered(tail):
    q = np.repeat([1.0, 2.0, 4.0], 3)
    size = np.tile([1e4, 2e4, 4e4], 3)
    ratio = 1 + 0.08 * excess(q, tail)
    spreads = fit_wait(np.column_stack([size, q]), q, ratio, size * 1e-6)
    assert spreads[tail] == pytest.approx(0.08, rel=1e-9)
    np.testing.assert_allclose(
        wait_factor(spreads, [32.0], tail), 1 + 0.08 * excess([32.0], tail)
    )


def test_the_median_run_of_a_configuration_is_fitted_and_long_runs_weigh_more():
    # three runs of each configuration, one of them an outlier; the short size's
    # ratios twice the long one's
    q = np.array([2.0, 2, 2, 4, 4, 4, 2, 2, 2, 4, 4, 4])
    size = np.array([1.0] * 6 + [100.0] * 6)
    e = excess(q, "exponential")
    ratio = 1 + np.where(size > 1, 0.05, 0.10) * e
    ratio[[0, 6]] = 3.0  # one slow run of each size on 2 ranks
    spreads = fit_wait(np.column_stack([size, q]), q, ratio, size)
    # the weighted mean of 0.10 (weight 1) and 0.05 (weight 100)
    assert spreads["exponential"] == pytest.approx((0.10 + 5.0) / 101, rel=1e-9)


def test_without_multi_process_points_or_growth_the_spread_is_zero():
    q = np.array([1.0, 1.0])
    assert fit_wait(np.c_[[1.0, 2.0], q], q, np.ones(2), np.ones(2)) == {
        "exponential": 0.0,
        "normal": 0.0,
    }
    q = np.array([1.0, 2.0, 4.0])
    # slowest "faster" than the mean cannot be: the spread is clipped at zero
    spreads = fit_wait(np.c_[[1.0, 1, 1], q], q, np.array([1.0, 0.98, 0.97]), q)
    assert spreads == {"exponential": 0.0, "normal": 0.0}


def _waiting_frame(sizes, ranks, spread, iterations=10):
    """Records whose mean rank computes CYCLES_PER_POINT per point shared by q ranks
    and whose slowest rank takes ``1 + spread (H_q - 1)`` times as long."""
    rows = []
    for n in sizes:
        for q in ranks:
            cycles = CYCLES_PER_POINT * n
            mean = cycles / F / q
            rows.append(
                {
                    "ranks": q,
                    "points": n,
                    "run": 0,
                    "stages": iterations,
                    "comp_time_iterations": mean
                    * (1 + spread * excess([q], "exponential")[0]),
                    "comp_time_iterations_mean": mean,
                    "hw_total_cycles": cycles,
                    "hw_utilisation": 0.9,
                    "hw_frequency": F,
                }
            )
    frame = pd.DataFrame(rows)
    return frame, frame["comp_time_iterations"].to_numpy()


def test_fim_predicts_the_slowest_of_many_ranks_from_four():
    X, y = _waiting_frame([1e5, 2e5, 4e5], [1, 2, 4], spread=0.1)
    model = FiM().fit(X, y)
    assert model.wait_["exponential"] == pytest.approx(0.1, rel=1e-6)
    big, _ = _waiting_frame([4e6], [8, 32, 256], spread=0.1)
    truth = big["comp_time_iterations"].to_numpy()
    np.testing.assert_allclose(
        model.predict(big[["ranks", "points", "stages"]]), truth, rtol=0.01
    )
    # fitted on the slowest rank's time, the same records miss the wait's growth
    blind = FiM(wait="none").fit(X, y).predict(big[["ranks", "points", "stages"]])
    assert blind.max() < 0.9 * truth.max()
    assert FiM(wait="none").fit(X, y).wait_ is None
    assert describe_model(model).startswith(
        "computation: FiM-Cal (alpha 1), the slowest of q ranks the mean rank's x "
        "(1 + 0.1 e(q)), e of the exponential tail"
    )
    restored = _decode(json.loads(json.dumps(_encode(model))))  # a model file's
    np.testing.assert_allclose(
        restored.predict(big[["ranks", "points", "stages"]]),
        model.predict(big[["ranks", "points", "stages"]]),
        rtol=1e-12,
    )


def test_the_interval_spans_both_tails_of_the_wait():
    X, y = _waiting_frame([1e5, 2e5, 4e5], [1, 2, 4], spread=0.1)
    model = FiM().fit(X, y)
    big, _ = _waiting_frame([4e6], [32], spread=0.1)
    low, high = model.predict_interval(big[["ranks", "points", "stages"]])
    mean = CYCLES_PER_POINT * 4e6 / F / 32
    # the normal tail's maximum of 32 grows less than the exponential's
    normal = mean * (1 + model.wait_["normal"] * excess([32], "normal")[0])
    exponential = mean * (
        1 + model.wait_["exponential"] * excess([32], "exponential")[0]
    )
    assert low[0] <= normal * 1.001
    assert high[0] >= exponential * 0.999
    assert normal < 0.95 * exponential


def test_an_unknown_wait_is_refused():
    X, y = _waiting_frame([1e5, 2e5], [1, 2], spread=0.1)
    with pytest.raises(ValueError, match="wait must be one of"):
        FiM(wait="gumbel").fit(X, y)


def test_the_mean_rank_column_is_a_measurement_not_a_feature():
    X, y = _waiting_frame([1e5, 2e5, 4e5], [1, 2, 4], spread=0.1)
    assert FiM().fit(X, y).parameters_ == ["points"]


def test_records_without_the_mean_rank_on_every_row_fit_the_slowest_ranks():
    # older records mixed with newer ones: a mean rank's time missing (NaN) or zero
    # on a row leaves nothing to take the wait from there, and FiM fits the slowest
    # rank's computation as without the column, and says so
    X, y = _waiting_frame([1e5, 2e5, 4e5], [1, 2, 4], spread=0.1)
    for gap in (np.nan, 0.0):
        mixed = X.copy()
        mixed.loc[3, "comp_time_iterations_mean"] = gap
        with pytest.warns(InsufficientDataWarning, match=r"1 of \d+ training rows"):
            model = FiM().fit(mixed, y)
        assert model.wait_ is None
        big, _ = _waiting_frame([4e6], [32], spread=0.1)
        np.testing.assert_allclose(
            model.predict(big[["ranks", "points", "stages"]]),
            FiM(wait="none").fit(X, y).predict(big[["ranks", "points", "stages"]]),
            rtol=1e-9,
        )


def test_records_without_the_mean_rank_on_any_row_fit_the_slowest_ranks_quietly():
    # a column of NaN (records of older kernels only) is no column: nothing mixed
    X, y = _waiting_frame([1e5, 2e5, 4e5], [1, 2, 4], spread=0.1)
    old = X.assign(comp_time_iterations_mean=np.nan)
    model = FiM().fit(old, y)  # filterwarnings=error: no warning
    assert model.wait_ is None
    big, _ = _waiting_frame([4e6], [32], spread=0.1)
    rows = big[["ranks", "points", "stages"]]
    np.testing.assert_allclose(
        model.predict(rows), FiM(wait="none").fit(X, y).predict(rows), rtol=1e-9
    )


def _bursting_frame(sizes, ranks, delay):
    """Records of 10 broadcasts an iteration whose every call waits ``delay``
    e(q) for the slowest rank's burst before it, beyond ``comp_time_iterations``
    (the slowest rank over a whole iteration, here the mean rank)."""
    X, _ = _waiting_frame(sizes, ranks, spread=0.0)
    q = X["ranks"].to_numpy(float)
    calls = 10.0 * X["stages"].to_numpy(float)
    collectives = 0.002 * np.log2(2 * q)
    X = X.assign(
        bcast_time=collectives,
        bcast_calls=calls,
        bcast_jobs=calls * (q - 1),
        bcast_job_bytes=8.0,
    )
    waited = delay * calls * excess(q, "exponential")
    return X, X["comp_time_iterations"].to_numpy() + collectives + waited, waited


def test_the_wait_at_every_collective_is_read_from_the_time():
    # 20 us a call: the time less the collectives is comp_time_iterations plus
    # 100 calls x 20 us x e(q); FiM takes the delay from it and carries it to 32
    # ranks, the same at every size (the bursts' length does not set it)
    X, time, _ = _bursting_frame([1e5, 2e5, 4e5], [1, 2, 4], delay=2e-5)
    model = FiM().fit(X, time)
    assert model.collective_wait_ == pytest.approx(2e-5, rel=1e-6)
    big, _, waited = _bursting_frame([4e6], [8, 32], delay=2e-5)
    rows = big[["ranks", "points", "stages"]]
    parts = model.predict_parts(rows)
    computation = big["comp_time_iterations"].to_numpy() + waited
    np.testing.assert_allclose(parts["computation"], computation, rtol=1e-3)
    assert "every collective waits 2e-05 s e(q)" in model.describe()
    # fitted on the computation alone, nothing waits
    alone = FiM().fit(X, X["comp_time_iterations"] + X["bcast_time"])
    assert alone.collective_wait_ == pytest.approx(0.0, abs=1e-15)


def test_one_run_far_out_sets_no_delay_and_one_count_sets_none():
    # 20 us a call at every size and count, but one run at 2 ranks of the largest
    # size lost 50 ms to its host: the median over the rows keeps 20 us
    X, time, _ = _bursting_frame([1e5, 2e5, 4e5], [1, 2, 4], delay=2e-5)
    q, size = X["ranks"].to_numpy(), X["points"].to_numpy()
    time = time + np.where((q == 2) & (size == 4e5), 0.05, 0.0)
    assert FiM().fit(X, time).collective_wait_ == pytest.approx(2e-5, rel=1e-6)
    # 1 and 2 ranks only: one count above one rank cannot tell a wait that grows
    # with the ranks, and FiM fits none
    X, time, _ = _bursting_frame([1e5, 2e5, 4e5], [1, 2], delay=2e-5)
    model = FiM().fit(X, time)
    assert model.collective_wait_ == 0.0
    assert "every collective waits" not in model.describe()
