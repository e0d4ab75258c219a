"""Profile likelihood intervals: known coverage for a right law, and the guard."""

import math

import numpy as np
import pandas as pd
from scaleprobe.models import ScalingLaw
from scaleprobe.models.laws import envelope as _envelope
from scaleprobe.models.laws.lsq import consistent_range, weighted_nnls
from scaleprobe.models.laws.terms import parse_term
from scipy.stats import binom, chi2

NODES = np.array([2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0])
RUNS = 3
SIGMA = 0.02
LEVEL = 0.9


def _law(p):
    return 100 / p + 5


def _table(rng):
    p = np.repeat(NODES, RUNS)
    y = _law(p) * np.exp(SIGMA * rng.standard_normal(p.size))
    return _envelope.training_table({"p": p}, y)


def _old_range(table, target_row):
    """The simultaneous rule on the same data: every law with loss <= chi2(m)."""
    A = np.column_stack([np.ones(len(table)), 1 / table["p"]])
    low, high = consistent_range(
        A,
        table["y"].to_numpy(),
        table["n"].to_numpy(),
        np.array([target_row]),
        SIGMA**2 * chi2.ppf(LEVEL, len(table)),
    )
    width = np.nan_to_num(high[0] - low[0])  # NaN: nothing admitted
    return low[0], high[0], width


def test_a_right_law_with_known_noise_covers_at_the_level_and_is_narrower():
    """200 seeds, the true two-coefficient law, 2 times beyond the largest count:
    the profile range of the law holds the truth at the level."""
    target = {"p": np.array([32.0])}
    truth = _law(32.0)
    terms = [parse_term("1"), parse_term("1/p")]
    increment = _envelope.budget(SIGMA, LEVEL)
    assert increment == SIGMA**2 * chi2.ppf(LEVEL, 1)
    rng = np.random.default_rng(2026)
    seeds, covered, ratios, below = 200, 0, [], 0
    for _ in range(seeds):
        table = _table(rng)
        least = _envelope.law_loss(terms, table)
        low, high = _envelope.law_range(terms, table, target, least + increment)
        covered += bool(low[0] <= truth <= high[0])
        old_low, old_high, old_width = _old_range(table, [1.0, 1 / 32])
        ratios.append((high[0] - low[0]) / old_width if old_width else math.inf)
        # where its bar (least loss + chi2(1)) is below chi2(m), the profile range
        # lies strictly inside the old one (it can be wider only when the best fit
        # is poor, where the old range shrinks towards nothing)
        if least + increment < SIGMA**2 * chi2.ppf(LEVEL, len(table)):
            below += 1
            assert old_low < low[0]
            assert high[0] < old_high
    # two-sided 99.9 % binomial bounds around the level
    lo, hi = binom.ppf([0.0005, 0.9995], seeds, LEVEL) / seeds
    assert lo <= covered / seeds <= hi
    assert below > seeds / 2
    assert np.median(ratios) < 0.8


def test_the_interval_holds_a_new_measurement_at_the_level():
    """The law's interval (its profile range widened by a centre's scatter) holds
    a new centre of as many runs at the level, the truth at least as often, and
    is still narrower than the simultaneous rule's range."""
    target = {"p": np.array([32.0])}
    truth = _law(32.0)
    increment = _envelope.budget(SIGMA, LEVEL)
    terms = [parse_term("1"), parse_term("1/p")]
    rng = np.random.default_rng(7)
    seeds, measured, covered, ratios = 200, 0, 0, []
    for _ in range(seeds):
        table = _table(rng)
        A = np.column_stack([np.ones(len(table)), 1 / table["p"]])
        coef, _ = weighted_nnls(A, table["y"].to_numpy(), table["n"].to_numpy())
        centre_fit = np.array([coef @ [1.0, 1 / 32]])
        least = _envelope.law_loss(terms, table)
        low, high = _envelope.law_range(terms, table, target, least + increment)
        low, high = np.fmin(centre_fit, low), np.fmax(centre_fit, high)
        low, high = _envelope.measured_range(low, high, centre_fit, increment, RUNS)
        centre = truth * np.exp(SIGMA * rng.standard_normal(RUNS).mean())
        measured += bool(low[0] <= centre <= high[0])
        covered += bool(low[0] <= truth <= high[0])
        old_width = _old_range(table, [1.0, 1 / 32])[2]
        ratios.append((high[0] - low[0]) / old_width if old_width else math.inf)
    lo, hi = binom.ppf([0.0005, 0.9995], seeds, LEVEL) / seeds
    assert lo <= measured / seeds <= hi
    assert covered >= measured
    assert covered / seeds >= lo
    assert np.median(ratios) < 1


def test_the_smallest_loss_of_the_family_sets_the_bar():
    """A law far worse than the best is not admitted, however wide it would make
    the range; one as good as the best is."""
    rng = np.random.default_rng(3)
    table = _table(rng)
    good = [parse_term("1"), parse_term("1/p")]
    bad = [parse_term("p")]
    best = _envelope.law_loss(good, table)
    assert _envelope.law_loss(bad, table) > 1e3 * best
    increment = _envelope.budget(SIGMA, LEVEL)
    target = {"p": np.array([32.0])}
    low, high = _envelope.law_range(good, table, target, best + increment)
    assert low[0] < _law(32.0) < high[0]
    nothing = _envelope.law_range(bad, table, target, best + increment)
    assert np.isnan(nothing).all()


def test_a_law_that_fits_worse_than_the_noise_keeps_a_wide_range():
    """The residual scatter replaces the replicates' noise when the law misfits, so
    the range spans the misfit instead of collapsing onto the best bad law."""
    rng = np.random.default_rng(5)
    p = np.repeat(NODES, RUNS)
    y = (100 / p + 5) * np.exp(0.002 * rng.standard_normal(p.size))  # tiny noise
    X = pd.DataFrame({"nodes": p, "ppn": 1.0, "ranks": p})
    law = ScalingLaw(terms=("1/p",), features=("ranks",)).fit(X, y)
    replicate = _envelope.replicate_noise(law.training_)
    assert law.noise_ > 10 * replicate
    at = pd.DataFrame({"nodes": NODES, "ppn": 1.0, "ranks": NODES})
    low, high = law.predict_interval(at)
    # the range holds most measured centres, which the one-term law misses by up to
    # a factor of 2: a range of the replicates' noise alone would hold none
    inside = (low <= _law(NODES)) & (_law(NODES) <= high)
    assert inside.mean() >= 0.5
    assert np.median(high / low) > math.exp(2 * 3 * replicate)
