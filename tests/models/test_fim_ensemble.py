"""FiM and RBASP in the fit workflow: the kernels' records reach them through the
feature frame, and projections take the application parameter they regress on."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scaleprobe.kernels.schema import COLLECTIVE_KINDS
from scaleprobe.models import (
    RBASP,
    ExtrapolationWarning,
    FiM,
    default_ensemble,
    fit_ensemble,
    load_models,
    make_features,
    project,
    save_models,
)
from scaleprobe.models.core.configs import configuration_keys
from scaleprobe.models.core.features import measurement_sets, prediction_frame
from scaleprobe.models.fim.model import COLLECTIVE_PATTERNS
from scaleprobe.models.projection.grid import resolve_params

F = 2e9
CYCLES_PER_POINT = 400.0
LATENCY, PER_POINT = 2e-5, 40 / 1.25e8
SIZES = (1e4, 2e4, 4e4)


def _truth(points, ranks, iterations=10):
    """Computation, scatter and broadcasts of a K-means-like kernel, s."""
    others = ranks - 1
    comp = CYCLES_PER_POINT * points / F / ranks
    scatter = (LATENCY + points * others / ranks * PER_POINT) * (ranks > 1)
    bcast = iterations * LATENCY * np.ceil(np.log2(ranks))
    return comp, scatter, bcast


def _dataset(nodes=(1, 2, 4), sizes=SIZES, runs=2):
    """A results Dataset as an iterative kernel's sweep records it (ppn 1)."""
    n, x = np.meshgrid(np.array(nodes, float), np.array(sizes, float), indexing="ij")
    comp, scatter, bcast = _truth(x, n)
    rng = np.random.default_rng(3)
    shape = (*n.shape, runs)
    noise = 1 + 0.01 * rng.standard_normal(shape)

    def per_run(values):
        return np.broadcast_to(np.asarray(values, float)[..., None], shape)

    dims = ("nodes", "points", "run")
    variables = {
        "comp_time_iterations": per_run(comp) * noise,
        "hw_total_cycles": per_run(CYCLES_PER_POINT * x),
        "hw_utilisation": per_run(np.full(n.shape, 0.9)),
        "hw_frequency": per_run(np.full(n.shape, F)),
        "scatter_calls": per_run(np.ones(n.shape)),
        "scatter_jobs": per_run(x * (n - 1) / n),
        "scatter_time": per_run(scatter),
        "scatter_job_bytes": per_run(np.full(n.shape, 40.0)),
        "bcast_calls": per_run(np.full(n.shape, 10.0)),
        "bcast_jobs": per_run(80.0 * (n > 1)),
        "bcast_time": per_run(bcast),
        "bcast_job_bytes": per_run(np.full(n.shape, 40.0)),
    }
    variables["time"] = (
        variables["comp_time_iterations"]
        + variables["scatter_time"]
        + variables["bcast_time"]
    )
    return xr.Dataset(
        {name: (dims, values) for name, values in variables.items()},
        coords={
            "nodes": list(nodes),
            "points": list(sizes),
            "run": list(range(runs)),
            "ppn": 1,
        },
        attrs={"link_model": json.dumps({"link_bandwidth": 1.25e8, "latency": 5e-6})},
    )


def test_every_collective_a_record_names_has_a_queue_pattern():
    assert set(COLLECTIVE_PATTERNS) == set(COLLECTIVE_KINDS)


def test_kernel_records_are_measurements_not_configuration_keys():
    data = _dataset()
    assert measurement_sets(data) == {"traffic": False, "fim": True}
    X, y = make_features(data, **measurement_sets(data))
    assert {"comp_time_iterations", "scatter_jobs", "bcast_job_bytes"} <= set(X)
    assert configuration_keys(X) == ["nodes", "ppn", "ranks", "points"]
    assert len(y) == 18
    with pytest.raises(ValueError, match="comp_time_iterations"):
        make_features(data.drop_vars("comp_time_iterations"), fim=True)


def test_the_ensemble_offers_fim_and_rbasp_only_for_kernel_records():
    X, _ = make_features(_dataset(), fim=True)
    ensemble = default_ensemble(X)
    assert isinstance(ensemble["fim"], FiM)
    assert isinstance(ensemble["rbasp"], RBASP)
    plain, _ = make_features(_dataset())
    assert not {"fim", "rbasp"} & set(default_ensemble(plain))


@pytest.fixture(scope="module")
def fitted():
    data = _dataset()
    models = {"fim": FiM(replications=4, link_bandwidth=1.25e8), "rbasp": RBASP()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_ensemble(data, models=models)


def test_fim_is_trusted_on_its_own_kind_of_data_from_three_node_counts(fitted):
    # Extrapolation holds out 4 nodes and fits 1 and 2, whose counts cannot tell a
    # scatter's N (q - 1)/q from 0.5 N [q > 1]: FiM takes the scatter's form and
    # projects 4 nodes within a few per cent, so the ensemble trusts it
    scores = fitted.summary.set_index(["model", "cv"])["smape"]
    assert scores["fim", "extrapolation"] < 10
    assert scores["fim", "extrapolation"] < scores["baseline", "extrapolation"] / 2
    assert fitted.selected == "fim"


@pytest.mark.slow
def test_fim_projects_a_larger_size_to_more_nodes(fitted):
    assert fitted.training["parameters"] == {"points": list(SIZES)}
    assert fitted.training["feature_ranges"]["points"] == [SIZES[0], SIZES[-1]]
    nodes = np.array([16, 32])
    with pytest.warns(ExtrapolationWarning, match=r"points \[1000000.0\]"):
        out = fitted.project("fim", nodes=nodes, params={"points": [1e6]})
    assert out["time_predicted"].dims == ("nodes", "bandwidth", "points")
    assert out["points"].attrs["long_name"] == "application parameter points"
    truth = sum(_truth(1e6, nodes.astype(float)))
    predicted = out["time_predicted"].sel(points=1e6, bandwidth=100).values
    np.testing.assert_allclose(predicted, truth, rtol=0.2)
    # without params: every trained size, one coordinate each
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        default = fitted.project("fim", nodes=nodes)
    assert default["points"].values.tolist() == list(SIZES)


def test_a_model_file_keeps_fim_and_its_parameters(fitted, tmp_path):
    path = save_models(tmp_path / "models.json", fitted)
    loaded = load_models(path)
    assert loaded.training["parameters"] == fitted.training["parameters"]
    frame = prediction_frame([8, 64], ppn=1, params={"points": [5e5]})
    np.testing.assert_allclose(
        loaded.models["fim"].predict(frame), fitted.models["fim"].predict(frame)
    )
    # FiM's range over the process laws is its own: the file keeps every law's fit
    assert fitted.intervals["fim"].method == "consistent-range"
    np.testing.assert_allclose(
        loaded.models["fim"].predict_interval(frame),
        fitted.models["fim"].predict_interval(frame),
    )
    law = json.loads(path.read_text())["models"]["fim"]["law"]
    assert law.startswith("computation: FiM-Cal (alpha ")
    assert "scatter: FiM-Com scatter queue" in law
    assert json.loads(path.read_text())["models"]["rbasp"]["law"].startswith(
        "log2(time) = "
    )


def test_params_the_models_never_saw_are_refused(fitted):
    with pytest.raises(ValueError, match="not trained over 'clusters'"):
        fitted.project("fim", nodes=[8], params={"clusters": [8]})
    with pytest.raises(ValueError, match="params cannot set 'nodes'"):
        prediction_frame([2], ppn=1, params={"nodes": [4]})
    assert resolve_params({"points": 7}, None) == {"points": np.array([7.0])}


def test_a_law_over_nodes_alone_projects_every_trained_size():
    model = RBASP(over="nodes", features=["points"])
    X = pd.DataFrame({"nodes": [1, 2, 4, 1, 2, 4], "points": [1, 1, 1, 2, 2, 2.0]})
    model.fit(X, np.exp2(1 + X["points"] - 0.1 * X["nodes"]))
    training = {"ppn": [1], "parameters": {"points": [1.0, 2.0]}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        out = project(model, nodes=[8], training=training)
    expected = np.exp2(1 + np.array([1.0, 2.0]) - 0.8)
    np.testing.assert_allclose(
        out["time_predicted"].sel(nodes=8, bandwidth=100).values, expected, rtol=0.05
    )


def _own(fitted, name, **where):
    """``name``'s projection with its own interval, no alternative joined."""
    return project(
        fitted.models[name],
        interval=fitted.intervals[name],
        training=fitted.training,
        **where,
    )


@pytest.mark.slow
def test_a_size_never_measured_has_the_projecting_models_interval_alone(fitted):
    (column, kappa, low, high, group), *rest = fitted.intervals["fim"].axes
    assert (column, low, high, group, rest) == (
        "points",
        SIZES[0],
        SIZES[-1],
        "points",
        [],
    )
    assert any(note.startswith("fim: the interval widens") for note in fitted.notes)
    # RBASP as a plausible alternative (on the K-means sweep of the README it was,
    # and put 2**21 points 32x beyond the measured ones at 1e20 s)
    joined = replace(
        fitted, verdict=replace(fitted.verdict, plausible=("fim", "rbasp"))
    )
    nodes = np.array([2.0, 16.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        out = joined.project(nodes=nodes, params={"points": [2e4, 1e6]})
        alone = _own(fitted, "fim", nodes=nodes, params={"points": [2e4, 1e6]})
        rbasp = _own(fitted, "rbasp", nodes=nodes, params={"points": [2e4, 1e6]})
    assert out.attrs["model_name"] == "fim"
    assert out.attrs["interval_models"] == "fim, rbasp"
    lower, upper = out["time_lower"], out["time_upper"]
    # at a measured size (and node count) the alternative's interval joins ...
    measured = {"points": 2e4, "bandwidth": 100, "nodes": 2}
    assert np.all(lower.sel(measured) <= rbasp["time_lower"].sel(measured))
    assert np.all(upper.sel(measured) >= rbasp["time_upper"].sel(measured))
    # ... beyond them FiM's own stands, widened by its hold-out of the largest size
    far = {"points": 1e6, "bandwidth": 100}
    np.testing.assert_allclose(lower.sel(far), alone["time_lower"].sel(far))
    np.testing.assert_allclose(upper.sel(far), alone["time_upper"].sel(far))
    outside = np.log2(1e6 / SIZES[-1])  # doublings beyond the measured sizes
    interval = fitted.intervals["fim"]
    unwidened = replace(interval, axes=())
    frame = prediction_frame(nodes, ppn=1, params={"points": [1e6]})
    _, plain = unwidened.bounds(fitted.models["fim"], frame)
    # the floor spreads per doubling of nodes and of points beyond the measured
    centre = fitted.models["fim"].predict(frame)
    beyond = np.log2(np.maximum(nodes / interval.reference, 1.0)) + outside
    floor = centre * np.exp(interval.floor * beyond)
    expected = np.maximum(plain * np.exp(kappa * outside), floor)
    np.testing.assert_allclose(upper.sel(far), expected)
    truth = sum(_truth(1e6, nodes))
    assert np.all(lower.sel(far) < truth)
    assert np.all(truth < upper.sel(far))


@pytest.mark.slow
def test_an_alternative_is_not_joined_where_its_time_leaves_physical_growth(fitted):
    def with_plausible(*names):
        # the naive trend projecting, FiM's and RBASP's intervals joined to its own
        return replace(
            fitted,
            verdict=replace(fitted.verdict, trusted="baseline", plausible=names),
        )

    where = {"nodes": [2, 4, 8, 64], "params": {"points": [2e4]}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtrapolationWarning)
        out = with_plausible("fim", "rbasp").project(**where)
        without = with_plausible("fim").project(**where)
        rbasp = _own(fitted, "rbasp", **where)
    # RBASP's time falls 5x from 4 nodes, the largest measured, to 8: faster than
    # 1 / nodes**2 (4x a doubling), which no MPI program's does
    predicted = rbasp["time_predicted"].sel(points=2e4, bandwidth=100)
    assert predicted.sel(nodes=8) < predicted.sel(nodes=4) / 4
    assert out.attrs["interval_models"] == "baseline, fim, rbasp"
    assert out.attrs["interval_unphysical"].startswith("rbasp from 8 nodes: ")
    beyond = {"nodes": [8, 64]}
    for bound in ("time_lower", "time_upper"):
        np.testing.assert_allclose(out[bound].sel(beyond), without[bound].sel(beyond))
    # up to the largest measured count it is joined
    inside = {"nodes": [2, 4]}
    assert np.all(out["time_lower"].sel(inside) <= rbasp["time_lower"].sel(inside))
    assert np.all(out["time_upper"].sel(inside) >= rbasp["time_upper"].sel(inside))
    assert np.all(out["time_lower"].sel(inside) < without["time_lower"].sel(inside))


def test_warnings_survive_folds_that_swap_the_warning_state_in_threads(monkeypatch):
    # catch_warnings swaps process-wide filters; pandas and scikit-learn enter it
    # in every fold's thread, and two threads that left it out of order left
    # "ignore" in place: a command-line fit then printed none of its warnings
    import threading

    original = warnings.catch_warnings

    class Unordered(original):
        """A thread's catch_warnings that leaves its own filters behind, as the
        one of two threads that saved the other's does."""

        def __exit__(self, *exc):
            if threading.current_thread() is threading.main_thread():
                return super().__exit__(*exc)
            warnings.simplefilter("ignore")
            return None

    monkeypatch.setattr(warnings, "catch_warnings", Unordered)
    models = {"fim": FiM(replications=4, link_bandwidth=1.25e8)}
    with original(record=True) as caught:
        warnings.simplefilter("always")
        fit_ensemble(_dataset(), models=models)
        # after the folds, a warning of the main thread is still seen
        warnings.warn("after the folds", UserWarning, stacklevel=1)
    assert "after the folds" in [str(w.message) for w in caught]
