"""The subgraph complexity model: scikit-learn contract and known constants."""

import pickle

import numpy as np
import pytest
from scaleprobe.models.subgraph_complexity import FEATURES, SubgraphComplexity
from sklearn.utils.estimator_checks import parametrize_with_checks

# These checks fit on make_regression data with 10 columns; the model has exactly five
# physical inputs (FEATURES) and rightly refuses more. All other checks run and pass.
_TEN_COLUMNS = "feeds 10 columns; the model takes the 5 inputs of FEATURES"
_WIDE_CHECKS = (
    "check_dtype_object",
    "check_regressors_train",
    "check_regressor_data_not_an_array",
    "check_regressors_int",
    "check_fit2d_1sample",
)


def _expected_failures(estimator):
    return dict.fromkeys(_WIDE_CHECKS, _TEN_COLUMNS)


@parametrize_with_checks(
    [SubgraphComplexity(), SubgraphComplexity(target="time", mode="pipeline")],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_contract(estimator, check):
    check(estimator)


# Table 3 of seed 004: (memory, computation) of u5-2, u7-2, u10-2, u12-2.
TEMPLATES = [(25, 70), (147, 434), (1047, 5610), (3135, 38016)]


def _sweep():
    rows = []
    for ranks in (1, 2, 4, 8, 16):
        for vertices, edges in ((1e4, 5e4), (1e5, 1e6)):
            for memory, computation in TEMPLATES:
                rows.append((ranks, vertices, edges, memory, computation))
    return np.array(rows, dtype=float)


def _truth(X, *, work=2e-9, vertex_work=5e-9, alpha=1e-4, beta=8e-8, base=1e-3):
    p, v, e, mem, comp = X.T
    comp_step = work * comp * e / p**2
    comm_step = alpha + beta * mem * e / p**2
    alltoall = (
        base + work * comp * e / p + vertex_work * comp * v / p + (p - 1) * comm_step
    )
    pipeline = (
        base
        + comp_step
        + vertex_work * comp * v / p
        + np.where(p > 1, comm_step, 0)
        + (p - 1) * np.maximum(comp_step, comm_step)
    )
    return alltoall, pipeline


def test_recovers_alltoall_constants():
    X = _sweep()
    alltoall, _ = _truth(X)
    model = SubgraphComplexity(target="time", mode="alltoall").fit(X, alltoall)
    assert model.coef_["per_edge_work"] == pytest.approx(2e-9, rel=1e-6)
    assert model.coef_["per_vertex_work"] == pytest.approx(5e-9, rel=1e-6)
    assert model.coef_["latency"] == pytest.approx(1e-4, rel=1e-6)
    assert model.coef_["per_entry"] == pytest.approx(8e-8, rel=1e-6)
    np.testing.assert_allclose(model.predict(X), alltoall, rtol=1e-6)


def test_recovers_pipeline_constants_and_overlap():
    X = _sweep()
    _, pipeline = _truth(X)
    model = SubgraphComplexity(target="time", mode="pipeline").fit(X, pipeline)
    np.testing.assert_allclose(model.predict(X), pipeline, rtol=1e-4)
    rho = model.overlap(X)
    assert np.all((rho >= 0) & (rho <= 1))
    # Eq. 14: larger templates overlap more (computation grows faster than volume).
    at_eight = X[:, 0] == 8
    small, large = rho[at_eight & (X[:, 4] == 70)], rho[at_eight & (X[:, 4] == 38016)]
    assert np.all(large >= small)
    assert np.any(large > small)


@pytest.mark.parametrize(
    ("target", "mode"),
    [
        ("comp_time", "alltoall"),
        ("comm_time", "alltoall"),
        ("peak_memory", "alltoall"),
        ("peak_memory", "pipeline"),
    ],
)
def test_linear_targets(target, mode):
    X = _sweep()
    p, v, e, mem, comp = X.T
    y = {
        "comp_time": 1e-3 + 3e-9 * comp * e / p,
        "comm_time": 2e-4 * (p - 1) + 1e-7 * mem * e * (p - 1) / p**2,
        "peak_memory": 5e7
        + 8 * mem * v / p
        + 8 * mem * e * ((p - 1) / p**2 if mode == "alltoall" else 1 / p**2),
    }[target]
    model = SubgraphComplexity(target=target, mode=mode).fit(X, y)
    np.testing.assert_allclose(model.predict(X), y, rtol=1e-6, atol=1e-12)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(again.predict(X), y, rtol=1e-6, atol=1e-12)


def test_pipeline_memory_is_below_alltoall_for_many_ranks():
    X = _sweep()
    coef = {"base": 5e7, "per_table_entry": 8.0, "per_remote_entry": 8.0}
    alltoall = SubgraphComplexity(target="peak_memory", mode="alltoall")
    pipeline = SubgraphComplexity(target="peak_memory", mode="pipeline")
    for model in (alltoall, pipeline):
        model.fit(X, np.ones(len(X)))
        model.coef_ = dict(coef)
    many = X[:, 0] >= 4
    assert np.all(pipeline.predict(X[many]) < alltoall.predict(X[many]))


def test_parameter_errors_name_the_choices():
    X = _sweep()
    with pytest.raises(ValueError, match="target must be one of"):
        SubgraphComplexity(target="energy").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="mode must be one of"):
        SubgraphComplexity(mode="ring").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="takes at most 5"):
        SubgraphComplexity().fit(np.ones((4, 6)), np.ones(4))
    with pytest.raises(ValueError, match="overlap needs target='time'"):
        SubgraphComplexity(target="comp_time").fit(X, X[:, 0]).overlap(X)
    assert FEATURES[0] == "ranks"


def test_complexity_features_from_records():
    import pandas as pd
    from scaleprobe.models.subgraph_complexity import complexity_features

    metrics = {
        "ranks": 4,
        "n_vertices": 100,
        "n_edges": 300,
        "memory_complexity": 147,
        "computation_complexity": 434,
        "time": 1.0,
    }
    expected = [[4.0, 100.0, 300.0, 147.0, 434.0]]
    assert complexity_features([metrics]).tolist() == expected
    frame = pd.DataFrame([metrics]).rename(columns={"ranks": "ranks_reported"})
    assert complexity_features(frame).tolist() == expected
    with pytest.raises(ValueError, match="lacks n_edges"):
        complexity_features(
            [
                {
                    "ranks": 1,
                    "n_vertices": 1,
                    "memory_complexity": 1,
                    "computation_complexity": 1,
                }
            ]
        )
