"""A jump over the last measured step: a change of regime, not a trend to continue."""

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    PowerLawBaseline,
    RegimeChangeWarning,
    RegimeTrend,
    UnreliableModelWarning,
    fit_ensemble,
    load_models,
    save_models,
)
from scaleprobe.models.laws.baseline import REGIME_SLOPE, REGIME_SPREAD

COUNTS = [32, 64, 128, 256]


def _switch(p):
    """sqrt(p) growth, ten times dearer from 256 processes on (a protocol switch)."""
    p = np.asarray(p, dtype=float)
    return 3.0 * np.sqrt(p) * np.where(p >= 256, 10.0, 1.0)


def _frame(counts, runs=3, column="ranks"):
    rows = [(p, r) for p in counts for r in range(runs)]
    return pd.DataFrame(rows, columns=[column, "run"], dtype=float)


def _noisy(values, noise, seed):
    rng = np.random.default_rng(seed)
    return values * np.exp(noise * rng.standard_normal(len(values)))


def test_the_trend_after_a_switch_grows_as_before_it():
    X = _frame(COUNTS, runs=1)
    trend = RegimeTrend(over="ranks").fit(X, _switch(X["ranks"]))
    change = trend.changes_[()]
    assert (change["before"], change["after"]) == (128.0, 256.0)
    assert change["slope_before"] == pytest.approx(0.5)
    assert change["slope_last"] == pytest.approx(0.5 + np.log2(10.0))
    assert change["factor"] == pytest.approx(10.0)
    beyond = _frame([512, 2048], runs=1)
    np.testing.assert_allclose(trend.predict(beyond), _switch(beyond["ranks"]))
    # the naive line through 128 and 256 continues the jump: 10x per doubling
    naive = PowerLawBaseline(over="ranks").fit(X, _switch(X["ranks"]))
    assert naive.predict(beyond)[0] == pytest.approx(10 * _switch([512])[0])


def test_the_new_regimes_slope_is_given_a_range():
    X = _frame(COUNTS, runs=1)
    trend = RegimeTrend(over="ranks").fit(X, _switch(X["ranks"]))
    beyond = _frame([256, 1024], runs=1)
    lower, upper = trend.predict_interval(beyond)
    centre = _switch(beyond["ranks"])
    # none at the point it continues from; 2 doublings later, 2**(+-2 * spread)
    factor = 2.0 ** (2 * REGIME_SPREAD * np.array([0, 1]))
    np.testing.assert_allclose(lower, centre / factor)
    np.testing.assert_allclose(upper, centre * factor)
    smooth = RegimeTrend(over="ranks").fit(X, 3 * np.sqrt(X["ranks"]))
    lower, upper = smooth.predict_interval(beyond)
    np.testing.assert_array_equal(lower, upper)


def test_a_drop_into_a_cache_is_a_change_of_regime_too():
    X = _frame(COUNTS, runs=1)
    y = 50.0 / X["ranks"] * np.where(X["ranks"] >= 256, 0.1, 1.0)
    trend = RegimeTrend(over="ranks").fit(X, y)
    assert trend.changes_[()]["factor"] == pytest.approx(0.1)
    assert trend.predict(_frame([512], runs=1))[0] == pytest.approx(50 / 512 * 0.1)


def test_every_group_is_judged_on_its_own_steps():
    X = pd.concat(
        [_frame(COUNTS, runs=1).assign(bandwidth=b) for b in (25.0, 100.0)],
        ignore_index=True,
    )
    y = np.where(X["bandwidth"] == 25.0, _switch(X["ranks"]), 3 * np.sqrt(X["ranks"]))
    trend = RegimeTrend(over="ranks").fit(X, y)
    assert list(trend.changes_) == [(25.0,)]
    smooth = X[X["bandwidth"] == 100.0]
    np.testing.assert_allclose(
        trend.predict(smooth),
        PowerLawBaseline(over="ranks").fit(X, y).predict(smooth),
    )


@pytest.mark.parametrize(
    "law",
    [
        lambda p: 1.0 + 1e-6 * p**3,  # a cubic term taking over
        lambda p: 100 / p + 0.02 * p,  # strong scaling meeting communication
        lambda p: 100 / p + 0.5 * np.log2(p),
        lambda p: 2.0 + 1e-4 * p**2,
    ],
)
@pytest.mark.parametrize("ratio", [2, 4])
def test_smooth_laws_never_read_as_a_change_of_regime(law, ratio):
    # Across every window of three steps and 5 % noise (ten draws), the smooth laws
    # of the projection benchmarks never change slope by REGIME_SLOPE.
    counts = ratio ** np.arange(0, 7 if ratio == 2 else 5, dtype=float)
    for seed in range(10):
        for end in range(3, len(counts) + 1):
            X = _frame(counts[:end], runs=1)
            y = _noisy(law(X["ranks"].to_numpy()), 0.05, seed)
            assert RegimeTrend(over="ranks").fit(X, y).changes_ == {}, (seed, end)
    assert REGIME_SLOPE == 2.5


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
def test_the_ensemble_continues_the_new_regime_and_says_so(tmp_path):
    X = _frame(COUNTS)
    y = _noisy(_switch(X["ranks"]), 0.03, seed=1)
    # beyond the switch the time grows as p**0.3, not p**0.5 as before it
    truth = _switch([256])[0] * (np.array([512.0, 1024.0]) / 256) ** 0.3
    with pytest.warns(RegimeChangeWarning, match="change of regime") as caught:
        fit = fit_ensemble((X, y))
    # the selection's "no model extrapolates" is superseded, not shown beside it
    assert not any("no model extrapolates" in str(w.message) for w in caught)
    assert fit.selected == "regime"
    assert "between 128 and 256 ranks, 10" in fit.verdict.reason
    assert "cannot tell whether another change follows" in fit.verdict.reason
    projection = fit.project(nodes=[512, 1024], ppn=1)
    predicted = projection["time_predicted"].values.ravel()
    # the old slope, continued: off where the new one differs, which the interval holds
    np.testing.assert_allclose(predicted, _switch([512, 1024]), rtol=0.05)
    lower = projection["time_lower"].values.ravel()
    upper = projection["time_upper"].values.ravel()
    assert np.all(lower <= truth)
    assert np.all(truth <= upper)
    assert np.all(np.isfinite(upper))
    # laws fitted across the jump are not joined into the interval
    assert "interval_models" not in projection.attrs
    path = tmp_path / "models.json"
    save_models(path, fit)
    loaded = load_models(path)
    assert loaded.selected == "regime"
    np.testing.assert_allclose(
        loaded.project(nodes=[512, 1024], ppn=1)["time_predicted"].values.ravel(),
        predicted,
    )


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
def test_a_jump_after_noise_is_no_regime_and_changes_no_verdict():
    counts = [2, 3, 4, 6, 8, 12, 16]
    X = _frame(counts, column="nodes").assign(ppn=1.0)
    X["ranks"] = X["nodes"]
    rng = np.random.default_rng(3)
    level = dict(zip(counts, np.exp(1.5 * rng.standard_normal(7)), strict=True))
    y = X["nodes"].map(level).to_numpy() * _noisy(np.ones(len(X)), 0.02, 0)
    assert RegimeTrend().fit(X, y).changes_  # the last step does jump
    with pytest.warns(UnreliableModelWarning, match="no model extrapolates"):
        fit = fit_ensemble((X, y))
    assert fit.selected is None
    assert "regime" not in fit.models
    assert any("not read as a change of regime" in note for note in fit.notes)


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
def test_a_model_of_what_the_program_sends_keeps_its_trust():
    from scaleprobe.models import TrafficModel, Verdict
    from scaleprobe.models.selection.regimes import continue_regime

    X = _frame(COUNTS)
    y = _noisy(_switch(X["ranks"]), 0.03, seed=1)
    with pytest.warns(RegimeChangeWarning):
        fit = fit_ensemble((X, y))
    # as when the traffic-informed model (a model of what the program sends) wins
    models = {**fit.models, "traffic": TrafficModel()}
    verdict = Verdict("traffic", "scaleprobe trusts traffic")
    with pytest.warns(RegimeChangeWarning, match="models what the program sends"):
        verdict, _ = continue_regime(
            verdict, models, X, y, True, column="ranks", level=0.9, limit=50.0
        )
    assert verdict.trusted == "traffic"
    assert verdict.reason == "scaleprobe trusts traffic"
