"""Intervals: the range of consistent laws, calibration, and no infinite bounds."""

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    ExtrapolationSplit,
    InsufficientDataWarning,
    PMNFSearch,
    PowerLawBaseline,
    PredictionInterval,
    ScalingLaw,
    calibrate_axis,
    calibrate_interval,
    evaluate,
)
from scaleprobe.models.evaluation.intervals import conformal_quantile
from scaleprobe.models.laws.lsq import consistent_range, nnls_losses, weighted_nnls


def test_consistent_range_is_exact_for_one_coefficient():
    p = np.array([1.0, 2.0, 4.0, 8.0])
    A = (1 / p)[:, None]
    # Relative loss 4 (1 - c/8)^2 <= 0.04 gives c in [7.2, 8.8].
    low, high = consistent_range(A, 8 / p, np.ones(4), np.array([[1 / 16]]), 0.04)
    np.testing.assert_allclose([low[0], high[0]], [7.2 / 16, 8.8 / 16])


def test_consistent_range_respects_non_negative_coefficients():
    p = np.array([1.0, 2.0, 4.0, 8.0])
    A = np.column_stack([1 / p, p])
    y = 8 / p  # no growing part at all
    target = np.array([[1 / 1024, 1024.0]])
    low, high = consistent_range(A, y, np.ones(4), target, 0.04)
    # The growing coefficient may be small but never negative: the lower bound is
    # that of the 1/p law alone, the upper one allows some growth.
    assert low[0] == pytest.approx(7.2 / 1024, rel=1e-6)
    assert high[0] > 1.0
    coef, loss = weighted_nnls(A, y)
    assert loss == pytest.approx(0, abs=1e-20)
    assert coef[1] == pytest.approx(0)
    nothing = consistent_range(A[:, :1], p, np.ones(4), target[:, :1], 1e-6)
    assert np.isnan(nothing[0]).all()  # no consistent law at all: NaN, not a guess


def test_a_stack_of_designs_gives_the_union_of_their_ranges():
    p = np.array([1.0, 2.0, 4.0, 8.0])
    # y = 8/p. Design a/p admits c*a/8 in [0.9, 1.1] (relative loss 4 (1 - ca/8)^2
    # <= 0.04); the target row b/16 then predicts [7.2, 8.8] * b / (16 a).
    A = np.stack([(1 / p)[:, None], (2 / p)[:, None]])
    targets = np.array([[[1 / 16]], [[1 / 16]]])
    low, high = consistent_range(A, 8 / p, np.ones(4), targets, 0.04)
    np.testing.assert_allclose([low[0], high[0]], [3.6 / 16, 8.8 / 16])
    for design, target in zip(A, targets, strict=True):
        one_low, one_high = consistent_range(design, 8 / p, np.ones(4), target, 0.04)
        assert low[0] <= one_low[0]
        assert one_high[0] <= high[0]


def test_nnls_losses_of_a_stack_are_those_of_each_nnls_fit():
    rng = np.random.default_rng(1)
    p = np.repeat([2.0, 3.0, 4.0, 6.0, 8.0, 12.0], 3)
    y = (30 / p + 2 * np.log2(p)) * np.exp(0.05 * rng.standard_normal(p.size))
    columns = [1 / p, np.ones_like(p), np.log2(p), p, -np.sqrt(p)]
    designs = []
    for _ in range(40):
        # up to four of the columns, some with negative slopes the fit must drop
        chosen = rng.choice(len(columns), size=rng.integers(1, 5), replace=False)
        design = np.column_stack([columns[i] for i in chosen])
        designs.append(np.pad(design, ((0, 0), (0, 4 - design.shape[1]))))
    designs.append(np.column_stack([1 / p, 2 / p, np.ones_like(p), np.ones_like(p)]))
    weights = rng.integers(1, 4, p.size).astype(float)
    losses = nnls_losses(np.stack(designs), y, weights)
    expected = [weighted_nnls(d, y, weights)[1] for d in designs]
    np.testing.assert_allclose(losses, expected, rtol=1e-9, atol=1e-14)
    # zero columns and dependent ones (the last design) leave the loss as it is
    independent = designs[-1][:, [0, 2]]
    assert losses[-1] == pytest.approx(weighted_nnls(independent, y, weights)[1])


def test_a_grid_of_alpha_solved_in_blocks_gives_the_same_range(monkeypatch):
    from scaleprobe.models.laws import envelope as _envelope
    from scaleprobe.models.laws.terms import parse_term

    nodes = np.repeat([2.0, 4.0, 8.0, 16.0], 2)
    bandwidth = np.tile([100.0, 50.0], 4)
    y = 40 / nodes + 3 * 1.3 ** (100 / bandwidth) / np.sqrt(nodes)
    rng = np.random.default_rng(0)
    table = _envelope.training_table(
        {"p": nodes, "bandwidth": bandwidth}, y * np.exp(0.02 * rng.standard_normal(8))
    )
    terms = [parse_term("1/p"), parse_term("alpha^(100/bw)/sqrt(p)")]
    targets = {"p": np.geomspace(32, 4096, 300), "bandwidth": np.full(300, 25.0)}
    grid = _envelope.alpha_grid(1.3)
    whole = _envelope.law_range(terms, table, targets, 0.005, alphas=grid)
    # the union of the ranges of every alpha alone; here neither end of the grid
    # is consistent with the data, the bounds come from alphas inside it
    alone = [
        _envelope.law_range(terms, table, targets, 0.005, alphas=[a]) for a in grid
    ]
    assert np.isnan(alone[0][0]).all()
    assert np.isnan(alone[-1][0]).all()
    low = np.fmin.reduce([a[0] for a in alone])
    high = np.fmax.reduce([a[1] for a in alone])
    np.testing.assert_allclose(whole, (low, high), rtol=1e-12)
    monkeypatch.setattr(_envelope, "_CELLS", 1)  # one alpha per block
    blocks = _envelope.law_range(terms, table, targets, 0.005, alphas=grid)
    np.testing.assert_allclose(blocks, whole, rtol=1e-12)


def _frame(nodes, runs=3):
    return pd.DataFrame(
        {
            "nodes": np.repeat(nodes, runs).astype(float),
            "run": np.tile(np.arange(runs), len(nodes)),
        }
    )


def test_calibration_with_few_residuals_warns_and_stays_finite():
    X = _frame([2, 4, 8])
    y = 10 / X["nodes"].to_numpy() * np.exp(0.05 * np.sin(np.arange(len(X))))
    with pytest.warns(InsufficientDataWarning, match="calibration residual"):
        interval = calibrate_interval(PowerLawBaseline(), X, y)
    assert interval.method == "conformal"
    assert np.isfinite(interval.kappa)
    assert interval.kappa >= 0
    baseline = PowerLawBaseline().fit(X, y)
    lower, upper = interval.bounds(baseline, _frame([64, 1024], 1))
    assert np.all(np.isfinite(lower))
    assert np.all(np.isfinite(upper))
    assert np.all(lower < upper)
    assert PredictionInterval.from_dict(interval.to_dict()) == interval
    # the advice names the axis the counts are on
    ranks = X.rename(columns={"nodes": "ranks"})
    split = ExtrapolationSplit(column="ranks", n_splits=3)
    with pytest.warns(InsufficientDataWarning, match="more rank counts"):
        calibrate_interval(PowerLawBaseline(over="ranks"), ranks, y, cv=split)


def test_calibrated_range_covers_the_truth_of_an_in_family_law():
    """100/p + 2/sqrt(p), 5 % log-normal noise, nodes 2..16: truth covered at 64."""
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(20):
        X = _frame([2, 3, 4, 6, 8, 12, 16])
        p = X["nodes"].to_numpy()
        y = (100 / p + 2 / np.sqrt(p)) * np.exp(0.05 * rng.standard_normal(p.size))
        model = PMNFSearch(parameter="nodes").fit(X[["nodes"]], y)
        lower, upper = model.predict_interval(pd.DataFrame({"nodes": [64.0]}))
        truth = 100 / 64 + 2 / 8
        covered += lower[0] <= truth <= upper[0]
    assert covered >= 17


def test_conformal_quantile_needs_enough_scores():
    assert conformal_quantile(range(1, 20), 0.9) == 18.0
    assert conformal_quantile([1.0, 2.0], 0.9) is None


def test_evaluate_never_counts_a_missing_interval_as_covered():
    X = _frame([2, 4, 8, 16, 32])
    y = 10 / X["nodes"].to_numpy()
    scores = evaluate({"law": ScalingLaw(terms=["1/p"])}, (X, y))
    assert set(scores["model"].values) == {"law", "baseline"}
    baseline = scores["coverage"].sel(model="baseline")
    assert bool(baseline.isnull().all())  # the baseline has no interval
    covered = scores["coverage"].sel(model="law", cv="extrapolation")
    assert float(covered.mean()) == 1.0


def test_a_size_axis_widens_the_bounds_outside_the_measured_sizes_only():
    interval = PredictionInterval(
        0.9,
        0.1,
        4.0,
        3,
        1.0,
        method="conformal",
        axes=(("points", 0.2, 1e4, 4e4), ("scale", 0.3, 20.0, 22.0)),
    )
    X = pd.DataFrame(
        {
            "nodes": [4.0, 4.0, 4.0, 4.0, 16.0],
            "points": [2e4, 16e4, 2.5e3, 2e4, 16e4],
            "scale": [21.0, 21.0, 21.0, 24.0, 24.0],
        }
    )
    lower, upper = interval.bounds(None, X, prediction=np.ones(5))
    # kappa * max(d, 1) along the nodes (d = 2 at 16), then 0.2 per doubling of
    # points outside 1e4-4e4 and 0.3 per unit of scale beyond 22
    width = np.array(
        [0.1, 0.1 + 0.2 * 2, 0.1 + 0.2 * 2, 0.1 + 0.3 * 2, 0.2 + 0.2 * 2 + 0.3 * 2]
    )
    np.testing.assert_allclose(upper, np.exp(width))
    np.testing.assert_allclose(lower, np.exp(-width))
    # a model file's JSON gives the axes back as the tuples they were
    again = PredictionInterval.from_dict(json.loads(json.dumps(interval.to_dict())))
    assert again == interval
    old_file = {k: v for k, v in interval.to_dict().items() if k != "axes"}
    assert PredictionInterval.from_dict(old_file).axes == ()


def test_axes_held_out_together_widen_by_their_largest_term():
    # na and nnz grow together (one NPB class sets both): one miss, counted once
    axes = (
        ("na", 0.2, 1e3, 1e4, "na"),
        ("nnz", 0.1, 1e5, 1e6, "na"),
        ("scale", 0.3, 20.0, 22.0),
    )
    interval = PredictionInterval(0.9, 0.0, 4.0, 3, 1.0, method="conformal", axes=axes)
    X = pd.DataFrame(
        {"nodes": 4.0, "na": [4e4, 2e4], "nnz": [2e6, 1.6e7], "scale": [24.0, 21.0]}
    )
    _, upper = interval.bounds(None, X, prediction=np.ones(2))
    # row 0: na 2 doublings (0.4) vs nnz 1 (0.1); row 1: na 1 (0.2) vs nnz 4 (0.4)
    np.testing.assert_allclose(np.log(upper), [0.4 + 0.3 * 2, 0.4])
    apart = replace(interval, axes=tuple(a[:4] for a in axes))  # separate groups add
    _, upper = apart.bounds(None, X, prediction=np.ones(2))
    np.testing.assert_allclose(np.log(upper), [0.5 + 0.3 * 2, 0.6])
    again = PredictionInterval.from_dict(json.loads(json.dumps(interval.to_dict())))
    assert again == interval


def _three_sizes():
    """1, 2 and 4 nodes at 1e4, 2e4 and 4e4 points, full bandwidth."""
    return pd.DataFrame(
        {
            "nodes": [1.0, 2.0, 4.0] * 3,
            "bandwidth": 100.0,
            "points": np.repeat([1e4, 2e4, 4e4], 3),
        }
    )


def test_a_size_axis_is_calibrated_on_the_largest_size_held_out():
    X = _three_sizes()
    base = 1.0 / X["nodes"] + 0.5 / np.sqrt(X["nodes"])
    law = ScalingLaw(form="base", over="nodes")  # blind to the points
    (column, kappa, low, high), residuals = calibrate_axis(
        law, X, base * X["points"] / 1e4, "points"
    )
    assert (column, low, high, residuals) == ("points", 1e4, 4e4, 3)
    # fitted on 1e4 and 2e4 (times doubling between them), the law's range holds
    # at least the times of 1e4 but misses those of 4e4 (4x), one doubling away
    assert 0.1 < kappa < np.log(4)
    flat, _ = calibrate_axis(law, X, base, "points")
    assert flat[1] == pytest.approx(0.0, abs=1e-9)
    assert calibrate_axis(law, X[X["points"] < 4e4], base[:6], "points") is None


class _NeedsEverySize(ScalingLaw):
    """A law that refuses to fit without all three sizes, as a model whose form
    needs them would."""

    def fit(self, X, y, sample_weight=None):
        if X["points"].nunique() < 3:
            raise ValueError("needs three sizes of points")
        return super().fit(X, y, sample_weight=sample_weight)


def test_a_size_axis_no_refit_can_make_is_none():
    X = _three_sizes()
    y = 1.0 / X["nodes"] + 0.5 / np.sqrt(X["nodes"])
    law = _NeedsEverySize(form="base", over="nodes")
    assert law.fit(X, y) is law  # it fits all the data ...
    assert calibrate_axis(law, X, y, "points") is None  # ... but not without 4e4
    with pytest.raises(KeyError):
        calibrate_axis(law, X, y, "clusters")  # a column the data do not have


def test_no_bound_of_a_time_is_below_zero():
    from sklearn.linear_model import LinearRegression

    # a straight line through falling times crosses zero beyond 20 nodes
    X = pd.DataFrame({"nodes": [2.0, 4.0, 8.0, 16.0]})
    line = LinearRegression().fit(X, 10.0 - 0.5 * X["nodes"])
    far = pd.DataFrame({"nodes": [32.0, 64.0, 1024.0]})
    assert np.all(line.predict(far) < 0)
    interval = PredictionInterval(0.9, 0.2, 16.0, 12, 2.0, method="conformal")
    lower, upper = interval.bounds(line, far)
    assert np.all(lower == 0.0)
    assert np.all(upper >= lower)


def test_exact_data_keep_a_floor_of_spread_per_doubling_beyond_them():
    """0.25 p measured without noise on 4..64 nodes: the calibration gives no
    widening and the laws' range is the truth itself, yet 16 times beyond the
    interval spans at least 0.05 per doubling either side."""
    X = _frame([4, 8, 16, 32, 64])
    y = 0.25 * X["nodes"].to_numpy()
    model = PMNFSearch(parameter="nodes").fit(X[["nodes"]], y)
    with pytest.warns(InsufficientDataWarning, match="calibration residual"):
        interval = calibrate_interval(PMNFSearch(parameter="nodes"), X[["nodes"]], y)
    assert interval.kappa == pytest.approx(0.0, abs=1e-9)
    assert interval.floor == pytest.approx(0.05)
    far = pd.DataFrame({"nodes": [64.0, 128.0, 1024.0]})
    lower, upper = interval.bounds(model, far)
    doublings = np.array([0.0, 1.0, 4.0])
    truth = 0.25 * far["nodes"].to_numpy()
    # at the largest measured count the laws' own range (0.2 %), beyond it the floor
    np.testing.assert_allclose(lower, truth * np.exp(-0.05 * doublings), rtol=0.01)
    np.testing.assert_allclose(upper, truth * np.exp(0.05 * doublings), rtol=0.01)
    np.testing.assert_allclose(lower[1:], truth[1:] * [0.951229, 0.818731], rtol=1e-6)
    np.testing.assert_allclose(upper[1:], truth[1:] * [1.051271, 1.221403], rtol=1e-6)
    # what a model file written before the floor holds reads back without it
    older = {k: v for k, v in interval.to_dict().items() if k != "floor"}
    without = PredictionInterval.from_dict(older)
    assert without.floor == 0.0
    lower, upper = without.bounds(model, far)
    np.testing.assert_allclose([lower[-1], upper[-1]], [256.0, 256.0], rtol=0.01)


def test_the_floor_never_narrows_a_calibrated_interval():
    X = _frame([2, 4, 8, 16])
    law = PowerLawBaseline().fit(X, 10 / X["nodes"].to_numpy())
    far = pd.DataFrame({"nodes": [32.0, 256.0]})
    wide = PredictionInterval(0.9, 0.3, 16.0, 12, 2.0, method="conformal")
    floored = replace(wide, floor=0.05)
    got, expected = floored.bounds(law, far), wide.bounds(law, far)
    np.testing.assert_allclose(got, expected)


def test_the_floor_spreads_per_doubling_of_a_size_beyond_the_measured_sizes():
    """A size axis whose held-out size the fit met exactly (``kappa`` 0) still
    widens by the floor per doubling outside the measured sizes, grouped as the
    calibrated widening is: no claim that a law holds to the noise's width at a
    size never measured."""
    axes = (("na", 0.0, 1e3, 1e4, "na"), ("nnz", 0.0, 1e5, 1e6, "na"))
    interval = PredictionInterval(
        0.9, 0.0, 4.0, 3, 1.0, method="conformal", axes=axes, floor=0.05
    )
    X = pd.DataFrame(
        {
            "nodes": [4.0, 4.0, 16.0, 2.0],
            "na": [4e3, 4e4, 4e4, 5e2],
            "nnz": [4e5, 4e6, 1.6e7, 5e4],
        }
    )
    lower, upper = interval.bounds(None, X, prediction=np.full(4, 2.0))
    # inside both ranges: nothing; na 2 and nnz 2 doublings out, one group: 2;
    # 2 node doublings and nnz 4 out: 6; one doubling below both: 1
    spread = 0.05 * np.array([0.0, 2.0, 6.0, 1.0])
    np.testing.assert_allclose(upper, 2.0 * np.exp(spread))
    np.testing.assert_allclose(lower, 2.0 * np.exp(-spread))
    # without a floor (a file written before it) the exact axis adds nothing
    _, upper = replace(interval, floor=0.0).bounds(None, X, prediction=np.full(4, 2.0))
    np.testing.assert_allclose(upper, 2.0)
