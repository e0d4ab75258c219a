"""Feature frames: what make_features keeps, refuses and never invents."""

import json

import numpy as np
import pytest
from scaleprobe.kernels.schema import LinkConfig
from scaleprobe.models import link_of, make_features, prediction_frame


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


def test_nothing_is_invented(make_results):
    ds = make_results(scale=(20,)).isel(scale=0, ppn=0, bandwidth=0, drop=True)
    # A Dataset over nodes without ppn: the rank count would be a guess.
    with pytest.raises(ValueError, match="no ppn"):
        make_features(ds)
    X, _ = make_features(ds, ppn=2)
    assert (X["ppn"] == 2).all()
    np.testing.assert_array_equal(X["ranks"], 2 * X["nodes"])
    assert "bandwidth" not in X.columns  # no bandwidth = 100 made up
    assert "D" not in X.columns
    with pytest.raises(ValueError, match="ppn must be positive"):
        make_features(ds, ppn=0)


def test_rank_only_data_keep_ranks_without_nodes(make_results):
    ds = make_results(scale=(20,)).isel(scale=0, ppn=0, drop=True)
    ds = ds.rename(nodes="ranks")
    X, _ = make_features(ds)
    assert "ranks" in X.columns
    assert "nodes" not in X.columns
    assert "ppn" not in X.columns
    X, _ = make_features(ds, ppn=4)
    np.testing.assert_array_equal(X["nodes"], X["ranks"] / 4)


def test_traffic_columns_need_the_records_and_the_link(results):
    with pytest.raises(ValueError, match="critical-path"):
        make_features(results, traffic=True)
    ds = results.copy()
    for name in (
        "cp_comp_time",
        "cp_latency_time",
        "cp_bandwidth_time",
        "cp_intra_time",
    ):
        ds[name] = ds["time"] / 4
    with pytest.raises(ValueError, match="link"):
        make_features(ds, traffic=True)
    ds.attrs["link_model"] = json.dumps({"link_bandwidth": 1.25e8, "latency": 5e-6})
    X, _ = make_features(ds, traffic=True, s0=20)
    assert (X["link_bandwidth"] == 1.25e8).all()
    assert (X["latency"] == 5e-6).all()
    assert list(X.columns[-6:-2]) == [
        "cp_comp_time",
        "cp_latency_time",
        "cp_bandwidth_time",
        "cp_intra_time",
    ]
    # the store keeps the link as typed attributes of the bandwidth coordinate
    link = LinkConfig(mode="emulated", link_bandwidth=1e10, latency=1e-6)
    ds["bandwidth"].attrs.update(link.to_attrs())
    assert link_of(ds) == {"link_bandwidth": 1e10, "latency": 1e-6}


def test_prediction_frame_is_the_full_grid():
    frame = prediction_frame(
        [2, 4, 8],
        ppn=4,
        bandwidth=[100, 25],
        scale=[20, 21],
        s0=20,
        link={"link_bandwidth": 1e9, "latency": 1e-6},
    )
    assert len(frame) == 12
    np.testing.assert_array_equal(frame["ranks"], 4 * frame["nodes"])
    np.testing.assert_allclose(frame["D"], 2.0 ** (frame["scale"] - 20))
    assert (frame["latency"] == 1e-6).all()
    with pytest.raises(ValueError, match="nodes must be positive"):
        prediction_frame([0, 2], ppn=1)
    with pytest.raises(ValueError, match="ppn must be positive"):
        prediction_frame([2], ppn=-1)
