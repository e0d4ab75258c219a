"""FiM as one regressor: FiM-Cal's computation plus one FiM-Com per collective, with
the calls and data points of a configuration never run regressed from the small ones."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    InsufficientDataWarning,
    MemoryRegimeWarning,
    describe_model,
)
from scaleprobe.models.fim.cache import LoadLaw
from scaleprobe.models.fim.markov import synchronized_time
from scaleprobe.models.fim.model import FiM, fim_measurements
from scaleprobe.models.fim.model import band as _band
from scaleprobe.models.fim.regressions import _calls, _count_basis, _fit_counts
from scaleprobe.models.io.serialization import _decode, _encode

F = 2e9
CYCLES_PER_POINT = 400.0
LATENCY, PER_POINT = 2e-5, 40 / 1.25e8


def _computed(n, q, cycles):
    """A record's computation: ``cycles`` of a size ``n`` shared by ``q`` processes."""
    return {
        "ranks": q,
        "points": n,
        "run": 0,
        "comp_time_iterations": cycles / F / q,
        "hw_total_cycles": cycles,
        "hw_utilisation": 0.9,
        "hw_frequency": F,
    }


def _kmeans_like(sizes, ranks, clusters=8, iterations=10):
    """Records of a K-means-like kernel with known computation and collectives."""
    rows = []
    for n in sizes:
        for q in ranks:
            others = q - 1
            scatter_jobs = n * others / q
            cycles = CYCLES_PER_POINT * n
            row = {
                **_computed(n, q, cycles),
                "scatter_calls": 1,
                "scatter_jobs": scatter_jobs,
                "scatter_time": (LATENCY + scatter_jobs * PER_POINT) * (q > 1),
                "scatter_job_bytes": 40,
                "bcast_calls": iterations,
                "bcast_jobs": iterations * clusters * (q > 1),
                "bcast_time": iterations * LATENCY * np.ceil(np.log2(q)),
                "bcast_job_bytes": 40,
            }
            rows.append(row)
    frame = pd.DataFrame(rows)
    parts = ["comp_time_iterations", "scatter_time", "bcast_time"]
    return frame, frame[parts].sum(axis=1).to_numpy()


def test_measurement_columns_are_named_apart_from_features():
    X, _ = _kmeans_like([1e4], [1, 2])
    found = fim_measurements(X.columns)
    assert "points" not in found
    assert "ranks" not in found
    assert {"scatter_jobs", "bcast_job_bytes", "hw_frequency"} <= set(found)


def test_extrapolates_computation_and_collective_counts():
    X, y = _kmeans_like([1e4, 2e4, 4e4], [1, 2, 4])
    model = FiM(replications=10).fit(X, y)
    assert model.mode_ == "fim"
    assert model.parameters_ == ["points"]
    assert sorted(model.communication_) == ["bcast", "scatter"]
    big = pd.DataFrame({"ranks": [16, 32], "points": [1e6, 1e6]})
    parts = model.predict_parts(big)
    np.testing.assert_allclose(
        parts["computation"], CYCLES_PER_POINT * 1e6 / F / big["ranks"], rtol=0.01
    )
    # calls and data points regressed exactly: N (q - 1)/q points in one scatter,
    # 10 broadcasts of 8 centroids
    x, q = np.array([[1e6], [1e6]]), np.array([16.0, 32.0])
    for kind, calls, jobs in [("scatter", 1, 1e6 * (q - 1) / q), ("bcast", 10, 8)]:
        calls_coef, jobs_coef = model.counts_[kind]
        np.testing.assert_allclose(
            _calls(calls_coef, x, q, np.ones(2)), calls, rtol=1e-6
        )
        np.testing.assert_allclose(
            _count_basis(x, q, True) @ jobs_coef, jobs, rtol=1e-6
        )
    expected = LATENCY + 1e6 * np.array([15 / 16, 31 / 32]) * PER_POINT
    np.testing.assert_allclose(parts["scatter"], expected, rtol=0.2)
    total = model.predict(big)
    np.testing.assert_allclose(total, sum(parts.values()))


def test_the_interval_spans_the_process_laws_the_runs_cannot_reject():
    # every added process repeats 1e5 + 20 cycles per point: the loss with the
    # logarithm of the processes misses 4 ranks by less than noise would, and
    # parts from it further out
    X, _ = _kmeans_like([1e4, 2e4, 4e4], [1, 2, 4])
    q = X["ranks"].to_numpy(float)
    cycles = CYCLES_PER_POINT * X["points"] + (q - 1) * (1e5 + 20.0 * X["points"])
    X["hw_total_cycles"] = cycles
    X["comp_time_iterations"] = cycles / F / q
    y = X[["comp_time_iterations", "scatter_time", "bcast_time"]].sum(axis=1)
    model = FiM(replications=10).fit(X, y.to_numpy())
    cal = model.computation_
    assert cal.process_law_ == "replicated"
    assert cal.plausible_laws_ == ("replicated", "contention")
    big = pd.DataFrame({"ranks": [4, 64, 1024], "points": [4e4, 1e6, 1e6]})
    low, high = model.predict_interval(big)
    predicted = model.predict(big)
    # widened by the 90 % quantile of the training's log ratios to the fit (here
    # FiM-Com's simulated collectives against the records' formulas: a few %)
    band = _band(model.residuals_, 0.9, model.residual_weights_)
    assert 0 < band < 0.1
    np.testing.assert_allclose(model.residual_weights_, y)
    low, high = low * np.exp(band), high * np.exp(-band)
    assert np.all((low <= predicted) & (predicted <= high))
    parts = model.predict_parts(big)
    rows = big[["points", "ranks"]].to_numpy()
    replicated = cal.predict(rows)
    contention = cal.law_model("contention").predict(rows)
    np.testing.assert_allclose(parts["computation"], replicated)
    # at 1024 ranks the repeated part is what a rank computes: the logarithm's loss
    # leaves a rank 1/1024 of the work and more than halves its computation
    assert contention[2] < 0.5 * replicated[2]
    # the rest of the range: FiM-Com's replications about the collectives' mean
    communication = predicted - replicated
    below, above = low - np.minimum(contention, replicated), high - replicated
    assert np.all((below <= communication) & (communication <= above))
    assert np.all(above - below < 0.05 * communication)
    # a law given has no other: the range is FiM-Com's replications' alone
    fixed = FiM(replications=10, process_law="replicated").fit(X, y.to_numpy())
    low, high = fixed.predict_interval(big)
    band = _band(fixed.residuals_, 0.9, fixed.residual_weights_)
    low, high = low * np.exp(band), high * np.exp(-band)
    assert np.all(low <= fixed.predict(big))
    assert np.all(fixed.predict(big) <= high)
    assert np.all(high - low < 0.05 * fixed.predict(big))
    with pytest.raises(ValueError, match="level"):
        fixed.predict_interval(big, level=1.5)


def test_the_band_is_the_weighted_spread_of_the_residuals():
    residuals = np.log([1.1, 0.8, 1.02, 1.3, 0.95])
    rms = np.sqrt(np.mean(residuals**2))
    # two-sided 90 %: 1.645 standard deviations
    assert _band(residuals, 0.9) == pytest.approx(1.6449 * rms, rel=1e-4)
    assert _band(residuals, 0.5) == pytest.approx(0.6745 * rms, rel=1e-4)
    # weighted by the time measured: a long run's small ratio counts for more
    weights = np.array([1.0, 1.0, 98.0, 1.0, 1.0])
    expected = np.sqrt(np.sum(weights * residuals**2) / 102.0) * 1.6449
    assert _band(residuals, 0.9, weights) == pytest.approx(expected, rel=1e-4)
    assert _band(residuals, 0.9, weights) < 0.3 * _band(residuals, 0.9)
    assert _band(np.array([]), 0.9) == 0.0
    assert _band(None, 0.9) == 0.0


def test_a_scale_is_the_size_it_stands_for():
    # A sweep over scale = log2(points) is the same sweep: Eq. 11 and the count
    # forms are linear in the size, so 64x the points is 64x the work.
    X, y = _kmeans_like([2**13, 2**14, 2**15], [1, 2, 4])
    logged = X.assign(scale=np.log2(X["points"])).drop(columns="points")
    by_points = FiM(replications=10).fit(X, y)
    by_scale = FiM(replications=10).fit(logged, y)
    assert by_scale.parameters_ == ["scale"]
    big = pd.DataFrame({"ranks": [1, 8, 32], "points": [2.0**21] * 3})
    np.testing.assert_allclose(
        by_scale.predict(big.assign(scale=21.0).drop(columns="points")),
        by_points.predict(big),
        rtol=1e-9,
    )
    np.testing.assert_allclose(
        by_scale.predict_parts(pd.DataFrame({"ranks": [32], "scale": [21.0]}))[
            "computation"
        ],
        CYCLES_PER_POINT * 2.0**21 / F / 32,
        rtol=0.01,
    )


def test_without_kernel_measurements_it_is_fim_cal_on_the_time():
    X = np.array([[1e6, 1], [1e6, 2], [2e6, 1], [2e6, 4]])
    y = X[:, 0] * 1e-7 / X[:, 1]
    model = FiM(frequency=1e9).fit(X, y)
    assert model.mode_ == "time"
    np.testing.assert_allclose(model.predict([[4e6, 8]]), [4e6 * 1e-7 / 8], rtol=1e-3)


def test_named_frames_are_required_once_fitted_on_one():
    X, y = _kmeans_like([1e4, 2e4], [1, 2])
    model = FiM(replications=4).fit(X, y)
    with pytest.raises(ValueError, match="predict takes one too"):
        model.predict(np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"needs the column\(s\) \['points'\]"):
        model.predict(pd.DataFrame({"ranks": [2]}))
    with pytest.raises(ValueError, match="process-count column 'nodes'"):
        FiM(over="nodes").fit(X, y)


def _pagerank_like(ranks, sizes=(2e4, 4e4, 8e4), iterations=5):
    """A vector of N points broadcast every iteration down a binomial tree."""
    rows = []
    for n in sizes:
        for q in ranks:
            rounds = np.ceil(np.log2(q))
            rows.append(
                {
                    **_computed(n, q, CYCLES_PER_POINT * n),
                    "bcast_calls": iterations,
                    "bcast_jobs": iterations * n * (q > 1),
                    "bcast_time": iterations * rounds * (LATENCY + n * PER_POINT),
                    "bcast_job_bytes": 40,
                }
            )
    frame = pd.DataFrame(rows)
    return frame, (frame["comp_time_iterations"] + frame["bcast_time"]).to_numpy()


def _cg_like(ranks, sizes=(2e4, 4e4, 8e4), iterations=5):
    """A vector of N points allgathered every iteration around a ring."""
    rows = []
    for n in sizes:
        cycles = iterations * CYCLES_PER_POINT * n / 5  # an iteration's work is fixed
        for q in ranks:
            rows.append(
                {
                    **_computed(n, q, cycles),
                    "allgatherv_calls": iterations,
                    "allgatherv_jobs": iterations * n * (q - 1) / q,
                    "allgatherv_time": iterations
                    * (q - 1)
                    * (LATENCY + n / q * PER_POINT),
                    "allgatherv_job_bytes": 8,
                    "stages": iterations,
                }
            )
    frame = pd.DataFrame(rows)
    return frame, (frame["comp_time_iterations"] + frame["allgatherv_time"]).to_numpy()


@pytest.mark.parametrize(
    ("like", "kind", "option", "algorithm", "paper"),
    [
        (_pagerank_like, "bcast", "broadcast", "tree_broadcast", "broadcast"),
        (_cg_like, "allgatherv", "allgather", "ring_allgather", "allgather"),
    ],
)
@pytest.mark.slow
def test_a_collective_follows_the_mpi_algorithm_by_default(
    like, kind, option, algorithm, paper
):
    X, y = like([1, 2, 4])
    far, truth = like([16, 32], sizes=(8e4,))
    mpi = FiM(replications=10).fit(X, y)
    queue = FiM(**{option: "queue"}, replications=10).fit(X, y)
    assert mpi.communication_[kind].pattern == algorithm
    assert queue.communication_[kind].pattern == paper
    # a binomial tree's log2 q rounds of the vector, a ring's (q - 1)/q of it to each
    # rank extrapolate; the paper's queue, linear in the receivers, does not
    np.testing.assert_allclose(mpi.predict(far), truth, rtol=0.15)
    assert np.all(queue.predict(far) > 1.5 * truth)
    with pytest.raises(ValueError, match=f"{option} must be one of"):
        FiM(**{option: "bruck"}).fit(X, y)


@pytest.mark.slow
def test_iterations_multiply_the_computation_and_the_calls():
    # trained on 5 iterations, asked for 25 (NPB CG: 15 in classes S-A, 75 in B)
    X, y = _cg_like([1, 2, 4])
    far, truth = _cg_like([1, 8, 32], sizes=(8e4,), iterations=25)
    model = FiM(replications=10).fit(X, y)
    assert model.iterations_ == "stages"
    np.testing.assert_allclose(model.predict(far), truth, rtol=0.15)
    # without it, what changed nothing in training is not extrapolated
    blind = FiM(iterations=None, replications=10).fit(X, y)
    assert blind.iterations_ is None
    assert np.all(blind.predict(far) < 0.3 * truth)
    # a frame without the column is predicted at the one count every point timed
    without = far.drop(columns="stages")
    np.testing.assert_allclose(
        model.predict(without), model.predict(far.assign(stages=5)), rtol=1e-12
    )
    mixed = pd.concat([X, _cg_like([1, 2, 4], iterations=7)[0]], ignore_index=True)
    varied = FiM(replications=4).fit(mixed, np.ones(len(mixed)))
    with pytest.raises(ValueError, match="needs the column 'stages'"):
        varied.predict(without)
    with pytest.raises(ValueError, match="must be positive"):
        FiM().fit(X.assign(stages=0), y)


def test_a_collective_called_once_a_run_is_not_repeated_by_the_iterations():
    # K-means scatters its points once, then broadcasts the centroids every
    # iteration: trained on 5 and 10 iterations, asked for 40
    frames = [
        _kmeans_like([1e4, 2e4, 4e4], [1, 2, 4], iterations=n)[0].assign(stages=n)
        for n in (5, 10)
    ]
    X = pd.concat(frames, ignore_index=True)
    y = X[["comp_time_iterations", "scatter_time", "bcast_time"]].sum(axis=1)
    model = FiM(replications=10).fit(X, y)
    far = pd.DataFrame({"ranks": [16.0], "points": [1e6], "stages": [40.0]})
    x, q, per = np.array([[1e6]]), np.array([16.0]), np.array([40.0])
    scatter, bcast = (model.counts_[kind][0] for kind in ("scatter", "bcast"))
    np.testing.assert_allclose(_calls(scatter, x, q, per), [1.0], rtol=1e-6)
    np.testing.assert_allclose(_calls(bcast, x, q, per), [40.0], rtol=1e-6)
    expected = LATENCY + 1e6 * (15 / 16) * PER_POINT  # one scatter, as measured
    np.testing.assert_allclose(model.predict_parts(far)["scatter"], expected, rtol=0.2)
    # a model file of before keeps its calls per iteration
    once = _count_basis(x, q, False)
    old = np.linalg.lstsq(_count_basis(x, q, False), [0.25], rcond=None)[0]
    assert once.shape[1] == len(old)
    np.testing.assert_allclose(_calls(old, x, q, per), [10.0], rtol=1e-6)


def _with_memory(frame, cache):
    """A rank's share of the points (5 doubles each) and a fixed 1 kB, and a cache."""
    share = frame["points"] * 40 / frame["ranks"]
    return frame.assign(working_set=share + 1000.0, llc_bytes=cache)


@pytest.mark.slow
def test_a_working_set_across_the_cache_from_training_warns():
    X, y = _cg_like([1, 2, 4])  # 0.2 to 3.2 MB a rank
    far, _ = _cg_like([1, 32], sizes=(1e6,))  # 40 MB on 1 rank, 1.25 MB on 32
    inside = FiM(replications=4).fit(_with_memory(X, 4 * 2**20), y)
    np.testing.assert_allclose(inside.memory_["coef"], [1000.0, 0.0, 40.0])
    with pytest.warns(MemoryRegimeWarning, match=r"38.1 MiB on 1 processes, beyond"):
        inside.predict(far)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        inside.predict(far[far["ranks"] == 32])  # back within the cache
    # trained from memory, projected into the cache: it may speed up
    outside = FiM(replications=4).fit(_with_memory(X, 2**16), y)
    with pytest.warns(MemoryRegimeWarning, match="within .* superlinear"):
        outside.predict(_cg_like([256], sizes=(1e5,))[0])
    # ... and projected further from the cache: 38.1 MiB is 12x the largest
    with pytest.warns(MemoryRegimeWarning, match=r"38.1 MiB on 1 processes, more"):
        outside.predict(far)
    # training on both sides of the cache: only a load more than twice the largest
    # of the training (3.05 MiB) may cost more per unit of work than Eq. 11 saw
    both = FiM(replications=4).fit(_with_memory(X, 2**20), y)
    expected = r"38.1 MiB on 1 processes, more than 2x .* had \(3.05 MiB\)"
    with pytest.warns(MemoryRegimeWarning, match=expected) as caught:
        both.predict(far)
    assert len(caught) == 1  # the row of 32 ranks (1.19 MiB) is not named
    near, _ = _cg_like([1], sizes=(1.5e5,))  # 5.72 MiB: 1.9x the largest
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both.predict(near)
        both.predict(far[far["ranks"] == 32])
    # trained in the cache and projected fuller than twice the fullest training
    # point, still within it: the cycles per unit of work may rise
    roomy = FiM(replications=4).fit(_with_memory(X, 64 * 2**20), y)
    expected = r"38.1 MiB on 1 processes, more than 2x the fullest .* \(3.05 MiB\)"
    with pytest.warns(MemoryRegimeWarning, match=expected) as caught:
        roomy.predict(far)
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        roomy.predict(near)  # 1.9x the fullest: nothing to say
    # no cache known: nothing to say
    unknown = FiM(replications=4).fit(_with_memory(X, np.nan), y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unknown.predict(far)
    assert FiM(replications=4).fit(X, y).memory_ is None


@pytest.mark.slow
def test_ranks_computing_at_once_share_the_cache():
    # 2 core slots on the host: up to 2 ranks' working sets are in its cache at once
    X, y = _cg_like([1, 2, 4])
    far, _ = _cg_like([1, 2, 4, 8, 32], sizes=(1e6,))  # 38.1 MiB a rank on 1
    shared = _with_memory(X, 16 * 2**20).assign(cache_sharers=np.minimum(X["ranks"], 2))
    model = FiM(replications=4).fit(shared, y)
    assert model.memory_["sharers"] == 2
    message = (
        r"computing at once on one cache \(up to 2\) are projected at 38.1 MiB on 1, "
        r"38.1 MiB on 2, 19.1 MiB on 4 processes, beyond"
    )
    with pytest.warns(MemoryRegimeWarning) as caught:
        model.predict(far)
    texts = [str(w.message) for w in caught]
    assert len(texts) == 2, texts  # and 8 ranks filling the cache (below)
    assert re.search(message, texts[1]), texts
    # 9.5 and 2.4 MiB: in the cache; the first more than twice the fullest
    # training point (3.05 MiB), which is all FiM says of them
    fuller = r"9.54 MiB on 8 processes, more than 2x the fullest"
    with pytest.warns(MemoryRegimeWarning, match=fuller) as caught:
        model.predict(far[far["ranks"] >= 8])
    assert len(caught) == 1
    # a rank's own working set alone leaves 4 ranks in the cache; so does a sharer
    # count the records could not give (NaN)
    unknown = _with_memory(X, 16 * 2**20).assign(cache_sharers=np.nan)
    alone = FiM(replications=4).fit(unknown, y)
    assert alone.memory_["sharers"] == 1
    with pytest.warns(MemoryRegimeWarning) as caught:
        alone.predict(far)
    texts = [str(w.message) for w in caught]
    assert "on 1, 19.1 MiB on 2 processes, beyond" in texts[-1], texts
    assert "9.54 MiB on 4 processes, more than 2x the fullest" in texts[0], texts


@pytest.mark.parametrize(
    "form",
    [
        lambda n, q: n * (q > 1),  # a broadcast of the whole vector
        lambda n, q: n * (q - 1) / q,  # a scatter
        lambda n, q: 8 * (q - 1),  # a gather of 8 partial sums per rank
        lambda n, q: n * (q - 1) / q**2,  # an all-to-all
    ],
)
def test_data_points_per_call_extrapolate_in_their_own_form(form):
    # three sizes on 1, 2, 4 processes cannot tell every form apart: the fewest
    # terms that reproduce them are taken, and hold at 32 processes
    n, q = np.meshgrid([1e4, 2e4, 4e4], [1.0, 2.0, 4.0])
    x, q = n.reshape(-1, 1), q.ravel()
    coef = _fit_counts(_count_basis(x, q, True), form(x[:, 0], q))
    far_x, far_q = np.array([[1e6], [1e6]]), np.array([16.0, 32.0])
    np.testing.assert_allclose(
        _count_basis(far_x, far_q, True) @ coef, form(far_x[:, 0], far_q), rtol=1e-6
    )
    assert np.count_nonzero(coef) == 1


def _one_count_of_several(ranks, clusters=8):
    """K-means-like records with a gather of ``clusters`` partial sums per rank and a
    second application parameter, so that a form's term is a column per parameter."""
    X, y = _kmeans_like([1e4, 2e4, 4e4], ranks, clusters=clusters)
    q = X["ranks"].to_numpy(float)
    X = X.assign(
        dimensions=np.tile([5.0, 5.0, 3.0], len(X) // 3 + 1)[: len(X)],
        gather_calls=10,
        gather_jobs=10 * clusters * (q - 1),
        gather_time=10 * (LATENCY + clusters * (q - 1) * PER_POINT) * (q > 1),
        gather_job_bytes=40,
    )
    return X, y + X["gather_time"].to_numpy()


def test_counts_of_one_multi_process_count_take_the_collectives_own_form():
    # On 1 and 2 processes a scatter's N/2 points are 0.5 N [q > 1], N (q - 1)/q and
    # 2 N (q - 1)/q**2 alike, a gather's 8 partial sums 8 [q > 1], 8 (q - 1) and
    # 4 q (q - 1): the data cannot tell them apart, the collective can. FiM takes
    # the form of the data each kind moves, and says the data could not tell.
    X, y = _one_count_of_several([1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = FiM(features=["points", "dimensions"], replications=4).fit(X, y)
    x, q = np.array([[1e6, 5.0], [1e6, 5.0]]), np.array([4.0, 32.0])
    truth = {
        "scatter": 1e6 * (q - 1) / q,
        "bcast": np.full(2, 8.0),
        "gather": 8 * (q - 1),
    }
    for kind, jobs in truth.items():
        assert len(model.count_forms_[kind]) == 3
        np.testing.assert_allclose(
            _count_basis(x, q, True) @ model.counts_[kind][1], jobs, rtol=1e-6
        )
    far = pd.DataFrame({"ranks": [4, 32], "points": [1e6] * 2, "dimensions": [5.0] * 2})
    with pytest.warns(InsufficientDataWarning) as caught:
        model.predict_parts(far)
    told = " ".join(str(w.message) for w in caught)
    assert "scatter: the data points per call measured on 1, 2 processes" in told
    assert "FiM takes 1 points (q - 1)/q, the form of a scatter's data" in told
    assert "FiM takes 8 (q - 1), the form of a gather's data" in told
    # where the forms agree (one and two processes), nothing to tell
    near = far.assign(ranks=[1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsufficientDataWarning)
        model.predict_parts(near)
    # a scale enters as the size it stands for, and its forms are named so
    logged = X.assign(scale=np.log2(X["points"])).drop(columns="points")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_scale = FiM(features=["scale"], replications=4).fit(logged, y)
    with pytest.warns(InsufficientDataWarning) as caught:
        by_scale.predict_parts(pd.DataFrame({"ranks": [4], "scale": [20.0]}))
    told = " ".join(str(w.message) for w in caught)
    assert "FiM takes 1 2**scale (q - 1)/q, the form of a scatter's data" in told


def test_counts_of_several_multi_process_counts_have_one_form():
    X, y = _one_count_of_several([1, 2, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = FiM(features=["points", "dimensions"], replications=4).fit(X, y)
    assert all(len(forms) == 1 for forms in model.count_forms_.values())
    far = pd.DataFrame({"ranks": [32], "points": [1e6], "dimensions": [5.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsufficientDataWarning)
        parts = model.predict_parts(far)
    assert parts["gather"][0] > 0


MIB = 2.0**20


def _sort_like(sizes, ranks, cache=32 * MIB, plateau=192 * MIB):
    """Records of an IS-like kernel: 24 bytes a key and rank, two ranks computing
    at once on a cache; a key costs 40 cycles up to a load of 16 MiB, 150 from
    ``plateau``, and in between log-linearly in the load."""
    rows = []
    for n in sizes:
        for q in ranks:
            load = 24.0 * n / q * min(q, 2)
            span = np.log(plateau / (16 * MIB))
            share = np.clip(np.log(load / (16 * MIB)) / span, 0.0, 1.0)
            cycles = n * 40.0 * (150.0 / 40.0) ** share
            rows.append(
                {
                    **_computed(n, q, cycles),
                    "working_set": 24.0 * n / q,
                    "llc_bytes": cache,
                    "cache_sharers": min(q, 2),
                }
            )
    frame = pd.DataFrame(rows)
    return frame, frame["comp_time_iterations"].to_numpy()


def _hit_law_beyond(frame):
    """:func:`_sort_like`'s records with a key's cost beyond 192 MiB as FiM's load
    law continues it from the two training loads out of the cache, 96 and 192 MiB,
    where a key costs 40 * 3.75**(log 6 / log 12) and 150 cycles: a miss of the
    32 MiB cache costs 6 times their difference more than a hit, and the keys'
    share of hits, 1/6 at 192 MiB, falls as 32 MiB over the load."""
    load = frame["working_set"] * frame["cache_sharers"]
    measured = 40.0 * 3.75 ** (np.log(6.0) / np.log(12.0))
    miss = 6.0 * (150.0 - measured)
    cost = 150.0 + miss * (1.0 / 6.0 - 32 * MIB / load)
    cycles = frame["hw_total_cycles"] * np.where(load > 192 * MIB, cost / 150.0, 1.0)
    return frame.assign(
        hw_total_cycles=cycles, comp_time_iterations=cycles / F / frame["ranks"]
    )


def test_a_cost_per_unit_that_follows_the_cache_load_is_read_from_it():
    # trained at loads of 0.75 MiB to 192 MiB (both sides of the cache), class-B
    # sized keys on 1 to 32 ranks: 768 MiB down to 48 MiB, back towards the cache
    X, y = _sort_like([2**16, 2**20, 2**23], [1, 2, 4])
    large, truth = _sort_like([2**25], [1, 2, 4, 8, 16, 32])
    model = FiM().fit(X, y)
    with pytest.warns(MemoryRegimeWarning, match="768 MiB on 1, 768 MiB on 2 proc"):
        predicted = model.predict(large)
    assert model.load_law_ is not None
    # the held-out 4 ranks: class A's keys at 96 MiB are read between the loads of
    # 1 and 2 ranks; W's at 12 MiB fall between two knots across the kink at 16
    assert model.cache_errors_["load"] < 0.2 * model.cache_errors_["none"]
    # 192 MiB is measured, 96 and 48 MiB lie between measured loads; beyond 192 MiB
    # (768 MiB on 1 and 2 ranks, 384 on 4) the hit law goes on from the loads out of
    # the cache: the keys' share of hits falls from 1/6 to 1/24 and 1/12
    expected = _hit_law_beyond(large)["comp_time_iterations"].to_numpy()
    np.testing.assert_allclose(predicted[3:], truth[3:], rtol=1e-6)
    np.testing.assert_allclose(predicted, expected, rtol=1e-6)
    # (the law carries on the rise it measured; this synthetic's plateau is flat)
    assert np.all(predicted[:3] > 1.05 * truth[:3])
    assert describe_model(model) == (
        "computation: the work times its cycles per unit at the cache's load "
        "(0.75-192 MiB measured; beyond, a cache of 32 MiB hit by a share cache/load "
        "of accesses)"
    )
    # without counters the cycles come from CPU time x clock: the same law
    counted = ["hw_total_cycles", "hw_utilisation"]
    uncounted = FiM().fit(X.drop(columns=counted), y)
    with pytest.warns(MemoryRegimeWarning, match="768 MiB on 1"):
        np.testing.assert_allclose(uncounted.predict(large), expected, rtol=1e-6)
    restored = _decode(json.loads(json.dumps(_encode(model))))  # a model file's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryRegimeWarning)
        np.testing.assert_allclose(restored.predict(large), predicted, rtol=1e-12)
    # a plateau from 128 MiB: 96 MiB costs more than the loads of 1 and 2 ranks
    # say, the held-out count is predicted worse, and FiM-Cal stays
    steep, y_steep = _sort_like([2**16, 2**20, 2**23], [1, 2, 4], plateau=128 * MIB)
    kept = FiM().fit(steep, y_steep)
    assert kept.load_law_ is None
    assert kept.cache_errors_["load"] > kept.cache_errors_["none"]
    # class A's keys 2.5x cheaper on 4 ranks than either law says: it cannot tell
    odd = X.assign(
        hw_total_cycles=X["hw_total_cycles"] / np.where(X.ranks == 4, 2.5, 1)
    )
    odd["comp_time_iterations"] = odd["hw_total_cycles"] / F / odd["ranks"]
    with pytest.warns(InsufficientDataWarning, match="neither FiM-Cal's laws") as got:
        FiM().fit(odd, odd["comp_time_iterations"].to_numpy())
    assert "beyond 4 processes cannot be told" in str(got[0].message)
    # FiM-Cal alone charges the cost of the largest training size's loads to the
    # size on every count: far over where the ranks' keys come back to the cache
    alone = model.computation_.predict(large[["points", "ranks"]].to_numpy())
    assert np.max(alone / truth) > 1.5
    # trained inside the cache only, the load cannot be read: FiM-Cal, and a warning
    inside, y_inside = _sort_like([2**12, 2**13, 2**14], [1, 2, 4])
    cached = FiM().fit(inside, y_inside)
    with pytest.warns(MemoryRegimeWarning, match="beyond the host's 32 MiB"):
        cached.predict(large)
    assert cached.load_law_ is None
    assert cached.cache_errors_ == {}


def _hit_like(sizes, ranks, cache=32 * MIB):
    """Records of an IS-like kernel whose keys are found in a ``cache`` by a share
    cache/load of random accesses once the load exceeds it: a hit costs 40 cycles,
    a miss 200 (24 bytes a key and rank, two ranks computing at once)."""
    frame, _ = _sort_like(sizes, ranks, cache=cache)
    load = frame["working_set"] * frame["cache_sharers"]
    cost = 40.0 + 160.0 * np.clip(1.0 - cache / load, 0.0, None)
    cycles = frame["points"] * cost
    frame = frame.assign(
        hw_total_cycles=cycles, comp_time_iterations=cycles / F / frame["ranks"]
    )
    return frame, frame["comp_time_iterations"].to_numpy()


def test_the_hit_law_reads_the_cost_of_a_miss_and_bounds_the_loads_beyond():
    # trained out of the cache at 48, 96 and 192 MiB (shares of hits 2/3, 1/3 and
    # 1/6), a size four times the largest lands at 384 and 768 MiB (1/12, 1/24): the
    # law reads what a miss costs over a hit from those loads and carries it there
    # (16 ranks put the largest size's keys back in the cache, at 24 MiB: the
    # held-out count that the load law predicts and FiM-Cal cannot)
    X, y = _hit_like([2**16, 2**20, 2**23], [1, 2, 4, 8, 16])
    large, truth = _hit_like([2**25], [1, 2, 4, 8, 16, 32])
    model = FiM().fit(X, y)
    assert model.cache_errors_["load"] < 1e-6 < 0.5 < model.cache_errors_["none"]
    law = LoadLaw(**model.load_law_)
    at_largest = law.cost(np.array([192 * MIB]))[0]
    assert law.miss / at_largest == pytest.approx(160.0 / (40.0 + 160.0 * 5 / 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryRegimeWarning)
        predicted = model.predict(large)
        low, high = model.predict_interval(large)
    # 768, 768, 384 MiB carried by the law, 192, 96 and 48 MiB measured
    np.testing.assert_allclose(predicted, truth, rtol=1e-6)
    # beyond 192 MiB the range runs from the cost held flat there (hits and all)
    # to every key a miss; at the loads measured it is the point itself
    flat = 40.0 + 160.0 * 5 / 6
    cost = 40.0 + 160.0 * np.array([23 / 24, 23 / 24, 11 / 12])
    np.testing.assert_allclose(low[:3], truth[:3] * flat / cost, rtol=1e-6)
    np.testing.assert_allclose(high[:3], truth[:3] * 200.0 / cost, rtol=1e-6)
    np.testing.assert_allclose(low[3:], predicted[3:], rtol=1e-6)
    np.testing.assert_allclose(high[3:], predicted[3:], rtol=1e-6)
    # a model file keeps the law; one written before it (no miss) holds flat
    restored = _decode(json.loads(json.dumps(_encode(model))))
    older = {k: v for k, v in model.load_law_.items() if k not in ("miss", "cache")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryRegimeWarning)
        np.testing.assert_allclose(restored.predict(large), predicted, rtol=1e-12)
        restored.load_law_ = older
        np.testing.assert_allclose(restored.predict(large)[:3], low[:3], rtol=1e-6)
    # the cost must not fall with the load, and a miss needs a cache to miss
    with pytest.raises(ValueError, match="miss must be non-negative"):
        LoadLaw(law.work, law.knots, law.costs, miss=-1.0, cache=32 * MIB)
    with pytest.raises(ValueError, match="with a positive cache"):
        LoadLaw(law.work, law.knots, law.costs, miss=1.0)


def _waiting(frame):
    """``frame``'s computation as the synchronized chain times it: each of q
    processes runs TC / q cycles and a stage waits for the slowest."""
    cycles, q = frame["hw_total_cycles"].to_numpy(), frame["ranks"].to_numpy()
    seconds = [
        synchronized_time(1.0 - t / c, c, 0.0, F, int(t))
        for c, t in zip(cycles, q, strict=True)
    ]
    return frame.assign(comp_time_iterations=seconds), np.array(seconds)


def test_the_load_law_times_its_cycles_with_fims_markov_variant():
    # IS-like cycles per key that follow the cache's load, timed by the synchronized
    # chain: FiM(variant="synchronized") reads them back on 1-32 ranks, and a model
    # file keeps the variant; the published chain has no waiting, which grows with
    # the processes, and says that it cannot tell
    X, _ = _waiting(_sort_like([2**16, 2**20, 2**23], [1, 2, 4])[0])
    large, truth = _waiting(
        _hit_law_beyond(_sort_like([2**25], [1, 2, 4, 8, 16, 32])[0])
    )
    waiting = FiM(variant="synchronized").fit(X, X["comp_time_iterations"])
    assert waiting.load_law_["variant"] == "synchronized"
    assert waiting.cache_errors_["load"] < 0.2 * waiting.cache_errors_["none"]
    restored = _decode(json.loads(json.dumps(_encode(waiting))))
    with pytest.warns(InsufficientDataWarning, match="neither FiM-Cal's laws"):
        published = FiM().fit(X, X["comp_time_iterations"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryRegimeWarning)
        np.testing.assert_allclose(waiting.predict(large), truth, rtol=1e-6)
        np.testing.assert_allclose(restored.predict(large), truth, rtol=1e-6)
        off = published.predict(large) / truth
    assert np.max(np.abs(np.log(off))) > np.log(1.5)
    law = waiting.load_law_
    with pytest.raises(ValueError, match="variant must be one of"):
        LoadLaw(law["work"], law["knots"], law["costs"], variant="barrier")


def test_the_synchronized_chain_fits_a_law_that_puts_a_size_below_zero():
    # Eq. 11 as published, through cycles per key that rise from 40 to 150 with the
    # size, has a negative intercept: the smallest size's cycles are negative, and
    # alpha's search must floor each process's share of a stage at one cycle
    X, _ = _waiting(_sort_like([2**16, 2**20, 2**23], [1, 2, 4])[0])
    model = FiM(variant="synchronized", size_law="linear")
    model.fit(X, X["comp_time_iterations"])
    cycles = model.computation_.coef_[1]
    assert cycles[0] + cycles[1] * 2**16 < 0
    seconds = model.predict_parts(X)["computation"]
    assert np.all(np.isfinite(seconds))
    assert np.all(seconds > 0)
    # the largest size, well above the intercept, is timed as measured within 10 %
    largest = X["points"].to_numpy() == 2**23
    measured = X["comp_time_iterations"].to_numpy()[largest]
    np.testing.assert_allclose(seconds[largest], measured, rtol=0.1)
