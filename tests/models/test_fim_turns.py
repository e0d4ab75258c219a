"""FiM on oversubscribed ranks: records of ranks that take turns on a host's cores
(``cache_sharers`` below the process count), with a known growth of a rank's
computation per turn, give it back and project it to more turns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import FiM
from scaleprobe.models.fim.wait import excess

WORK = 2e-6  # seconds a point of work takes a rank alone
SPREAD, KAPPA, CORES = 0.04, 0.2, 2


def _records(counts, sizes=(1e5, 2e5, 4e5), cores=CORES, kappa=KAPPA):
    """Synthetic NPB-like records: the mean rank's computation ``WORK x / q`` times
    ``1 + kappa (t - 1)/2``, the slowest rank's ``1 + s e(q) + kappa (t - 1)/2`` over
    it, ``t = q / cores`` turns where ``q`` exceeds the cores."""
    rows = []
    for points in sizes:
        for q in counts:
            t = max(q / cores, 1.0)
            mean = WORK * points / q * (1 + kappa * (t - 1) / 2)
            wait = 1 + SPREAD * float(excess([q], "exponential")[0])
            slowest = mean * (wait + kappa * (t - 1) / 2)
            rows.append(
                {
                    "ranks": float(q),
                    "points": points,
                    "comp_time_iterations": slowest,
                    "comp_time_iterations_mean": mean,
                    "stages": 1.0,
                    "cache_sharers": float(min(q, cores)),
                }
            )
    return pd.DataFrame(rows)


def _fim():
    return FiM(process_law="constant", size_law="linear", wait="exponential")


def test_turns_on_the_cores_are_fitted_and_projected():
    # 4 and 8 ranks on the 2 cores: two oversubscribed turn counts (2 and 4)
    train = _records((1, 2, 4, 8))
    model = _fim().fit(train, train["comp_time_iterations"])
    assert model.wait_["cores"] == 2.0
    assert model.wait_["held"] is None
    assert model.wait_["exponential"] == pytest.approx(SPREAD, rel=1e-6)
    assert model.wait_["turns"]["exponential"] == pytest.approx(KAPPA, rel=1e-6)
    # 16 and 32 ranks: 8 and 16 turns, never trained
    test = _records((16, 32))
    predicted = model.predict_components(test)["computation"]
    np.testing.assert_allclose(predicted, test["comp_time_iterations"], rtol=1e-6)
    # by hand: 16 ranks, 2e5 points: 0.025 s alone x 1.7, x (1 + 0.04 e(16) + 0.7)
    row = test[(test.ranks == 16) & (test.points == 2e5)].index[0]
    e16 = sum(1 / k for k in range(2, 17))
    by_hand = 0.025 * 1.7 * (1 + 0.04 * e16 + 0.7)
    assert predicted[row] == pytest.approx(by_hand, rel=1e-6)
    assert "t = q/2 turns" in model.describe()
    assert "held at" not in model.describe()


def test_one_oversubscribed_count_holds_the_growth_beyond_it():
    # 4 ranks on the 2 cores is the only oversubscribed count: the growth per turn
    # it shows (2 turns) is the point prediction at 8 and 16 ranks, and the range
    # reaches the growth carried on linearly (the records' truth)
    train = _records((1, 2, 4))
    model = _fim().fit(train, train["comp_time_iterations"])
    assert model.wait_["held"] == 2.0
    assert model.wait_["turns"]["exponential"] == pytest.approx(KAPPA, rel=1e-6)
    test = _records((8, 16))
    predicted = model.predict_components(test)["computation"]
    q = test["ranks"].to_numpy()
    held = WORK * test["points"].to_numpy() / q * (1 + KAPPA / 2)
    held = held * (1 + SPREAD * excess(q, "exponential") + KAPPA / 2)
    np.testing.assert_allclose(predicted, held, rtol=1e-6)
    truth = test["comp_time_iterations"].to_numpy()
    assert np.all(predicted < truth)
    low, high = model.predict_interval(test, level=0.9)
    assert np.all((low <= predicted) & (high >= truth))
    assert "held at t = 2 beyond it" in model.describe()


def test_without_turns_the_wait_alone_misses_the_last_turns():
    # the same records read as if the host had the cores for every rank: the growth
    # with the turns is taken as the spread of q ranks, which falls short at 8
    train = _records((1, 2, 4)).assign(cache_sharers=lambda f: f["ranks"])
    model = _fim().fit(train, train["comp_time_iterations"])
    assert "cores" not in model.wait_
    test = _records((8,))
    predicted = model.predict_components(test)["computation"]
    shortfall = predicted / test["comp_time_iterations"].to_numpy() - 1
    assert np.all(shortfall < -0.1)


def test_ranks_within_the_cores_change_nothing():
    train = _records((1, 2, 4), cores=4)
    model = _fim().fit(train, train["comp_time_iterations"])
    assert "cores" not in model.wait_  # no point ran more ranks than cores
    test = _records((4,), cores=4)
    np.testing.assert_allclose(
        model.predict_components(test)["computation"],
        test["comp_time_iterations"],
        rtol=1e-6,
    )
