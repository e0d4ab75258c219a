"""RoundLaw: collective rounds as a + b g(p), g fixed by the algorithm."""

import numpy as np
import pytest
from scaleprobe.models import RoundLaw

P = np.array([2, 3, 4, 6, 8, 2, 4, 8], dtype=float).reshape(-1, 1)


def test_ring_rounds_recover_p_minus_one():
    law = RoundLaw(shape="linear").fit(P, 4 * (P[:, 0] - 1))
    np.testing.assert_allclose(law.coef_, [-4, 4], atol=1e-9)
    low, high = law.predict_interval([[1024]])
    assert low[0] == pytest.approx(4 * 1023)
    assert high[0] == pytest.approx(4 * 1023)


def test_tree_rounds_with_noise_get_an_interval_that_holds_the_truth():
    rng = np.random.default_rng(1)
    truth = 7 * np.log2(P[:, 0]) + 3
    law = RoundLaw(shape="tree").fit(P, truth * np.exp(0.03 * rng.standard_normal(8)))
    low, high = law.predict_interval([[64], [1024]], level=0.9)
    expected = 7 * np.log2([64, 1024]) + 3
    assert np.all(low < expected)
    assert np.all(expected < high)
    assert np.all(high / low < 1.5)  # a count, not a guess


def test_rounds_never_fall():
    law = RoundLaw(shape="linear").fit(P, 100 / P[:, 0])
    assert law.coef_[1] == 0
    assert law.predict([[1024]])[0] == pytest.approx(law.coef_[0])


@pytest.mark.parametrize(
    ("shape", "X", "message"),
    [
        ("cubic", P, "shape must be one of"),
        ("tree", 0 * P, "positive"),
        ("linear", -P, "Negative values"),
    ],
)
def test_bad_input(shape, X, message):
    with pytest.raises(ValueError, match=message):
        RoundLaw(shape=shape).fit(X, np.ones(len(X)))
