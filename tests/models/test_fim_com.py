"""FiM-Com: the tandem-queue simulation against closed forms (M/M/1, Jackson tandems,
a birth-death server, the delay server's maximum), and the estimator's calibration,
Dask replications and confidence intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scaleprobe.models import DegenerateFitWarning
from scaleprobe.models.fim import queues as _queue_sim
from scaleprobe.models.fim.com import FiMCom
from scaleprobe.models.fim.queues import (
    PATTERNS,
    ServiceLaws,
    fifo_departures,
    metadata_departures,
    metadata_departures_many,
    simulate,
    simulate_many,
)
from scipy import integrate, stats

FAST = 1e-15  # a service too short to matter


def _poisson(rate, count, rng):
    return np.cumsum(rng.exponential(1 / rate, count))


def test_fifo_server_is_mm1():
    rng = np.random.default_rng(3)
    lam, mu, n = 1.0, 1.25, 300_000
    arrivals = _poisson(lam, n, rng)
    sojourn = fifo_departures(arrivals, rng.exponential(1 / mu, n)) - arrivals
    assert sojourn[n // 10 :].mean() == pytest.approx(1 / (mu - lam), rel=0.05)


def test_two_fifo_servers_in_tandem_are_jackson():
    rng = np.random.default_rng(4)
    lam, mu1, mu2, n = 1.0, 2.0, 1.5, 300_000
    arrivals = _poisson(lam, n, rng)
    first = fifo_departures(arrivals, rng.exponential(1 / mu1, n))
    second = fifo_departures(first, rng.exponential(1 / mu2, n))
    expected = 1 / (mu1 - lam) + 1 / (mu2 - lam)
    assert (second - arrivals)[n // 10 :].mean() == pytest.approx(expected, rel=0.05)


def test_metadata_server_is_a_birth_death_process():
    rng = np.random.default_rng(5)
    lam, n = 1.0, 100_000
    arrivals = _poisson(lam, n, rng)
    ones = np.ones(n)
    constant = metadata_departures(
        arrivals, rng.exponential(1.0, n), ones, lambda chi: 1.25
    )
    assert (constant - arrivals)[n // 10 :].mean() == pytest.approx(4.0, rel=0.08)
    # Eq. 14's speed nu ln(1 + chi): the stationary law of the birth-death chain
    nu = 2.0
    weights = [1.0]
    for k in range(1, 200):
        weights.append(weights[-1] * lam / (nu * math.log1p(k)))
    weights = np.array(weights) / sum(weights)
    expected = (np.arange(len(weights)) * weights).sum() / lam  # Little's law
    served = metadata_departures(
        arrivals, rng.exponential(1.0, n), ones, lambda chi: nu * math.log1p(chi)
    )
    assert (served - arrivals)[n // 10 :].mean() == pytest.approx(expected, rel=0.05)


def _mean(pattern, jobs, processes, laws, runs=400, groups=1024, seed=0):
    rng = np.random.default_rng(seed)
    return np.mean(
        [simulate(pattern, jobs, processes, laws, rng, groups) for _ in range(runs)]
    )


@pytest.mark.parametrize("groups", [1024, 16])
def test_data_transfer_of_waiting_jobs_is_eq13(groups):
    low, high = 0.9e6, 1e6
    laws = ServiceLaws(low, high, 1e15, FAST, FAST)
    expected = 500 * math.log(high / low) / (high - low)  # 500 E[1/zeta]
    assert _mean("scatter", 500, 2, laws, 100, groups) == pytest.approx(
        expected, rel=0.01
    )


def test_activation_delays_of_a_broadcast_are_the_maximum_of_exponentials():
    laws = ServiceLaws(1e12, 1e12, 1e15, 1.0, FAST)
    for receivers in (1, 3, 8):
        harmonic = sum(1 / k for k in range(1, receivers + 1))
        assert _mean("broadcast", 1, receivers + 1, laws, 1500) == pytest.approx(
            harmonic, rel=0.05
        )


def _slowest(receivers, jobs, scale):
    """E[max of independent Gamma(jobs, scale) sums], by integrating 1 - prod F."""
    laws = [stats.gamma(n, scale=scale) for n in np.broadcast_to(jobs, receivers)]
    return integrate.quad(
        lambda t: 1 - np.prod([law.cdf(t) for law in laws]),
        0,
        max(law.ppf(1 - 1e-12) for law in laws),
        limit=200,
    )[0]


def test_receivers_by_pattern():
    psi, jobs = 1e-3, 240
    laws = ServiceLaws(1e12, 1e12, 1e15, FAST, psi)
    # scatter: round robin, each of 4 receivers takes 60 jobs one after another
    assert _mean("scatter", jobs, 5, laws, 300) == pytest.approx(
        _slowest(4, 60, psi), rel=0.02
    )
    # 250 jobs do not divide among 4: two receivers take 63, two take 62
    assert _mean("scatter", 250, 5, laws, 300) == pytest.approx(
        _slowest(4, [63, 63, 62, 62], psi), rel=0.02
    )
    # broadcast: every receiver takes all jobs, phi = 4 fetching at once
    assert _mean("broadcast", jobs, 5, laws, 300) == pytest.approx(
        _slowest(4, jobs, 4 * psi), rel=0.02
    )
    # tree broadcast: ceil(log2 q) rounds of one-receiver transfers of all jobs
    ranks, rounds = 5, 3
    assert _mean("tree_broadcast", jobs, ranks, laws, 300) == pytest.approx(
        rounds * jobs * psi, rel=0.02
    )
    # gather: the root's one FIFO queue takes everything
    assert _mean("gather", jobs, 5, laws, 300) == pytest.approx(jobs * psi, rel=0.02)
    assert simulate("gather", jobs, 1, laws, np.random.default_rng(0)) == 0.0
    with pytest.raises(ValueError, match="pattern must be one of"):
        simulate("reduce", 1, 2, laws, np.random.default_rng(0))


def test_a_tree_broadcast_takes_log2_rounds_of_the_whole_data():
    laws = ServiceLaws(1e6, 1e6, 1e15, FAST, FAST)  # D alone: 1 us per job
    rng = np.random.default_rng(0)
    for ranks, rounds in [(1, 0), (2, 1), (3, 2), (8, 3), (9, 4), (32, 5)]:
        assert simulate("tree_broadcast", 1000, ranks, laws, rng) == pytest.approx(
            rounds * 1e-3, rel=1e-6
        )


def test_a_ring_allgather_takes_q_minus_1_rounds_of_one_block():
    laws = ServiceLaws(1e6, 1e6, 1e15, FAST, FAST)  # D alone: 1 us per job
    rng = np.random.default_rng(0)
    # a rank receives (q - 1) blocks, one a round: the rounds add up to its data;
    # 100 ranks are 99 rounds, simulated as RING_ROUNDS and scaled
    for ranks, jobs in [(1, 1000), (2, 1000), (5, 1000), (100, 99000)]:
        expected = jobs * 1e-6 if ranks > 1 else 0.0
        assert simulate("ring_allgather", jobs, ranks, laws, rng) == pytest.approx(
            expected, rel=1e-6
        )
    # each round waits for the slowest of q initialisation delays: (q - 1) eta H_q
    eta, ranks = 1e-3, 5
    delays = ServiceLaws(1e12, 1e12, 1e15, eta, FAST)
    harmonic = sum(1 / k for k in range(1, ranks + 1))
    assert _mean("ring_allgather", 4, ranks, delays, 400) == pytest.approx(
        (ranks - 1) * eta * harmonic, rel=0.05
    )


def test_senders_side_by_side_are_each_the_one_sender_server():
    rng = np.random.default_rng(5)
    for nu in (1e3, 1e6):  # M the bottleneck, M fast
        sizes = rng.integers(1, 40, 300)
        arrivals = np.cumsum(rng.exponential(1e-4, (6, 300)), axis=1)
        arrivals[:, 10:14] = arrivals[:, 9:10]  # simultaneous arrivals
        work = rng.gamma(sizes, 1.0, (6, 300))
        together = metadata_departures_many(arrivals, work, sizes, nu)
        for row in range(6):
            alone = metadata_departures(
                arrivals[row], work[row], sizes, lambda chi, nu=nu: nu * math.log1p(chi)
            )
            np.testing.assert_allclose(together[row], alone, rtol=1e-12)


SETTINGS = [(1, 2), (5, 4), (250, 5), (3000, 9), (7, 40)]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.slow
def test_replications_side_by_side_have_the_one_at_a_time_distribution(pattern):
    laws = ServiceLaws(1e5, 3e5, 2e5, 5e-6, 2e-6)
    for jobs, ranks in SETTINGS:
        together = simulate_many(
            pattern, jobs, ranks, laws, np.random.default_rng(1), 200, 64
        )
        alone = [
            simulate(pattern, jobs, ranks, laws, np.random.default_rng(seed), 64)
            for seed in range(200)
        ]
        assert together.shape == (200,)
        assert stats.ks_2samp(together, alone).pvalue > 0.005, (jobs, ranks)
        assert together.mean() == pytest.approx(np.mean(alone), rel=0.05)


def test_replications_in_blocks_have_the_distribution_of_one_block(monkeypatch):
    laws = ServiceLaws(1e5, 3e5, 2e5, 5e-6, 2e-6)
    runs, whole = {}, _queue_sim._CELLS
    for cells in (whole, 64):  # one block, blocks of a few replications
        monkeypatch.setattr(_queue_sim, "_CELLS", cells)
        runs[cells] = {
            pattern: simulate_many(
                pattern, 300, 6, laws, np.random.default_rng(2), 300, 32
            )
            for pattern in ("scatter", "broadcast", "tree_broadcast")
        }
    for pattern, blocked in runs[64].items():
        assert stats.ks_2samp(blocked, runs[whole][pattern]).pvalue > 0.005
    blocks = _queue_sim._blocks(10, 30)  # 64 cells: 2 replications a block
    assert [(b.start, b.stop) for b in blocks] == [
        (0, 2),
        (2, 4),
        (4, 6),
        (6, 8),
        (8, 10),
    ]
    assert simulate_many("gather", 10, 4, laws, np.random.default_rng(0), 0).shape == (
        0,
    )
    with pytest.raises(ValueError, match="replications must be >= 0"):
        simulate_many("gather", 10, 4, laws, np.random.default_rng(0), -1)


def _measured(pattern, laws, grid):
    X = np.array(grid, dtype=float)
    y = np.array([_mean(pattern, j, p, laws, 200, seed=9) for j, p in grid])
    return X, y


@pytest.mark.parametrize("pattern", ["scatter", "gather"])
@pytest.mark.slow
def test_calibration_recovers_the_laws_and_extrapolates(pattern):
    per_job = 8 / 1.25e8
    laws = ServiceLaws(0.9 / per_job, 1 / per_job, 3 / per_job, 2e-5, 0.5 * per_job)
    X, y = _measured(pattern, laws, [(1, 2), (1, 4), (300, 2), (300, 4), (3000, 4)])
    model = FiMCom(pattern=pattern, replications=100).fit(X, y)
    assert model.eta_ == pytest.approx(2e-5, rel=0.25)
    far = np.array([[20000, 16], [1, 32]])
    truth = np.array(
        [_mean(pattern, j, p, laws, 2000 if j < 32 else 100, seed=1) for j, p in far]
    )
    predicted = model.predict(far)
    # a large collective is priced by its data points; a unit job at 32 processes is
    # mostly the initialisation delay, known as well as eta_ is
    assert predicted[0] == pytest.approx(truth[0], rel=0.15)
    assert predicted[1] == pytest.approx(truth[1], rel=0.25)


@pytest.mark.slow
def test_the_calibration_does_not_depend_on_the_random_numbers():
    # a ring whose receivers take 5x the link's time per data point: from the
    # old start alone, Nelder-Mead gave that time to M in some random streams and
    # stalled there (training loss 1e-3 against 1e-5), 25-38 % high at 32 ranks
    latency, per_point = 2e-5, 40 / 1.25e8
    grid = [(n * (q - 1) / q, q) for n in (2e4, 4e4, 8e4) for q in (2, 4)]
    X = np.array(grid)
    y = np.array([(q - 1) * (latency + j / (q - 1) * per_point) for j, q in grid])
    far = np.array([[8e4 * 31 / 32, 32]])
    truth = 31 * (latency + 8e4 / 32 * per_point)
    for seed in range(4):
        # a latency and the link alone, no rendezvous handshake beyond 64 KiB (the
        # blocks of 2e4 points over 2 ranks are 80 KB): every message eager
        model = FiMCom(
            pattern="ring_allgather",
            random_state=seed,
            replications=10,
            eager_limit=math.inf,
        )
        model.fit(X, y)
        assert model.psi_ == pytest.approx(per_point, rel=0.05)
        assert model.predict(far)[0] == pytest.approx(truth, rel=0.05)


def test_replications_run_on_dask_with_a_confidence_interval(client):
    X = np.array([[1, 2], [100, 2], [100, 4], [1000, 4]], dtype=float)
    y = 1e-5 + X[:, 0] * 6.4e-8
    model = FiMCom(pattern="broadcast", replications=160).fit(X, y)
    local = model.predict(X)  # the client is the default scheduler here
    mean, lower, upper = model.predict_with_interval(X, level=0.9)
    np.testing.assert_allclose(mean, local)
    assert np.all(lower < mean)
    assert np.all(mean < upper)
    # a sixteenth of the replications: about 4x wider (the t quantile too), and
    # narrower only if ten draws' spread fell under a quarter of the truth's
    wider = model.set_params(replications=10).predict_with_interval(X, level=0.9)
    assert np.all(wider[2] - wider[1] > upper - lower)
    with pytest.raises(ValueError, match="level must be in"):
        model.predict_interval(X, level=1.5)


def test_without_communication_nothing_is_calibrated():
    X = np.array([[10, 1], [20, 1]], dtype=float)
    with pytest.warns(DegenerateFitWarning, match="no training row moves data"):
        model = FiMCom().fit(X, [1e-6, 2e-6])
    np.testing.assert_array_equal(model.predict(X), [0.0, 0.0])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"pattern": "reduce"}, "pattern must be one of"),
        ({"job_bytes": 0}, "job_bytes must be positive"),
        ({"bandwidth_range": (0.5, 1.2)}, "bandwidth_range"),
        ({"replications": 0}, "replications must be a positive integer"),
    ],
)
def test_bad_parameters_are_refused(params, match):
    with pytest.raises(ValueError, match=match):
        FiMCom(**params).fit([[1, 2], [2, 2]], [1e-5, 2e-5])


@pytest.mark.parametrize(
    ("jobs", "limit", "expected"),
    [
        # 8192 jobs of 8 bytes: 64 KiB, eager: sent at 1e6 jobs/s, then one
        # activation of mean 1 ms
        (8192, 65536, 8192e-6 + 1e-3),
        # one job more: rendezvous, the handshake's two more activations
        (8193, 65536, 8193e-6 + 3e-3),
        # the same message under a 1 MiB limit: eager again
        (8193, 2**20, 8193e-6 + 1e-3),
    ],
)
def test_scatter_switches_from_eager_to_rendezvous_at_the_limit(jobs, limit, expected):
    laws = ServiceLaws(1e6, 1e6, 1e12, 1e-3, 1e-12, job_bytes=8.0, eager_limit=limit)
    rng = np.random.default_rng(0)
    times = simulate_many("scatter", jobs, 2, laws, rng, 20000, max_groups=8)
    # the mean of 20000 delays: 1e-3 / sqrt(20000) = 7e-6 s (eager), 1.2e-5 s (3
    # activations) standard error; 4e-5 s is more than three of them
    assert times.mean() == pytest.approx(expected, abs=4e-5)


def test_fimcom_prices_the_rendezvous_above_the_eager_limit():
    # calibrated on eager messages (at most 32 KB), then predicting one message
    # just below and one just above 64 KiB, with the switch and without it
    X = np.array([[1, 2], [1, 4], [1000, 2], [1000, 4], [4000, 4]])
    y = 1e-5 + X[:, 0] * 8 / 1.25e8
    model = FiMCom(replications=400).fit(X, y)
    rows = np.array([[8192, 2], [8193, 2]])
    switched = model.predict(rows)
    eager = model.set_params(eager_limit=math.inf).predict(rows)
    # one job more costs 8 bytes of the link eagerly, two activations more beyond
    assert eager[1] - eager[0] == pytest.approx(8 / 1.25e8, abs=0.2 * model.eta_)
    assert switched[0] == pytest.approx(eager[0], rel=1e-9)
    assert switched[1] - eager[1] == pytest.approx(2 * model.eta_, rel=0.25)
    with pytest.raises(ValueError, match="eager_limit must be positive"):
        FiMCom(eager_limit=0).fit(X, y)


def test_goodness_of_fit_accepts_times_drawn_from_the_laws_and_rejects_others():
    X = np.array([[1, 2], [1, 4], [1000, 2], [1000, 4], [4000, 4]])
    y = 1e-5 + X[:, 0] * 8 / 1.25e8
    model = FiMCom(replications=200).fit(X, y)
    laws = model._laws(model.eta_, model.psi_, model.metadata_rate_)
    rows = np.array([[jobs, 3] for jobs in range(500, 540)])
    rng = np.random.default_rng(99)  # not the model's streams
    drawn = np.array([simulate_many("scatter", j, q, laws, rng, 1)[0] for j, q in rows])
    right = model.goodness_of_fit(rows, drawn)
    assert right["rows"] == 40
    assert right["pvalue"] > 0.01
    # three times too slow: every place at the top
    wrong = model.goodness_of_fit(rows, 3 * drawn)
    assert wrong["statistic"] > 0.9
    assert wrong["pvalue"] < 1e-6
    # a mean of ten calls spreads less: one drawn call is too spread for it
    assert (
        model.goodness_of_fit(rows, drawn, calls=10)["statistic"] > right["statistic"]
    )
