"""CommunicationPredictor trained on real random ping-pong runs, tested on larger."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scaleprobe.kernels.comm.pattern import METRICS
from scaleprobe.kernels.schema import Record
from scaleprobe.models import CommunicationPredictor, ExtrapolationWarning

LINK = {"mode": "emulated", "link_bandwidth": 1.25e8, "latency": 5e-6, "core_slots": 0}

# (ranks, ppn, messages, message size, seed): train on 4 and 8 ranks ...
TRAIN = [
    (4, 1, 1, "256 KiB", 1),
    (4, 1, 2, "1 MiB", 2),
    (4, 2, 2, "256 KiB", 4),
    (4, 1, 1, "384 KiB", 9),
    (8, 2, 2, "512 KiB", 5),
    (8, 1, 3, "128 KiB", 6),
    (8, 1, 1, "2 MiB", 10),
    (8, 2, 1, "256 KiB", 0),
]
# ... predict 16 ranks (twice the largest trained node count at ppn 1)
TEST = [(16, 2, 2, "512 KiB", 7), (16, 1, 1, "1 MiB", 11)]


def _runs(mpi_run, configs):
    rows, times = [], []
    for ranks, ppn, messages, size, seed in configs:
        done = mpi_run(
            ranks,
            "-m",
            "scaleprobe.kernels.commbench.random_pingpong",
            "--messages",
            messages,
            "--msg-bytes",
            size,
            "--iterations",
            4,
            "--seed",
            seed,
            env={"SCALEPROBE_LINK": json.dumps({**LINK, "ppn": ppn})},
        )
        metrics = Record.parse(done.stdout).to_dict()["metrics"]
        rows.append({name: metrics[name] for name in METRICS})
        times.append(metrics["exchange_time"])
    return pd.DataFrame(rows), np.array(times)


@pytest.mark.mpi
@pytest.mark.slow
def test_predicts_larger_runs_it_never_saw(mpi_run):
    X, y = _runs(mpi_run, TRAIN)
    model = CommunicationPredictor(min_area_samples=3, max_terms=2).fit(X, y)
    assert "NT" in model.areas_["II"]["terms"][0], model.describe()
    X_new, y_new = _runs(mpi_run, TEST)
    assert (X_new["N"] > X["N"].max()).any()
    with pytest.warns(ExtrapolationWarning, match="N"):
        predicted = model.predict(X_new)
    error = np.abs(predicted - y_new) / y_new
    assert np.all(error < 0.2), (error, model.describe())
