"""Features, projection, intervals and the JSON model form."""

import json

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    PMNFSearch,
    ScalingLaw,
    crossover_nodes,
    diminishing_returns_nodes,
    make_features,
    parallel_efficiency,
    speedup,
)
from scaleprobe.models.intervals import PredictionInterval, conformal_interval
from scaleprobe.models.projection import project
from scaleprobe.models.serialization import load_models, model_to_dict, save_models


def test_features_drop_failed_points_and_flatten_trials(results):
    X, y = make_features(results, s0=20)
    n_points = results["status"].size
    failed = int((results["status"] != "ok").sum())
    assert len(X) == len(y) == (n_points - failed) * results.sizes["trial"]
    assert list(X.columns[:6]) == ["nodes", "ppn", "ranks", "bandwidth", "scale", "D"]
    assert {"run", "trial"} <= set(X.columns)
    np.testing.assert_array_equal(X["ranks"], X["nodes"] * X["ppn"])
    np.testing.assert_allclose(X["D"], 2.0 ** (X["scale"] - 20))
    assert y.notna().all()
    other, _ = make_features(results, target="comm_time", s0=20)
    assert len(other) == len(X)
    with pytest.raises(ValueError, match="target 'teps'"):
        make_features(results, target="teps")


def test_features_without_scale_or_ppn(make_results):
    ds = make_results(scale=(20,)).isel(scale=0, ppn=0, drop=True)
    X, _ = make_features(ds)
    assert "D" not in X.columns
    assert (X["ppn"] == 1).all()


def _fitted(results):
    X, y = make_features(results, s0=20)
    model = ScalingLaw(form="generalized_refined", over="ranks", s0=20).fit(X, y)
    return model, X, y


def test_project_dataset_shape_and_components(results):
    model, X, y = _fitted(results)
    interval = conformal_interval(model, X, y, level=0.9)
    ds = project(
        model,
        nodes=[4, 64, 1024],
        bandwidth=[100, 25],
        scale=[21, 22],
        ppn=4,
        interval=interval,
    )
    assert ds["time_predicted"].dims == ("nodes", "bandwidth", "scale")
    for name in ("time_predicted", "time_lower", "time_upper", "teps_predicted"):
        assert ds[name].attrs["units"]
        assert ds[name].attrs["long_name"]
    assert (ds["time_lower"] < ds["time_predicted"]).all()
    assert (ds["time_upper"] > ds["time_predicted"]).all()
    np.testing.assert_allclose(
        ds["time_computation"] + ds["time_communication"], ds["time_predicted"]
    )
    expected = (16 * 2.0 ** ds["scale"] / ds["time_predicted"]).transpose(
        *ds["teps_predicted"].dims
    )
    np.testing.assert_allclose(ds["teps_predicted"], expected)
    assert list(ds["term"].values) == list(model.terms_)
    width = np.log(ds["time_upper"] / ds["time_predicted"]).sel(bandwidth=100, scale=22)
    assert width.sel(nodes=1024) > width.sel(nodes=64) > 0  # wider further out
    truth = project(
        ScalingLaw.from_coefficients(
            "generalized_refined", [200, 6], alpha=1.12, s0=20, over="ranks"
        ),
        nodes=[4, 64, 1024],
        bandwidth=[100, 25],
        scale=[21, 22],
        ppn=4,
    )
    inside = (truth["time_predicted"] >= ds["time_lower"]) & (
        truth["time_predicted"] <= ds["time_upper"]
    )
    assert bool(inside.all())


def test_interval_coverage_on_held_out_large_nodes(results):
    X, y = make_features(results, s0=20)
    small = X["nodes"] <= 16
    model = ScalingLaw(form="generalized_refined", over="ranks", s0=20)
    interval = conformal_interval(model, X[small], y[small], level=0.9)
    fitted = model.fit(X[small], y[small])
    lower, upper = interval.bounds(fitted.predict(X[~small]), X["nodes"][~small])
    coverage = np.mean((y[~small] >= lower) & (y[~small] <= upper))
    assert coverage >= 0.85
    assert PredictionInterval.from_dict(interval.to_dict()) == interval


def test_json_round_trip_and_hand_written_file(results, tmp_path):
    model, X, y = _fitted(results)
    search = PMNFSearch(parameter="ranks", data=True, bandwidth=True, s0=20).fit(X, y)
    interval = conformal_interval(model, X, y)
    path = save_models(
        tmp_path / "m.json",
        {"gr": model, "pmnf": search},
        intervals={"gr": interval},
        selected="gr",
    )
    models, intervals, selected = load_models(path)
    assert selected == "gr"
    assert intervals["gr"] == interval
    np.testing.assert_allclose(models["gr"].predict(X), model.predict(X))
    np.testing.assert_allclose(models["pmnf"].predict(X), search.predict(X))
    entry = json.loads(path.read_text())["models"]["gr"]
    rebuilt = ScalingLaw.from_coefficients(**entry["law"])
    np.testing.assert_allclose(rebuilt.predict(X), model.predict(X))
    # Coefficients typed in from a paper (Table III, scale 28).
    hand = tmp_path / "paper.json"
    hand.write_text(
        json.dumps(
            {
                "format": "scaleprobe-models",
                "version": 1,
                "models": {
                    "eq6": {
                        "law": {
                            "form": "refined",
                            "coef": [118.026, 5.968],
                            "alpha": 1.11,
                            "ppn": 18,
                        }
                    }
                },
            }
        )
    )
    models, intervals, selected = load_models(hand)
    assert selected == "eq6"
    assert intervals == {}
    assert crossover_nodes(models["eq6"], admissible=[4, 9, 16, 25, 36]) == 25
    assert model_to_dict(models["eq6"])["law"]["coef"] == [118.026, 5.968]
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a scaleprobe model file"):
        load_models(tmp_path / "bad.json")


def test_speedup_efficiency_and_diminishing_returns():
    model = ScalingLaw.from_coefficients("base", [100.0, 2.0])
    nodes = np.array([1.0, 4.0, 16.0])
    time = model.predict(pd.DataFrame({"nodes": nodes}))
    np.testing.assert_allclose(speedup(time, time[0]), time[0] / time)
    efficiency = parallel_efficiency(time, nodes, time[0], 1)
    assert efficiency[0] == 1
    assert np.all(np.diff(efficiency) < 0)
    n = diminishing_returns_nodes(model, fraction=0.35)

    def gain(k):
        return 1 - model.predict([[2 * k]])[0] / model.predict([[k]])[0]

    assert gain(n) < 0.35 <= gain(n / 2)
