"""Projection: grids with units, intervals, floors, networks, and the model file."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scaleprobe.models import (
    ExtrapolationWarning,
    PhysicalLimitWarning,
    ScalingLaw,
    calibrate_interval,
    cannot_tell_from,
    crossover_nodes,
    diminishing_returns_nodes,
    fit_ensemble,
    load_models,
    make_features,
    parallel_efficiency,
    project,
    save_models,
    speedup,
    wide_nodes,
)
from scaleprobe.models.projection.grid import CANNOT_TELL_RATIO, resolve_ppn
from scaleprobe.models.report.document import _projection_sections


def _fitted(results):
    X, y = make_features(results, s0=20)
    model = ScalingLaw(form="generalized_refined", over="ranks", s0=20).fit(X, y)
    return model, X, y


def test_project_dataset_shape_units_and_components(results):
    model, X, y = _fitted(results)
    interval = calibrate_interval(model, X, y, level=0.9)
    training = {
        "ppn": [4],
        "feature_ranges": {"scale": [20, 22], "bandwidth": [10, 100]},
        "s0": 20,
    }
    ds = project(
        model,
        nodes=[4, 64, 1024],
        bandwidth=[100, 25],
        scale=[21, 22],
        interval=interval,
        training=training,
    )
    assert ds["time_predicted"].dims == ("nodes", "bandwidth", "scale")
    assert ds.attrs["ppn"] == 4.0  # the trained ppn, not a silent 1
    assert ds["nodes"].attrs["units"] == "1"
    assert ds["bandwidth"].attrs["units"] == "percent"
    for name in ("time_predicted", "time_lower", "time_upper", "teps_predicted"):
        assert ds[name].attrs["units"]
        assert ds[name].attrs["long_name"]
    assert (ds["time_lower"] <= ds["time_predicted"]).all()
    assert (ds["time_upper"] >= ds["time_predicted"]).all()
    np.testing.assert_allclose(
        ds["time_computation"] + ds["time_communication"], ds["time_predicted"]
    )
    expected = (16 * 2.0 ** ds["scale"] / ds["time_predicted"]).transpose(
        *ds["teps_predicted"].dims
    )
    np.testing.assert_allclose(ds["teps_predicted"], expected)
    width = np.log(ds["time_upper"] / ds["time_lower"]).sel(bandwidth=100, scale=22)
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


def test_ppn_is_the_trained_one_or_an_error():
    assert resolve_ppn(None, {"ppn": [4]}) == 4.0
    with pytest.raises(ValueError, match="without a ppn"):
        resolve_ppn(None, {"ppn": None})
    with pytest.raises(ValueError, match="several ppn"):
        resolve_ppn(None, {"ppn": [1, 2]})
    with pytest.warns(ExtrapolationWarning, match="trained at ppn"):
        assert resolve_ppn(8, {"ppn": [4]}) == 8.0


def test_projection_warns_outside_the_trained_scale_and_bandwidth(results):
    model, _, _ = _fitted(results)
    training = {
        "ppn": [4],
        "s0": 20,
        "feature_ranges": {"scale": [20, 22], "bandwidth": [10, 100]},
    }
    with pytest.warns(ExtrapolationWarning, match="scale"):
        project(model, nodes=[8], scale=[26], training=training)
    with pytest.warns(ExtrapolationWarning, match="bandwidth"):
        project(model, nodes=[8], bandwidth=[5], scale=[21], training=training)


def test_time_only_laws_take_a_link_bandwidth_but_not_a_latency(results):
    model, _, _ = _fitted(results)
    training = {
        "ppn": [4],
        "s0": 20,
        "link": {"link_bandwidth": 1e9, "latency": 5e-6},
        "feature_ranges": {"bandwidth": [10, 100]},
    }
    with pytest.raises(ValueError, match="latency"):
        project(model, nodes=[8], scale=[21], training=training, link={"latency": 1e-6})
    half = project(
        model,
        nodes=[8],
        bandwidth=[100],
        scale=[21],
        training=training,
        link={"link_bandwidth": 5e8},
    )
    same = project(model, nodes=[8], bandwidth=[50], scale=[21], training=training)
    np.testing.assert_allclose(
        half["time_predicted"].values, same["time_predicted"].values
    )
    with pytest.raises(ValueError, match="training link is unknown"):
        project(
            model,
            nodes=[8],
            scale=[21],
            training={"ppn": [4], "s0": 20},
            link={"link_bandwidth": 5e8},
        )


@pytest.mark.slow  # fits whole ensembles: half a minute
def test_traffic_projection_knows_its_floor_and_other_networks(traffic):
    fit = fit_ensemble(traffic)
    assert fit.selected == "traffic"
    proj = fit.project(nodes=[2, 64, 1024], bandwidth=[100])
    floor = proj["time_floor"].sel(bandwidth=100)
    assert float(floor.sel(nodes=1024)) > float(floor.sel(nodes=64)) > 0
    assert (proj["time_predicted"] >= proj["time_floor"]).all()
    # The same program on a 10x faster, 5x lower-latency network.
    fast = fit.project(
        nodes=[64], bandwidth=[100], link={"link_bandwidth": 1.25e9, "latency": 1e-6}
    )
    assert fast.attrs["latency"] == 1e-6
    np.testing.assert_allclose(
        float(fast["time_floor"].squeeze()), float(floor.sel(nodes=64)) / 5, rtol=1e-6
    )
    assert float(fast["time_predicted"].squeeze()) < float(
        proj["time_predicted"].sel(nodes=64).squeeze()
    )
    # A time-only law that falls below the floor is called out.
    naive = ScalingLaw.from_coefficients(["1/p"], [1.0], over="nodes")
    with pytest.warns(PhysicalLimitWarning, match="latency floor"):
        project(
            naive, nodes=[1024], training=fit.training, floor_model=fit.floor_model()
        )
    # Where the traffic model was not measured (ppn 2: one ppn measured), the
    # floor cannot be priced: the projection goes on without it and says so.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        other = project(
            naive,
            nodes=[64],
            ppn=2,
            training=fit.training,
            floor_model=fit.floor_model(),
        )
    said = [str(w.message) for w in caught if w.category is ExtrapolationWarning]
    assert any(re.match(r"no latency floor .*'ppn': 2.0", text) for text in said), said
    assert "time_floor" not in other
    assert float(other["time_predicted"].squeeze()) == pytest.approx(1.0 / 64)


@pytest.mark.slow  # fits whole ensembles: half a minute
def test_model_file_round_trip_keeps_meaning(traffic, tmp_path):
    fit = fit_ensemble(traffic)
    path = save_models(tmp_path / "m.json", fit)
    document = json.loads(path.read_text())
    assert document["version"] == 2
    assert document["training"]["ppn"] == [1]
    assert document["training"]["link"] == {"link_bandwidth": 1.25e8, "latency": 5e-6}
    assert document["training"]["feature_ranges"]["nodes"] == [1.0, 8.0]
    assert document["training"]["units"]["bandwidth"] == "percent"
    loaded = load_models(path)
    assert loaded.selected == fit.selected
    assert loaded.verdict == fit.verdict
    for name in fit.models:
        a = fit.project(name, nodes=[16, 256], bandwidth=[100, 25])
        b = loaded.project(name, nodes=[16, 256], bandwidth=[100, 25])
        np.testing.assert_allclose(a["time_predicted"], b["time_predicted"])
        np.testing.assert_allclose(a["time_upper"], b["time_upper"], equal_nan=True)


def test_hand_written_version_1_file(tmp_path):
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
    fit = load_models(hand)
    assert fit.selected == "eq6"
    assert crossover_nodes(fit.models["eq6"], admissible=[4, 9, 16, 25, 36]) == 25
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a scaleprobe model file"):
        load_models(tmp_path / "bad.json")
    (tmp_path / "broken.json").write_text(
        json.dumps(
            {
                "format": "scaleprobe-models",
                "version": 1,
                "models": {"x": {"law": {"form": "refined", "coef": ["a", 1]}}},
            }
        )
    )
    with pytest.raises(ValueError, match=r"could not convert|broken\.json"):
        load_models(tmp_path / "broken.json")


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
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        crossover_nodes(model, max_nodes=64)


@pytest.mark.filterwarnings("ignore::scaleprobe.models.ScaleprobeWarning")
def test_the_projection_says_where_the_data_cannot_tell():
    rng = np.random.default_rng(5)
    nodes = np.repeat([2.0, 3.0, 4.0, 6.0, 8.0], 3)
    X = pd.DataFrame({"nodes": nodes, "ppn": 1.0, "ranks": nodes})
    X["run"] = np.tile([0.0, 1.0, 2.0], 5)
    y = (10 / nodes + 0.1 * np.log2(nodes)) * np.exp(0.05 * rng.standard_normal(15))
    fit = fit_ensemble((X, y))
    assert fit.selected is not None
    near = fit.project(nodes=[12])
    assert "cannot_tell_from" not in near.attrs
    assert fit.cannot_tell_message(near) == ""
    far = fit.project(nodes=[12, 2**16])
    ratio = (far["time_upper"] / far["time_lower"]).squeeze().values
    assert ratio[0] <= 10 < ratio[1]
    assert far.attrs["cannot_tell_from"] == 2**16
    assert far.attrs["cannot_tell_at"] == [2**16]
    message = fit.cannot_tell_message(far)
    assert message.startswith(f"from {2**16} nodes on, the 90% interval spans")
    assert "the data cannot tell the time there" in message
    # which measurement would tell: a count between 8 and 2**16 measured nodes
    assert "measure at 1024 nodes (the largest measured is 8)" in message
    # an interval that narrows again further out is named where it is wide only
    gap = xr.Dataset(
        {
            "time_lower": ("nodes", [1.0, 1.0, 1.0, 1.0]),
            "time_upper": ("nodes", [2.0, 12.0, 9.0, 30.0]),
        },
        coords={"nodes": [16.0, 64.0, 256.0, 1024.0]},
    )
    np.testing.assert_array_equal(wide_nodes(gap), [64.0, 1024.0])
    assert cannot_tell_from(gap) == 64.0
    gap.attrs.update(cannot_tell_from=64.0, cannot_tell_at=[64.0, 1024.0])
    assert fit.cannot_tell_message(gap).startswith(
        "at 64, 1024 nodes, the 90% interval spans more than 10x"
    )


@pytest.mark.filterwarnings("ignore::scaleprobe.models.ScaleprobeWarning")
def test_a_size_beyond_the_training_is_the_measurement_named():
    """Where the band is too wide at a measured count already, a larger count would
    not tell: the parameter outside its trained range is what to measure."""
    rng = np.random.default_rng(5)
    nodes = np.tile(np.repeat([1.0, 2.0, 4.0, 8.0], 2), 2)
    size = np.repeat([100.0, 200.0], 8)
    X = pd.DataFrame({"nodes": nodes, "ppn": 1.0, "ranks": nodes, "size": size})
    X["run"] = np.tile([0.0, 1.0], 8)
    y = (size / nodes + 0.5) * np.exp(0.03 * rng.standard_normal(16))
    fit = fit_ensemble((X, y))
    assert fit.untrained(fit.project("base", nodes=[4], params={"size": 150.0})) == []
    proj = fit.project("base", nodes=[4, 8, 4096], params={"size": 5000.0})
    assert fit.untrained(proj) == ["size 5000 (trained 100-200)"]
    assert proj.attrs["cannot_tell_from"] <= 8  # wide at measured counts
    message = fit.cannot_tell_message(proj)
    assert message.endswith(
        "measure nearer the projected size 5000 (trained 100-200) to know more"
    ), message
    # beyond the measured counts both are named
    both = fit.next_measurement(4096, "nodes", fit.untrained(proj))
    assert both.startswith("measure at 256 nodes (the largest measured is 8), and ")
    assert both.endswith("nearer the projected size 5000 (trained 100-200)")


@pytest.mark.filterwarnings("ignore::scaleprobe.models.ScaleprobeWarning")
def test_the_projection_says_how_far_its_widening_was_checked():
    """Three held-out splits of 1-64 nodes check the widening per doubling up to 3
    doublings beyond the counts fitted (8 -> 64): from 64 nodes, to 512. A band
    that still looks narrow beyond that is named; one already too wide is left to
    the cannot-tell line."""
    rng = np.random.default_rng(5)
    nodes = np.repeat(2.0 ** np.arange(7), 3)
    X = pd.DataFrame({"nodes": nodes, "ppn": 1.0, "ranks": nodes})
    X["run"] = np.tile([0.0, 1.0, 2.0], 7)
    y = 10.0 * np.exp(0.01 * rng.standard_normal(21))  # weak scaling, flat
    fit = fit_ensemble((X, y))
    near = fit.project(nodes=[128, 512])
    assert near.attrs["interval_checked_to"] == 512.0
    assert near.attrs["interval_checked_doublings"] == 3.0
    assert fit.unchecked_message(near) == ""
    one = fit.project(nodes=[512, 1024])
    assert fit.unchecked_message(one) == (
        "at 1024 nodes, 4 doublings beyond the largest measured (64), the interval's "
        "widening is extrapolated: its calibration checked it at most 3 doublings "
        "beyond the counts it fitted"
    )
    far = fit.project(nodes=[512, 1024, 2048, 2**16])
    ratio = (far["time_upper"] / far["time_lower"]).squeeze().values
    assert ratio[2] < CANNOT_TELL_RATIO < ratio[3]
    assert fit.unchecked_message(far) == (
        "from 1024 to 2048 nodes, up to 5 doublings beyond the largest measured "
        "(64), the interval's widening is extrapolated: its calibration checked it "
        "at most 3 doublings beyond the counts it fitted"
    )
    assert fit.cannot_tell_message(far).startswith(f"from {2**16} nodes on")
    # the report gives each its section
    where = {"bandwidth": [100.0], "scale": None, "params": {}}
    sections = dict(_projection_sections(fit, fit.selected, far, where))
    assert sections["How far the interval was checked"] == fit.unchecked_message(far)
    assert sections["Where the data cannot tell"] == fit.cannot_tell_message(far)
    assert "How far the interval was checked" not in dict(
        _projection_sections(fit, fit.selected, near, where)
    )
    # a law in ranks projected over nodes: the checked distance is not comparable
    far.attrs["interval_column"] = "ranks"
    assert fit.unchecked_message(far) == ""


@pytest.mark.filterwarnings("ignore::scaleprobe.models.ScaleprobeWarning")
def test_a_widening_no_count_checked_is_named_at_every_count_beyond():
    """Two node counts leave none to hold out: the interval is the law's range and
    the floor (1.22x wide 2 doublings out), and nothing checked its widening."""
    rng = np.random.default_rng(5)
    nodes = np.repeat([1.0, 2.0], 3)
    X = pd.DataFrame({"nodes": nodes, "ppn": 1.0, "ranks": nodes})
    X["run"] = np.tile([0.0, 1.0, 2.0], 2)
    y = (10 / nodes + 0.5) * np.exp(0.02 * rng.standard_normal(6))
    fit = fit_ensemble((X, y))
    assert fit.intervals["base"].n_calibration == 0
    proj = fit.project("base", nodes=[2, 8, 16])
    assert proj.attrs["interval_checked_doublings"] == 0.0
    assert fit.unchecked_message(proj) == (
        "from 8 to 16 nodes, up to 3 doublings beyond the largest measured (2), the "
        "interval's widening is extrapolated: no node count was held out to check it"
    )


@pytest.mark.filterwarnings("ignore::scaleprobe.models.ScaleprobeWarning")
def test_the_measurement_named_is_a_count_of_the_measured_grid():
    """A fit on rank counts that are all cubes (a code that decomposes a cube) is
    advised a cube, not a power of two times its largest count; counts that double
    are advised a doubling."""
    rng = np.random.default_rng(3)
    cubes = np.repeat([27.0, 64.0, 125.0, 216.0, 343.0], 2)
    X = pd.DataFrame({"ranks": cubes, "run": np.tile([0.0, 1.0], 5)})
    y = (500 / cubes + 0.2 * np.log2(cubes)) * np.exp(0.02 * rng.standard_normal(10))
    fit = fit_ensemble((X, y))
    assert fit.ranks_only
    # halfway in doublings from 343 to 8000 is 1372, which no cube decomposes
    assert fit.next_measurement(8000, "ranks").startswith(
        "measure at 1331 ranks (the largest measured is 343)"
    )
    doubling = X.assign(ranks=np.repeat([16.0, 32.0, 64.0, 128.0, 256.0], 2))
    fit = fit_ensemble((doubling, y))
    assert fit.next_measurement(8000, "ranks").startswith(
        "measure at 1024 ranks (the largest measured is 256)"
    )


@pytest.mark.filterwarnings("ignore::scaleprobe.models.ScaleprobeWarning")
def test_sizes_that_grow_together_are_one_group_of_axes():
    """Two parameters set by one problem class (a size and its nonzeros) are held
    out together when the largest class is: their calibrations measured one miss
    and form one group (the interval widens by the larger term); a parameter
    varied on its own is a group of its own."""
    from scaleprobe.models import RBASP
    from scaleprobe.models.ensemble.fit import _size_axes

    rng = np.random.default_rng(2)
    nodes = np.tile(np.repeat([1.0, 2.0, 4.0, 8.0], 2), 9)
    size = np.tile(np.repeat([100.0, 200.0, 400.0], 8), 3)
    X = pd.DataFrame({"nodes": nodes, "ppn": 1.0, "ranks": nodes, "size": size})
    X["nnz"] = 10.0 * size**1.5
    X["steps"] = np.repeat([5.0, 10.0, 20.0], 24)
    y = (X["steps"] * size**1.3 / nodes + 0.5) * np.exp(0.03 * rng.standard_normal(72))
    training = {"parameters": {"size": [], "nnz": [], "steps": []}}
    axes, notes = _size_axes(RBASP(), "rbasp", training, (X, y, 0.9))
    groups = {axis[0]: axis[4] for axis in axes}
    assert groups == {"size": "size", "nnz": "size", "steps": "steps"}
    assert "held out with size: the larger widening counts" in notes[1]
    assert "held out with" not in notes[0] + notes[2]


def test_an_interval_is_never_narrower_than_the_measured_runs():
    from scaleprobe.models.projection.grid import widen_to_measured

    proj = xr.Dataset(
        {
            "time_lower": (("nodes", "bandwidth"), [[1.0, 2.0], [3.0, 4.0]]),
            "time_upper": (("nodes", "bandwidth"), [[1.0, 2.0], [3.0, 4.0]]),
        },
        coords={"nodes": [1, 64], "bandwidth": [100.0, 25.0]},
        attrs={"target": "time", "ppn": 1.0, "link_bandwidth": 1.25e8},
    )
    training = {
        "link": {"link_bandwidth": 1.25e8, "latency": 5e-6},
        # 1 node at 100 %: runs of 0.9 and 1.2 around a zero-width interval
        "measured": {
            "nodes": [1, 1],
            "ppn": [1, 2],
            "bandwidth": [100.0, 25.0],
            "median": [1.0, 4.0],
            "low": [0.9, 0.1],
            "high": [1.2, 9.0],
            "runs": [2, 2],
        },
    }
    out = widen_to_measured(proj.copy(deep=True), training)
    np.testing.assert_array_equal(out["time_lower"], [[0.9, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(out["time_upper"], [[1.2, 2.0], [3.0, 4.0]])
    # another network: the measurements say nothing about it
    other = proj.copy(deep=True).assign_attrs(link_bandwidth=1.25e10)
    np.testing.assert_array_equal(
        widen_to_measured(other, training)["time_lower"], proj["time_lower"]
    )


@pytest.mark.slow  # fits a whole ensemble
def test_the_interval_at_a_measured_point_contains_its_measured_medians(traffic):
    # runs of one configuration spread by more than the model's interval there
    noisy = traffic.copy(deep=True)
    rng = np.random.default_rng(3)
    noisy["time"] = noisy["time"] * (1 + 0.05 * rng.standard_normal(noisy.time.shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_ensemble(noisy)
        nodes = [int(n) for n in noisy.nodes.values]
        proj = fit.project(nodes=nodes, bandwidth=list(noisy.bandwidth.values))
    runs = noisy.time.median([d for d in ("trial",) if d in noisy.time.dims])
    lower = proj.time_lower.squeeze(drop=True)
    upper = proj.time_upper.squeeze(drop=True)
    for n in nodes:
        for bw in noisy.bandwidth.values:
            measured = runs.sel(nodes=n, bandwidth=bw).values.ravel()
            low = float(lower.sel(nodes=n, bandwidth=bw))
            high = float(upper.sel(nodes=n, bandwidth=bw))
            assert low <= measured.min(), (n, bw)
            assert measured.max() <= high, (n, bw)


def test_every_warning_of_a_projection_names_its_model():
    naive = ScalingLaw.from_coefficients(["1/p"], [1.0], over="nodes")
    training = {
        "ppn": [1],
        "s0": 25,
        "feature_ranges": {"nodes": [1.0, 8.0], "bandwidth": [25.0, 100.0]},
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        project(naive, nodes=[64], bandwidth=[10], training=training, name="refined")
    messages = [str(item.message) for item in caught]
    assert messages
    assert all(message.startswith("refined: ") for message in messages), messages
    assert any("outside the trained range" in message for message in messages)


def test_measurements_counted_in_ranks_keep_their_spread():
    from scaleprobe.models.core.measured import measured_table
    from scaleprobe.models.projection.grid import measured_spread, widen_to_measured

    # measurements read from a file count processes as ranks, not nodes
    X = pd.DataFrame({"ranks": [2, 2, 4, 4], "run": [0, 1, 0, 1]})
    training = {"measured": measured_table(X, [1.0, 1.4, 0.6, 0.5])}
    assert measured_spread(training) == (["ranks"], [[2.0, 1.0, 1.4], [4.0, 0.5, 0.6]])
    proj = xr.Dataset(
        {
            "time_lower": ("ranks", [1.2, 0.55, 0.3]),
            "time_upper": ("ranks", [1.2, 0.55, 0.3]),
        },
        coords={"ranks": [2, 4, 8]},
        attrs={"target": "time"},
    )
    out = widen_to_measured(proj, training)
    np.testing.assert_array_equal(out["time_lower"], [1.0, 0.5, 0.3])
    np.testing.assert_array_equal(out["time_upper"], [1.4, 0.6, 0.3])
    # a sweep's features have both: its projections are over nodes
    both = X.assign(nodes=[1, 1, 2, 2])
    both = {"measured": measured_table(both, [1.0, 1.4, 0.6, 0.5])}
    assert measured_spread(both)[0] == ["nodes"]
    # nothing tells the measurements apart: no spread, and no error
    alone = {"measured": measured_table(pd.DataFrame({"run": [0, 1]}), [1.0, 2.0])}
    assert measured_spread(alone) == ([], [])


def test_a_model_of_ranks_alone_is_widened_at_its_measured_ranks():
    from scaleprobe.models.core.measured import measured_table
    from scaleprobe.models.projection.grid import widen_to_measured

    # a ranks-only fit projects over "nodes" and is labelled "ranks" afterwards
    X = pd.DataFrame({"ranks": [2, 2, 4, 4], "run": [0, 1, 0, 1]})
    training = {
        "column": "ranks",
        "measured": measured_table(X, [1.0, 1.4, 0.6, 0.5]),
    }
    proj = xr.Dataset(
        {"time_lower": ("nodes", [1.2, 0.55]), "time_upper": ("nodes", [1.2, 0.55])},
        coords={"nodes": [2, 4]},
        attrs={"target": "time"},
    )
    out = widen_to_measured(proj, training)
    np.testing.assert_array_equal(out["time_lower"], [1.0, 0.5])
    np.testing.assert_array_equal(out["time_upper"], [1.4, 0.6])


class _MeasuredScales:
    """A floor model measured at scales 20 and 21 only: ``steps`` latency-bound
    steps of 5 us a node beyond the first; any other scale it cannot price."""

    has_floor = True

    def floor(self, X):
        unmeasured = sorted(set(X["scale"]) - {20.0, 21.0})
        if unmeasured:
            raise ValueError(f"scale {unmeasured} was not measured")
        return 5e-6 * 6.0 * (X["nodes"].to_numpy(float) - 1)


def test_a_floor_the_traffic_model_cannot_price_is_left_out_row_by_row():
    # scales 21 and 24 in one projection: the floor is kept at 21, NaN at 24,
    # and the projection says for how many configurations it could not check
    naive = ScalingLaw.from_coefficients(["1/p"], [1e-4], over="nodes")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = project(
            naive, nodes=[64, 128], scale=[21, 24], floor_model=_MeasuredScales()
        )
    floor = out["time_floor"].squeeze()
    np.testing.assert_allclose(
        floor.sel(scale=21).values, 5e-6 * 6.0 * np.array([63.0, 127.0])
    )
    assert np.isnan(floor.sel(scale=24).values).all()
    said = [str(w.message) for w in caught]
    assert any(
        "no latency floor to check the projection against for 2 of 4" in text
        and "scale [24.0] was not measured" in text
        for text in said
    ), said
    # 1e-4 / 128 s lies below the floor at scale 21, which is still checked
    assert any("falls below the latency floor" in text for text in said), said
