"""The subgraph complexity model: scikit-learn contract and known constants."""

import pickle

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models.analytic.subgraph import (
    FEATURES,
    TERMS,
    SubgraphComplexity,
    SubgraphTerms,
)
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks


@parametrize_with_checks(
    [
        SubgraphComplexity(),
        SubgraphComplexity(target="time", mode="pipeline"),
        SubgraphTerms(),
    ]
)
def test_sklearn_contract(estimator, check):
    check(estimator)


# Table 3 of Chen et al. 2018: (memory, computation) of u5-2, u7-2, u10-2, u12-2.
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
    assert model.coef_names_ == (
        "per_edge_work",
        "per_vertex_work",
        "latency",
        "per_entry",
    )
    np.testing.assert_allclose(model.coef_, [2e-9, 5e-9, 1e-4, 8e-8], rtol=1e-6)
    assert model.intercept_ == pytest.approx(1e-3, rel=1e-6)
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
    alltoall = SubgraphComplexity(target="peak_memory", mode="alltoall")
    pipeline = SubgraphComplexity(target="peak_memory", mode="pipeline")
    for model in (alltoall, pipeline):
        model.fit(X, np.ones(len(X)))
        model.intercept_, model.coef_ = 5e7, np.array([8.0, 8.0])
    many = X[:, 0] >= 4
    assert np.all(pipeline.predict(X[many]) < alltoall.predict(X[many]))


def test_parameter_errors_name_the_choices():
    X = _sweep()
    with pytest.raises(ValueError, match="target must be one of"):
        SubgraphComplexity(target="energy").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="mode must be one of"):
        SubgraphComplexity(mode="ring").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="overlap needs target='time'"):
        SubgraphComplexity(target="comp_time").fit(X, X[:, 0]).overlap(X)
    assert FEATURES[0] == "ranks"


def _records():
    """The sweep as kernel records: the inputs by name, shuffled, among others."""
    X = _sweep()
    alltoall, _ = _truth(X)
    frame = pd.DataFrame(X, columns=FEATURES).rename(
        columns={"ranks": "ranks_reported"}
    )
    frame.insert(0, "kernel", "subgraph")
    frame["bandwidth"] = 100.0
    frame["time"] = alltoall
    return X, alltoall, frame[["time", *frame.columns[::-1][1:]]]


def test_a_table_of_any_width_gives_its_inputs_by_name():
    X, y, frame = _records()
    from_array = SubgraphComplexity().fit(X, y)
    from_table = SubgraphComplexity().fit(frame, y)
    assert from_table.inputs_ == FEATURES
    assert from_table.columns_[0] == "ranks_reported"
    np.testing.assert_allclose(from_table.coef_, from_array.coef_, rtol=1e-9)
    np.testing.assert_allclose(from_table.predict(frame), y, rtol=1e-6)
    with pytest.raises(ValueError, match="the table lacks n_edges"):
        from_table.predict(frame.drop(columns="n_edges"))
    with pytest.raises(ValueError, match="has none of the columns ranks, n_vertices"):
        SubgraphComplexity().fit(frame[["kernel", "time"]], y)


def test_inputs_left_out_count_as_one_and_further_columns_are_not_used():
    X, y, frame = _records()
    ranks_only = frame[["ranks_reported", "kernel"]]
    one = np.column_stack([X[:, 0], np.ones((len(X), 4))])
    by_name = SubgraphTerms().fit(ranks_only)
    assert by_name.inputs_ == ("ranks",)
    np.testing.assert_array_equal(
        by_name.transform(ranks_only), SubgraphTerms().fit_transform(one)
    )
    wide = np.column_stack([X, np.full((len(X), 3), -7.0)])
    np.testing.assert_array_equal(
        SubgraphComplexity().fit(wide, y).predict(wide),
        SubgraphComplexity().fit(X, y).predict(X),
    )


def test_the_transformer_gives_the_terms_of_the_equations():
    # P = 4, |V| = 10, |E| = 40, M = 3, C = 6
    terms = SubgraphTerms().fit_transform(np.array([[4.0, 10, 40, 3, 6]]))
    expected = {
        "steps": 3,
        "comp_edges": 6 * 40 / 4,
        "comp_step": 6 * 40 / 16,
        "comp_vertices": 6 * 10 / 4,
        "comm_step": 3 * 40 / 16,
        "mem_vertices": 3 * 10 / 4,
        "mem_remote": 3 * 40 * 3 / 16,
    }
    assert dict(zip(TERMS, terms[0], strict=True)) == pytest.approx(expected)
    # computation time is linear in two of the terms: any linear model recovers it
    X = _sweep()
    p, v, e, _, comp = X.T
    y = 1e-3 + 3e-9 * comp * e / p + 5e-9 * comp * v / p
    pipeline = make_pipeline(
        SubgraphTerms().set_output(transform="pandas"),
        ColumnTransformer([("law", "passthrough", ["comp_edges", "comp_vertices"])]),
        LinearRegression(),
    ).fit(X, y)
    np.testing.assert_allclose(pipeline[-1].coef_, [3e-9, 5e-9], rtol=1e-6)
    np.testing.assert_allclose(pipeline.predict(X), y, rtol=1e-6)
