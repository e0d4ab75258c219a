"""Measurements without a trend beyond their noise: their level, not a noisy slope."""

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    FlatTrend,
    InsufficientDataWarning,
    NoTrendWarning,
    RegimeChangeWarning,
    fit_ensemble,
    load_models,
    save_models,
    trend_tests,
)
from scaleprobe.models.laws.flat import NO_TREND_LEVEL, no_trend
from scipy import stats

# LULESH's LagrangeLeapFrog region on 27..216 ranks, one run each (Thicket's
# mpi_scaling_cali): weak scaling, the level wanders by 25 %; 343 ranks took 36.1 s.
LEAPFROG = {27: 39.35, 64: 43.68, 125: 42.68, 216: 33.91}


def _frame(counts, runs=1, column="ranks"):
    rows = [(p, r) for p in counts for r in range(runs)]
    return pd.DataFrame(rows, columns=[column, "run"], dtype=float)


def _noisy(values, noise, seed):
    rng = np.random.default_rng(seed)
    return np.asarray(values, float) * np.exp(noise * rng.standard_normal(len(values)))


def test_the_level_is_the_geometric_mean_of_the_centres_per_configuration():
    rows = [(p, b, r) for p in (2, 4, 8, 16) for b in (100, 50) for r in (0, 1)]
    X = pd.DataFrame(rows, columns=["ranks", "bandwidth", "run"], dtype=float)
    y = np.where(X["bandwidth"] == 100, 10.0, 40.0) * np.where(X["run"] == 0, 0.9, 1.1)
    flat = FlatTrend(over="ranks").fit(X, y)
    centre = 10.0 * np.sqrt(0.9 * 1.1)
    beyond = pd.DataFrame({"ranks": [64.0, 4096.0], "run": 0.0, "bandwidth": 100.0})
    np.testing.assert_allclose(flat.predict(beyond), [centre, centre])
    np.testing.assert_allclose(
        flat.predict(beyond.assign(bandwidth=50.0)), [4 * centre, 4 * centre]
    )
    with pytest.raises(ValueError, match="no baseline for bandwidth=25"):
        flat.predict(beyond.assign(bandwidth=25.0))


def test_the_interval_holds_a_term_too_small_to_show_in_the_data():
    # 10 + 0.02 p: 3 % more on 16 nodes than on 2, three times as much on 1024
    X = _frame([2, 3, 4, 6, 8, 12, 16], runs=1)
    y = _noisy(10 + 0.02 * X["ranks"], 0.05, 11)
    flat = FlatTrend(over="ranks").fit(X, y)
    assert no_trend(flat)
    lower, upper = flat.predict_interval(_frame([32, 128, 1024]), level=0.9)
    truth = 10 + 0.02 * np.array([32.0, 128.0, 1024.0])
    assert np.all(lower <= truth)
    assert np.all(truth <= upper)
    # it widens with the distance, as the plausible laws part
    assert np.all(np.diff(upper / lower) > 0)
    # the line through the centres bounds only a power law's slope: too little here
    line = flat.spread_[()]
    bound = stats.t.ppf(0.95, line["dof"]) * line["sigma"] / np.sqrt(line["sxx"])
    assert abs(line["slope"]) + bound < np.log(truth[-1] / 10) / np.log(1024 / 9)


def test_repeated_runs_of_a_flat_program_give_a_narrow_interval():
    X = _frame([2, 4, 8, 16], runs=5)
    y = _noisy(np.full(len(X), 10.0), 0.01, 5)
    flat = FlatTrend(over="ranks").fit(X, y)
    lower, upper = flat.predict_interval(_frame([32]))
    assert lower[0] <= 10.0 <= upper[0]
    assert upper[0] / lower[0] < 1.3


def test_one_count_gives_the_level_alone_and_says_so():
    flat = FlatTrend(over="ranks").fit(_frame([4]), [10.0])
    with pytest.warns(InsufficientDataWarning, match="one process count"):
        lower, upper = flat.predict_interval(_frame([8]))
    assert lower[0] == upper[0] == pytest.approx(10.0)


def test_trend_tests_on_known_series():
    counts = [2, 4, 8, 16]
    # a monotone series is a trend whatever its shape: Kendall's exact p is 2/4!
    rising = trend_tests(counts, [np.log([v]) for v in (1.0, 1.1, 1.3, 9.0)])
    assert rising["rank"] == pytest.approx(2 / 24)
    assert rising["rank"] < NO_TREND_LEVEL
    # wandering single runs: neither the slope nor the order says anything
    wander = trend_tests(counts, [np.log([v]) for v in (10.2, 9.7, 10.4, 9.9)])
    assert set(wander) == {"slope", "rank"}
    assert min(wander.values()) > NO_TREND_LEVEL
    # with repeated runs the spread between counts is weighed against the runs'
    runs = [np.log([10.0, 10.1]), np.log([10.5, 10.6]), np.log([9.6, 9.7])]
    between = trend_tests([2, 4, 8], runs)
    assert set(between) == {"replicates"}  # three counts: no slope or rank test
    assert between["replicates"] < 0.01
    same = trend_tests([2, 4, 8], [np.log([9.0, 11.0])] * 3)
    assert same["replicates"] == pytest.approx(1.0)


def test_too_few_counts_are_never_read_as_flat():
    flat = FlatTrend(over="ranks").fit(_frame([2, 4, 8]), [10.0, 10.1, 9.9])
    assert flat.spread_[()]["tests"] == {}
    assert not no_trend(flat)


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
def test_the_ensemble_projects_the_level_of_a_series_without_trend(tmp_path):
    X = _frame(list(LEAPFROG))
    y = np.array(list(LEAPFROG.values()))
    with pytest.warns(NoTrendWarning, match="no trend in ranks beyond their noise"):
        fit = fit_ensemble((X, y))
    assert fit.selected == "flat"
    assert "cannot tell a trend of up to" in fit.verdict.reason
    level = float(np.exp(np.mean(np.log(y))))
    projection = fit.project(nodes=[343, 1024], ppn=1)
    predicted = projection["time_predicted"].values.ravel()
    np.testing.assert_allclose(predicted, [level, level])
    # 343 ranks took 36.1 s: the level is 10 % off, the noisy slopes were not
    assert abs(predicted[0] / 36.116 - 1) < 0.11
    assert abs(fit.models["baseline"].predict(_frame([343]))[0] / 36.116 - 1) > 0.2
    lower = projection["time_lower"].values.ravel()
    upper = projection["time_upper"].values.ravel()
    assert lower[0] <= 36.116 <= upper[0]
    assert np.all(upper / lower > 1.5)  # a slope of +-0.29 hides in the noise
    # the model selected before is a plausible alternative whose interval joins
    assert "baseline" in fit.plausible
    assert "flat" in set(fit.summary["model"])
    path = tmp_path / "models.json"
    save_models(path, fit)
    loaded = load_models(path)
    assert loaded.selected == "flat"
    np.testing.assert_allclose(
        loaded.project(nodes=[343, 1024], ppn=1)["time_predicted"].values.ravel(),
        predicted,
    )


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.UnreliableModelWarning")
@pytest.mark.parametrize("seed", range(5))
def test_a_strong_scaling_series_is_never_read_as_flat(seed):
    X = _frame([2, 4, 8, 16], runs=1, column="nodes").assign(ppn=1.0)
    X["ranks"] = X["nodes"]
    y = _noisy(100 / X["nodes"] + 0.5 * np.log2(X["nodes"]), 0.05, seed)
    fit = fit_ensemble((X, y))
    assert fit.selected != "flat"
    assert "flat" not in fit.models


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
def test_a_jump_is_a_change_of_regime_not_noise():
    # an algorithm switch between 128 and 256 ranks: the slope test alone (p 0.11)
    # would not see a trend; the order of the counts does
    X = _frame([32, 64, 128, 256])
    y = np.array([30.13, 42.18, 59.27, 580.5])
    with pytest.warns(RegimeChangeWarning):
        fit = fit_ensemble((X, y))
    assert fit.selected == "regime"
    assert "flat" not in fit.models


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.UnreliableModelWarning")
def test_repeated_runs_that_differ_between_counts_are_a_trend():
    # a U shape: 16/p + p/4 on 2..16 nodes, three runs each, 2 % noise
    X = _frame([2, 4, 8, 16], runs=3, column="nodes").assign(ppn=1.0)
    X["ranks"] = X["nodes"]
    y = _noisy(16 / X["nodes"] + X["nodes"] / 4, 0.02, 7)
    flat = FlatTrend().fit(X, y)
    tests = flat.spread_[()]["tests"]
    assert tests["slope"] > NO_TREND_LEVEL  # the line through a U is flat
    assert tests["replicates"] < NO_TREND_LEVEL
    fit = fit_ensemble((X, y))
    assert fit.selected != "flat"


@pytest.mark.filterwarnings("ignore::scaleprobe.models.DegenerateFitWarning")
@pytest.mark.filterwarnings("ignore::scaleprobe.models.InsufficientDataWarning")
def test_a_model_of_what_the_program_sends_keeps_its_trust():
    from scaleprobe.models import TrafficModel, Verdict
    from scaleprobe.models.selection.no_trend import trust_flat

    X = _frame(list(LEAPFROG))
    y = np.array(list(LEAPFROG.values()))
    with pytest.warns(NoTrendWarning):
        fit = fit_ensemble((X, y))
    # as when the traffic-informed model (a model of what the program sends) wins
    models = {**fit.models, "traffic": TrafficModel()}
    verdict = Verdict("traffic", "scaleprobe trusts traffic")
    verdict, answered = trust_flat(
        verdict,
        models,
        fit.scores,
        X,
        y,
        training=fit.training,
        splitters={},
        column="ranks",
        level=0.9,
        limit=50.0,
    )
    assert not answered
    assert verdict.trusted == "traffic"


def test_bad_input_is_refused_with_what_is_allowed():
    with pytest.raises(ValueError, match="over must be 'nodes' or 'ranks'"):
        FlatTrend(over="cores").fit(_frame([2, 4]), [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        FlatTrend(over="ranks").fit(_frame([2, 4]), [1.0, -2.0])
    flat = FlatTrend(over="ranks").fit(_frame(list(LEAPFROG)), list(LEAPFROG.values()))
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
        flat.predict_interval(_frame([343]), level=90)
