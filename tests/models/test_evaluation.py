"""evaluate(): one Dask graph over model x group x split x fold, on two workers."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scaleprobe.models import (
    ExtrapolationSplit,
    LeaveOneBandwidthOut,
    LeaveOneScaleOut,
    ScalingLaw,
    make_features,
)
from scaleprobe.models.core.interface import ModelBase
from scaleprobe.models.evaluation.crossval import (
    ConfigurationKFold,
    _fit_score,
    evaluate,
    summarize,
)
from scaleprobe.models.evaluation.metrics import score_predictions
from scaleprobe.models.selection.rules import select_model
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.model_selection import KFold

ENSEMBLE = {
    f: ScalingLaw(form=f, over="ranks", s0=20)
    for f in ("base", "generalized", "refined", "generalized_refined")
}


def test_metrics_known_values():
    scores = score_predictions([1.0, 2.0, 4.0], [1.05, 2.0, 2.0])
    assert scores["mape"] == pytest.approx(100 * (0.05 + 0 + 0.5) / 3)
    assert scores["max_relative_error"] == pytest.approx(0.5)
    assert scores["within_10"] == pytest.approx(2 / 3)
    assert scores["within_30"] == pytest.approx(2 / 3)
    assert scores["smape"] == pytest.approx(100 * (0.1 / 2.05 + 0 + 4 / 6) / 3)
    assert scores["mse"] == pytest.approx((0.0025 + 0 + 4) / 3)
    assert scores["r2"] == pytest.approx(1 - scores["mse"] * 3 / (14 / 3))


@pytest.mark.slow
def test_evaluate_uses_both_workers_and_selects_true_model(results, client):
    scores = evaluate(ENSEMBLE, results, client=client, s0=20)
    assert set(scores["cv"].values) == {"kfold", "extrapolation"}
    assert scores.sizes["model"] == 5  # the naive baseline is always scored
    assert "baseline" in scores["model"].values
    ran_on = {w for w in scores["worker"].values.ravel() if isinstance(w, str)}
    assert ran_on == set(client.scheduler_info()["workers"])
    assert select_model(scores) == "generalized_refined"
    table = summarize(scores).set_index(["model", "cv"])
    best = table.loc[("generalized_refined", "extrapolation")]
    assert best["smape"] < 2
    assert best["r2"] > 0.99
    # The range of consistent laws, from the training fold only, holds the held-out
    # configurations of a correct model.
    assert 0.75 < best["coverage"] <= 1.0
    assert best["interval_ratio"] < 1.2
    assert table.loc[("base", "extrapolation"), "smape"] > 10 * best["smape"]


@pytest.mark.slow
def test_evaluate_groups_and_custom_splitters(results):
    cv = {
        "bandwidth": LeaveOneBandwidthOut(),
        "extrapolation": ExtrapolationSplit("nodes", train_max=8),
    }
    scores = evaluate(
        {"refined": ENSEMBLE["refined"]}, results, cv=cv, groupby="scale", s0=20
    )
    assert list(scores["group"].values) == ["scale=20", "scale=21", "scale=22"]
    bandwidth = scores["smape"].sel(cv="bandwidth", model="refined")
    assert int(bandwidth.notnull().sum()) == 3 * 4  # 3 scales x 4 bandwidths
    assert float(scores["smape"].sel(cv="extrapolation", model="refined").mean()) < 2
    across = evaluate(
        {"gr": ENSEMBLE["generalized_refined"]},
        results,
        cv={"scale": LeaveOneScaleOut()},
        s0=20,
    )
    assert int(across["smape"].notnull().sum()) == 3
    assert float(across["smape"].mean()) < 2  # Eq. 7 extrapolates to unseen scales


def test_evaluate_accepts_frames_and_rejects_bad_input(results):
    X, y = make_features(results, s0=20)
    scores = evaluate([ENSEMBLE["base"]], (X, y), cv=KFold(3), s0=20, baseline=False)
    assert list(scores["model"].values) == ["base"]
    with pytest.raises(ValueError, match="groupby"):
        evaluate(ENSEMBLE, (X, y), groupby="colour")
    with pytest.raises(ValueError, match="not evaluated"):
        select_model(scores, cv="extrapolation")


def test_splitters_follow_the_protocol(results):
    X, _ = make_features(results, s0=20)
    split = ExtrapolationSplit("nodes", n_splits=3)
    folds = list(split.split(X))
    assert len(folds) == split.get_n_splits(X) == 3
    for train, test in folds:
        assert X["nodes"].iloc[train].max() < X["nodes"].iloc[test].min()
    assert X["nodes"].iloc[folds[0][1]].unique().tolist() == [32]
    assert LeaveOneScaleOut().get_n_splits(X) == 3
    assert LeaveOneBandwidthOut().get_n_splits(X) == 4
    with pytest.raises(ValueError, match="no column"):
        list(ExtrapolationSplit("cores").split(X))


def test_configuration_folds_fit_any_number_of_configurations(results):
    X, _ = make_features(results.isel(nodes=[1, 2, 3]), s0=20)
    X = X[(X["scale"] == 20) & (X["bandwidth"] == 100)]
    folds = list(ConfigurationKFold(5).split(X))
    assert len(folds) == 3  # three configurations, three folds, no crash
    for train, test in folds:
        assert X["nodes"].iloc[test].nunique() == 1
        assert not set(X["nodes"].iloc[test]) & set(X["nodes"].iloc[train])
    assert ConfigurationKFold(5).get_n_splits(X.iloc[:3]) == 0


class ZeroFloorModel(ModelBase, RegressorMixin, BaseEstimator):
    """Predicts 1/nodes; its interval (a range of its own) reaches zero below 4."""

    interval_method = "consistent-range"

    def fit(self, X, y):
        return self

    def predict(self, X):
        return 1.0 / X["nodes"].to_numpy(dtype=float)

    def predict_interval(self, X, *, level=0.9):
        pred = self.predict(X)
        lower = np.where(X["nodes"].to_numpy() < 4, 0.0, 0.5 * pred)
        return lower, 2.0 * pred


def test_an_interval_reaching_zero_has_an_unbounded_ratio():
    X = pd.DataFrame({"nodes": [1, 2, 4, 8, 16, 32], "ppn": 1})
    y = 1.0 / X["nodes"].to_numpy(dtype=float)
    # test configurations 1, 2, 4: two of three lower bounds are zero
    row = _fit_score(ZeroFloorModel(), (X, y), [3, 4, 5], [0, 1, 2], 0.9)
    assert row["coverage"] == 1.0
    assert row["interval_ratio"] == np.inf
    # 8, 16, 32: every bound positive, the ratio is 2 / 0.5
    row = _fit_score(ZeroFloorModel(), (X, y), [0, 1, 2], [3, 4, 5], 0.9)
    assert row["interval_ratio"] == pytest.approx(4.0)


def test_summary_takes_the_median_interval_ratio_over_folds():
    scores = xr.Dataset(
        {
            "smape": (("model", "cv", "group", "fold"), [[[[10.0, 20.0, 30.0]]]]),
            "interval_ratio": (
                ("model", "cv", "group", "fold"),
                [[[[3.0, np.inf, 5.0]]]],
            ),
        },
        coords={"model": ["m"], "cv": ["kfold"], "group": ["all"], "fold": [0, 1, 2]},
    )
    row = summarize(scores).iloc[0]
    assert row["smape"] == pytest.approx(20.0)
    assert row["interval_ratio"] == pytest.approx(5.0)
