"""PMNFSearch finds the exponents of multi-term laws that a one-term search cannot."""

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import PMNFSearch, make_features


def _noisy(law, seed, start=1, runs=5, noise=0.01):
    rng = np.random.default_rng(seed)
    p = np.repeat(2.0 ** np.arange(start, 11), runs)
    return p, law(p) * (1 + noise * rng.standard_normal(p.size))


@pytest.mark.parametrize(
    ("law", "terms"),
    [
        (lambda p: 50 / p + 3 / np.sqrt(p), {"1/p", "1/sqrt(p)"}),
        (lambda p: 100 / p + 0.5 * np.log2(p), {"1/p", "log2(p)"}),
        (lambda p: 100 / p + 2 * p ** (1 / 3), {"1/p", "p^(1/3)"}),
        (lambda p: 10 * p**-0.25 + 100 * p**-1.5, {"1/p^(1/4)", "1/p^(3/2)"}),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_two_term_exponents(law, terms, seed):
    p, y = _noisy(law, seed)
    model = PMNFSearch().fit(pd.DataFrame({"ranks": p}), y)
    assert set(model.terms_) == terms
    assert np.all(model.coef_ > 0)


def test_one_term_law_stays_one_term():
    p, y = _noisy(lambda p: 40 / p, seed=3)
    assert PMNFSearch().fit(p.reshape(-1, 1), y).terms_ == ("1/p",)


def test_max_terms_one_cannot_express_two_terms():
    """Extra-P's default one-term search misses C1/p + C2/sqrt(p)."""
    p, y = _noisy(lambda p: 50 / p + 3 / np.sqrt(p), seed=0)
    one = PMNFSearch(max_terms=1).fit(p.reshape(-1, 1), y)
    two = PMNFSearch(max_terms=2).fit(p.reshape(-1, 1), y)
    assert len(one.terms_) == 1
    big = np.array([[4096.0]])
    truth = 50 / 4096 + 3 / 64
    assert abs(two.predict(big)[0] / truth - 1) < abs(one.predict(big)[0] / truth - 1)


def test_bandwidth_and_data_factors_on_results(results):
    X, y = make_features(results, s0=20)
    model = PMNFSearch(parameter="ranks", data=True, bandwidth=True, s0=20).fit(X, y)
    assert set(model.terms_) == {"D/p", "D*alpha^(100/bw)/sqrt(p)"}
    assert abs(model.alpha_ - 1.12) < 0.01
    assert model.predict_components(X)["communication"].gt(0).all()
    assert list(model.search_scores_.columns) == ["terms", "score"]


def test_rejects_bad_parameters():
    with pytest.raises(ValueError, match="max_terms"):
        PMNFSearch(max_terms=4).fit([[1.0], [2.0]], [1.0, 0.5])
    with pytest.raises(ValueError, match="parameter"):
        PMNFSearch(parameter="cores").fit([[1.0], [2.0]], [1.0, 0.5])
