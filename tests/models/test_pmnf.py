"""PMNFSearch: known laws recovered, honest with little data, one loss throughout."""

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    InsufficientDataWarning,
    PMNFSearch,
    ScalingLaw,
    make_features,
)


def _noisy(law, seed, start=1, runs=5, noise=0.01, stop=11):
    rng = np.random.default_rng(seed)
    p = np.repeat(2.0 ** np.arange(start, stop), runs)
    return p, law(p) * (1 + noise * rng.standard_normal(p.size))


@pytest.mark.parametrize(
    ("law", "terms"),
    [
        (lambda p: 50 / p + 3 / np.sqrt(p), {"1/p", "1/sqrt(p)"}),
        (lambda p: 100 / p + 0.5 * np.log2(p), {"1/p", "log2(p)"}),
        (lambda p: 100 / p + 2 * p ** (1 / 3), {"1/p", "p^(1/3)"}),
        (lambda p: 100 / p + 0.02 * p, {"1/p", "p"}),
        (lambda p: 3 + 80 / p, {"1", "1/p"}),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_known_laws(law, terms, seed):
    p, y = _noisy(law, seed)
    model = PMNFSearch().fit(pd.DataFrame({"ranks": p}), y)
    assert set(model.terms_) == terms
    assert np.all(model.coef_ > 0)


def test_keeps_the_second_term_under_five_percent_noise():
    """With 5 % noise the 2/sqrt(p) term of 100/p + 2/sqrt(p) is still found."""
    two, exact = 0, 0
    for seed in range(10):
        p, y = _noisy(lambda p: 100 / p + 2 / np.sqrt(p), seed, runs=3, noise=0.05)
        terms = PMNFSearch().fit(p.reshape(-1, 1), y).terms_
        two += len(terms) == 2
        exact += terms == ("1/sqrt(p)", "1/p")
    assert two >= 9  # the second term is not dropped as noise
    assert exact >= 7  # and it is mostly the right one


def test_one_term_law_stays_one_term():
    p, y = _noisy(lambda p: 40 / p, seed=3)
    assert PMNFSearch().fit(p.reshape(-1, 1), y).terms_ == ("1/p",)


def test_refit_uses_the_search_loss():
    """The reported coefficients are the relative least squares of the search."""
    p, y = _noisy(lambda p: 100 / p + 2 / np.sqrt(p), seed=4, noise=0.03)
    search = PMNFSearch().fit(p.reshape(-1, 1), y)
    table = search.training_
    law = ScalingLaw(terms=list(search.terms_), over="ranks").fit(
        table[["p"]].to_numpy(), table["y"].to_numpy(), sample_weight=table["n"]
    )
    np.testing.assert_allclose(search.coef_, law.coef_, rtol=1e-9)


def test_never_more_coefficients_than_the_data_can_check():
    for counts in (3, 4, 5):
        p, y = _noisy(lambda p: 100 / p + 0.5 * np.log2(p), seed=2, stop=counts + 1)
        model = PMNFSearch().fit(p.reshape(-1, 1), y)
        assert model.max_coefficients_ == counts - 2
        assert len(model.terms_) <= counts - 2


def test_two_process_counts_warn_and_give_the_power_law_through_them():
    p = np.array([2.0, 2.0, 4.0, 4.0])
    y = np.array([10.0, 10.0, 6.0, 6.0])
    with pytest.warns(InsufficientDataWarning, match="only 2 distinct"):
        model = PMNFSearch().fit(p.reshape(-1, 1), y)
    assert len(model.terms_) == 1
    with pytest.warns(InsufficientDataWarning, match="a third rank count"):
        PMNFSearch(parameter="ranks").fit(pd.DataFrame({"ranks": p}), y)
    np.testing.assert_allclose(model.predict([[2.0], [4.0]]), [10.0, 6.0], rtol=1e-2)
    assert model.search_scores_ is None  # nothing was scored in-sample


def test_rising_data_get_no_falling_terms():
    """An increasing series is not fitted with 1/p**k terms standing in for c0."""
    p, y = _noisy(lambda p: 0.2 + 0.01 * p, seed=5)
    model = PMNFSearch().fit(p.reshape(-1, 1), y)
    assert all(not t.startswith("1/") for t in model.terms_)
    assert "1" in model.terms_


def test_bandwidth_and_data_factors_on_results(results):
    X, y = make_features(results, s0=20)
    model = PMNFSearch(parameter="ranks", data=True, bandwidth=True, s0=20).fit(X, y)
    assert set(model.terms_) == {"D/p", "D*alpha^(100/bw)/sqrt(p)"}
    assert abs(model.alpha_ - 1.12) < 0.01
    assert model.predict_components(X)["communication"].gt(0).all()
    assert list(model.search_scores_.columns) == [
        "terms",
        "score",
        "explained",
        "coefficients",
    ]
    lower, upper = model.predict_interval(X.iloc[:5])
    prediction = model.predict(X.iloc[:5])
    assert np.all(lower <= prediction)
    assert np.all(prediction <= upper)


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="max_terms"):
        PMNFSearch(max_terms=4).fit([[1.0], [2.0]], [1.0, 0.5])
    with pytest.raises(ValueError, match="parameter"):
        PMNFSearch(parameter="cores").fit([[1.0], [2.0]], [1.0, 0.5])
    with pytest.raises(ValueError, match="positive targets"):
        PMNFSearch().fit([[1.0], [2.0]], [1.0, -0.5])
    with pytest.raises(ValueError, match="2 distinct"):
        PMNFSearch().fit([[2.0], [2.0]], [1.0, 1.1])
    with pytest.raises(ValueError, match="family_interval must be True, False or"):
        PMNFSearch(family_interval="all").fit([[1.0], [2.0]], [1.0, 0.5])


def test_both_intervals_join_the_own_set_and_the_family():
    p, y = _noisy(lambda p: 3 + 80 / p, 0, stop=5, noise=0.02)
    X = pd.DataFrame({"ranks": p})
    far = pd.DataFrame({"ranks": [64.0, 1024.0]})
    bands = {
        mode: PMNFSearch(family_interval=mode).fit(X, y).predict_interval(far)
        for mode in (False, True, "both")
    }
    low, high = bands["both"]
    np.testing.assert_array_equal(low, np.minimum(bands[False][0], bands[True][0]))
    np.testing.assert_array_equal(high, np.maximum(bands[False][1], bands[True][1]))
    # the family's growing laws reach far above the chosen law's own set
    assert np.all(bands[True][1] > bands[False][1])
