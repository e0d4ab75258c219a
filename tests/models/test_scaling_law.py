"""Known-answer tests: synthetic data from each preset gives back its coefficients."""

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    PRESETS,
    DegenerateFitWarning,
    ScalingLaw,
    make_features,
    parse_term,
)

TRUE = {
    "base": ((300.0, 12.0), None),
    "generalized": ((40.0, 1.5), None),
    "bandwidth": ((2.5,), 1.17),
    "refined": ((300.0, 12.0), 1.12),
    "generalized_refined": ((40.0, 1.5), 1.09),
}


def _synthetic_frame(form, rng, noise=0.01):
    nodes = np.array([1, 2, 4, 8, 16, 32, 64], float)
    bandwidth = np.arange(10, 101, 5, dtype=float)
    scale = np.array([26, 27, 28], float)
    n, bw, s = (a.ravel() for a in np.meshgrid(nodes, bandwidth, scale, indexing="ij"))
    n, bw, s = (np.repeat(a, 4) for a in (n, bw, s))
    X = pd.DataFrame({"nodes": n, "bandwidth": bw, "scale": s, "D": np.exp2(s - 25)})
    coef, alpha = TRUE[form]
    law = ScalingLaw.from_coefficients(form, coef, alpha=alpha)
    y = law.predict(X) * (1 + noise * rng.standard_normal(len(X)))
    return X, y


@pytest.mark.parametrize("form", sorted(PRESETS))
def test_preset_recovers_coefficients_and_alpha(form):
    X, y = _synthetic_frame(form, np.random.default_rng(1))
    model = ScalingLaw(form=form).fit(X, y)
    coef, alpha = TRUE[form]
    np.testing.assert_allclose(model.coef_, coef, rtol=0.02)
    if alpha is None:
        assert model.alpha_ is None
    else:
        assert abs(model.alpha_ - alpha) < 0.01
    assert model.terms_ == PRESETS[form]
    assert model.score(X, y) > 0.99


def test_user_defined_terms_and_ranks():
    rng = np.random.default_rng(2)
    ranks = np.repeat([2.0, 8, 32, 128, 512, 2048, 8192], 5)
    y = 100 / ranks + 0.3 * np.log2(ranks) / np.sqrt(ranks) + 0.05
    y = y * (1 + 0.001 * rng.standard_normal(y.size))
    X = pd.DataFrame({"ranks": ranks})
    model = ScalingLaw(terms=["1/p", "log2(p)/sqrt(p)", "1"], over="ranks").fit(X, y)
    np.testing.assert_allclose(model.coef_, [100, 0.3, 0.05], rtol=0.05)


def test_ppn_multiplies_nodes_into_ranks():
    nodes = np.array([1.0, 2, 4, 8, 16])
    y = 90 / (18 * nodes) + 2 / np.sqrt(18 * nodes)
    model = ScalingLaw(form="base", ppn=18).fit(nodes.reshape(-1, 1), y)
    np.testing.assert_allclose(model.coef_, [90, 2], rtol=1e-6)


def test_components_split_computation_and_communication():
    model = ScalingLaw.from_coefficients("refined", [100.0, 4.0], alpha=1.1)
    X = pd.DataFrame({"nodes": [4.0, 16.0], "bandwidth": [100.0, 50.0]})
    parts = model.predict_components(X)
    np.testing.assert_allclose(parts["computation"], [25, 6.25])
    np.testing.assert_allclose(parts["communication"], [4 * 1.1 / 2, 4 * 1.1**2 / 4])
    np.testing.assert_allclose(
        parts["computation"] + parts["communication"], model.predict(X)
    )


def test_fit_on_results_dataset(results):
    X, y = make_features(results, s0=20)
    model = ScalingLaw(form="generalized_refined", over="ranks").fit(X, y)
    np.testing.assert_allclose(model.coef_, [200, 6], rtol=0.02)
    assert abs(model.alpha_ - 1.12) < 0.01


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"form": "quadratic"}, "form must be one of"),
        ({"over": "cores"}, "over must be one of"),
        ({"terms": ["1/q"]}, "unknown factor"),
        ({"ppn": -3}, "ppn="),
        ({"form": "refined", "alpha_bounds": (3, 1)}, "alpha_bounds"),
    ],
)
def test_bad_parameters_are_named(params, message):
    X = pd.DataFrame({"nodes": [1.0, 2, 4], "bandwidth": [100.0, 50, 20]})
    with pytest.raises(ValueError, match=message):
        ScalingLaw(**params).fit(X, [1.0, 0.6, 0.4])


def test_nonpositive_nodes_rejected():
    with pytest.raises(ValueError, match="must be positive"):
        ScalingLaw().fit([[0.0], [1.0]], [1.0, 2.0])


def test_term_grammar_round_trips():
    for text in [
        "1/p",
        "D*alpha^(100/bw)/sqrt(p)",
        "p^(1/3)*log2(p)^2",
        "1",
        "log2(p)/p^(5/4)",
    ]:
        assert parse_term(parse_term(text).name) == parse_term(text)
    assert parse_term("p^(-1/2)").name == "1/sqrt(p)"
    with pytest.raises(ValueError, match="numerator"):
        parse_term("1/D")


def test_from_coefficients_validates():
    with pytest.raises(ValueError, match="pass alpha"):
        ScalingLaw.from_coefficients("refined", [1.0, 2.0])
    with pytest.raises(ValueError, match="need as many"):
        ScalingLaw.from_coefficients("base", [1.0])


def test_relative_and_absolute_loss_and_weights():
    nodes = np.array([1.0, 2, 4, 8, 16, 32])
    y = 100 / nodes + 1.0
    y = y * np.array([1.02, 0.99, 1.01, 0.98, 1.03, 0.97])
    X = nodes.reshape(-1, 1)
    relative = ScalingLaw(terms=["1/p", "1"]).fit(X, y)
    absolute = ScalingLaw(terms=["1/p", "1"], loss="absolute").fit(X, y)
    # The absolute loss is ruled by the big times of few nodes; the relative one
    # keeps the constant that the many-node times measure.
    far = [[1024.0]]
    truth = 100 / 1024 + 1.0
    assert abs(relative.predict(far)[0] / truth - 1) < abs(
        absolute.predict(far)[0] / truth - 1
    )
    doubled = ScalingLaw(terms=["1/p", "1"]).fit(
        np.vstack([X, X[-1:]]), np.append(y, y[-1])
    )
    weighted = ScalingLaw(terms=["1/p", "1"]).fit(
        X, y, sample_weight=[1, 1, 1, 1, 1, 2]
    )
    np.testing.assert_allclose(doubled.coef_, weighted.coef_, rtol=1e-9)
    with pytest.raises(ValueError, match="sample_weight"):
        ScalingLaw().fit(X, y, sample_weight=[1, 2])
    with pytest.raises(ValueError, match="zero everywhere"):
        ScalingLaw().fit(X, y, sample_weight=np.zeros(6))
    with pytest.raises(ValueError, match="loss"):
        ScalingLaw(loss="huber").fit(X, y)
    with pytest.raises(ValueError, match="positive targets"):
        ScalingLaw().fit(X, -y)


def test_degenerate_fits_warn():
    nodes = np.array([1.0, 2, 4, 8, 16, 32])
    # Slower on more nodes: the p^-k laws cannot follow, the 1/p term goes to 0.
    rising = 1.0 + 0.1 * np.log2(nodes)
    with pytest.warns(DegenerateFitWarning, match="coefficient of 1/p to 0"):
        ScalingLaw(form="base").fit(nodes.reshape(-1, 1), rising)
    X = pd.DataFrame(
        {"nodes": np.repeat(nodes, 2), "bandwidth": np.tile([100.0, 50.0], 6)}
    )
    # A bandwidth effect stronger than alpha = 3 allows pins alpha to its bound.
    y = 1 / X["nodes"] + 40.0 ** (100 / X["bandwidth"]) / np.sqrt(X["nodes"])
    with pytest.warns(DegenerateFitWarning) as caught:
        ScalingLaw(form="refined").fit(X, y)
    assert any("upper bound" in str(w.message) for w in caught)


def test_interval_holds_the_truth_and_widens():
    rng = np.random.default_rng(7)
    nodes = np.repeat([2.0, 4, 8, 16, 32], 3)
    truth = ScalingLaw.from_coefficients("base", [100.0, 2.0])
    y = truth.predict(nodes.reshape(-1, 1)) * np.exp(0.03 * rng.standard_normal(15))
    model = ScalingLaw(form="base").fit(nodes.reshape(-1, 1), y)
    new = np.array([[64.0], [1024.0]])
    lower, upper = model.predict_interval(new)
    assert np.all(lower <= truth.predict(new))
    assert np.all(truth.predict(new) <= upper)
    assert np.all(lower <= model.predict(new))
    assert np.all(model.predict(new) <= upper)
    assert upper[1] / lower[1] > upper[0] / lower[0] > 1
    published = ScalingLaw.from_coefficients("base", [100.0, 2.0])
    with pytest.raises(ValueError, match="not fitted"):
        published.predict_interval(new)
