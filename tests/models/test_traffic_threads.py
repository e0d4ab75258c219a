"""Threads per rank in the traffic model: a group, reached along Amdahl's law."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import DegenerateFitWarning, TrafficModel, fit_ensemble
from scaleprobe.models.traffic.axes import size_of

SERIAL, PARALLEL = 0.2, 2.0  # seconds of one rank's work at one node


def _truth(threads, n):
    """Amdahl's computation (a serial part, a part divided by the threads) and a
    traffic the threads do not change."""
    comp = (SERIAL + PARALLEL / threads) / n
    return comp, 3e-6 * (n - 1), 8e6 / n / 1e9 * (n > 1)


def _threads_frame(threads=(1, 2, 4), nodes=(1, 2, 3, 4, 6, 8), seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for t in threads:
        for n in nodes:
            for run in range(2):
                comp, lat, transfer = _truth(t, n)
                rows.append(
                    {
                        "nodes": n,
                        "ppn": 1,
                        "ranks": n,
                        "bandwidth": 100.0,
                        "threads": t,
                        "run": run,
                        "link_bandwidth": 1e9,
                        "latency": 1e-6,
                        "cp_comp_time": comp * rng.lognormal(0, 0.01),
                        "cp_latency_time": lat,
                        "cp_bandwidth_time": transfer,
                        "cp_intra_time": 0.0,
                    }
                )
    X = pd.DataFrame(rows)
    return X, X.filter(like="cp_").sum(axis=1).to_numpy()


def test_the_size_of_a_thread_count_is_one_threads_share():
    assert [size_of("threads", t) for t in (1, 2, 8)] == [1.0, 0.5, 0.125]


def test_another_thread_count_follows_amdahls_law():
    X, y = _threads_frame()
    model = TrafficModel().fit(X, y)
    assert model.group_columns_ == ("ppn", "threads")
    threads = np.array([2.0, 8.0, 16.0])
    frame = pd.DataFrame(
        {"nodes": 32.0, "ppn": 1, "ranks": 32, "bandwidth": 100.0, "threads": threads}
    )
    truth = [sum(_truth(t, 32.0)) for t in threads]
    np.testing.assert_allclose(model.predict(frame), truth, rtol=0.03)
    parts = model.predict_components(frame)
    # the serial part is left when the threads grow: not a power law towards zero
    assert parts["computation"].iloc[-1] > SERIAL / 32.0 * 0.97


@pytest.mark.slow
def test_the_ensemble_selects_a_model_that_sees_the_threads():
    X, y = _threads_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateFitWarning)
        fit = fit_ensemble((X, y))
    assert fit.selected == "traffic"
    assert "base is not selected: ignores threads, which varies" in fit.notes
    assert fit.training["parameters"]["threads"] == [1.0, 2.0, 4.0]
