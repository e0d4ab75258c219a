"""The trend tests of many series at once agree with scipy's, series by series."""

from __future__ import annotations

import numpy as np
import pytest
from scaleprobe.models.laws.trend import (
    curvature_pvalues,
    rank_pvalues,
    slope_pvalues,
)
from scaleprobe.models.profiles.search import SeriesGroup, _replicate_pvalues
from scipy import stats


@pytest.mark.parametrize("m", [4, 5, 7, 12])
def test_slope_and_rank_are_scipys_linregress_and_kendalltau(m):
    rng = np.random.default_rng(m)
    x = np.log(np.sort(rng.choice(np.arange(2, 5000), m, replace=False)))
    y = rng.normal(size=(m, 60)) + x[:, None] * rng.uniform(0, 0.5, 60)
    y[:, :20] = np.round(y[:, :20])  # tied centres take the asymptotic form
    slope, rank = slope_pvalues(x, y), rank_pvalues(x, y)
    for s in range(y.shape[1]):
        exact = np.unique(y[:, s]).size == m
        method = "exact" if exact else "asymptotic"
        kendall = stats.kendalltau(x, y[:, s], method=method).pvalue
        assert rank[s] == pytest.approx(kendall if np.isfinite(kendall) else 1.0)
        line = stats.linregress(x, y[:, s]).pvalue  # NaN on equal centres: no trend
        assert slope[s] == pytest.approx(line if np.isfinite(line) else 1.0)


def test_a_long_series_has_an_exact_rank_test_without_overflow():
    x = np.arange(1.0, 81.0)
    y = np.column_stack([x, np.sin(x)])
    p = rank_pvalues(x, y)
    assert p[0] == pytest.approx(stats.kendalltau(x, x, method="exact").pvalue)
    assert p[1] == pytest.approx(stats.kendalltau(x, y[:, 1], method="exact").pvalue)


def test_curvature_is_the_t_test_of_the_quadratic_coefficient():
    rng = np.random.default_rng(1)
    x = np.log([2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    y = rng.normal(size=(6, 30)) * 0.1 + 0.3 * np.outer((x - 2.5) ** 2, rng.random(30))
    design = np.column_stack([np.ones(6), x, x**2])
    p = curvature_pvalues(x, y)
    for s in range(30):
        coef, *_ = np.linalg.lstsq(design, y[:, s], rcond=None)
        variance = np.sum((y[:, s] - design @ coef) ** 2) / 3
        error = np.sqrt(variance * np.linalg.inv(design.T @ design)[2, 2])
        assert p[s] == pytest.approx(2 * stats.t.sf(abs(coef[2]) / error, 3))


def test_the_replicate_test_is_the_analysis_of_variance_of_the_logs():
    rng = np.random.default_rng(2)
    logs = rng.normal(size=(5, 3, 40)) * 0.1 + rng.normal(size=(5, 1, 40)) * 0.05
    centres = logs.mean(axis=1)
    noise = np.sqrt(((logs - centres[:, None, :]) ** 2).sum(axis=(0, 1)) / 10)
    group = SeriesGroup(
        x=np.arange(1.0, 6.0),
        centre=np.exp(centres),
        count=np.full((5, 40), 3.0),
        noise=noise,
    )
    p = _replicate_pvalues(group, centres)
    for s in range(40):
        anova = stats.f_oneway(*[logs[i, :, s] for i in range(5)]).pvalue
        assert p[s] == pytest.approx(anova)


def test_the_t_and_f_tails_are_scipys():
    from scaleprobe.models.laws.trend import beta_tail, f_pvalues, t_pvalues
    from scipy import special

    rng = np.random.default_rng(4)
    a, b = rng.uniform(0.5, 60, 2000), rng.uniform(0.5, 60, 2000)
    x = rng.uniform(0, 1, 2000)
    assert beta_tail(a, b, x) == pytest.approx(special.betainc(a, b, x), abs=1e-12)
    t = np.concatenate([rng.exponential(2.0, 500), [0.0, np.inf]])
    for dof in (1, 2, 3, 7, 40):
        assert t_pvalues(t, dof) == pytest.approx(2 * stats.t.sf(t, dof), abs=1e-12)
    f = np.concatenate([rng.exponential(2.0, 500), [0.0, np.inf]])
    dfd = np.arange(502) % 30 + 1
    expected = stats.f.sf(f, 4, dfd)
    assert f_pvalues(f, 4, dfd) == pytest.approx(expected, abs=1e-12)
