"""Non-negative least squares that does not stop short: SciPy's active-set solver,
and bounded-variable least squares where its iterations run out."""

from __future__ import annotations

import numpy as np
import pytest
from scaleprobe.models.laws import lsq
from scaleprobe.models.laws.lsq import nnls


def _problem(seed):
    rng = np.random.default_rng(seed)
    A = rng.lognormal(size=(12, 5))
    truth = np.array([2.0, 0.0, 1.5, 0.0, 0.5])  # two bounds active
    return A, A @ truth + rng.normal(0.0, 0.05, 12)


@pytest.mark.parametrize("seed", range(5))
def test_the_fallback_solves_what_the_active_set_solves(seed, monkeypatch):
    A, b = _problem(seed)
    expected, expected_norm = nnls(A, b)

    def stops_short(*args, **kwargs):
        raise RuntimeError("Maximum number of iterations reached.")

    monkeypatch.setattr(lsq, "_active_set", stops_short)
    coef, norm = nnls(A, b)
    assert np.all(coef >= 0)
    np.testing.assert_allclose(coef, expected, atol=1e-8)
    assert norm == pytest.approx(expected_norm, rel=1e-9)
    assert norm == pytest.approx(float(np.linalg.norm(A @ coef - b)), rel=1e-12)
