"""Known answers for the reference statistics block."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scaleprobe.kernels.graph500.stats import format_block, statistics, teps_statistics


def test_order_statistics_average_the_two_middle_candidates():
    s = statistics([5.0, 1.0, 4.0, 2.0, 3.0, 6.0, 7.0])  # n = 7
    assert s["min"] == 1.0
    assert s["max"] == 7.0
    # (x[(n-1)//4] + x[n//4]) / 2 with n = 7 picks x[1] twice
    assert s["firstquartile"] == 2.0
    assert s["median"] == 4.0
    assert s["thirdquartile"] == 6.0
    assert s["mean"] == 4.0
    assert s["stddev"] == pytest.approx(np.std(np.arange(1, 8), ddof=1))
    even = statistics([1.0, 2.0, 3.0, 4.0])
    assert (even["firstquartile"], even["median"], even["thirdquartile"]) == (
        1.5,
        2.5,
        3.5,
    )


def test_teps_harmonic_mean_and_norris_standard_deviation():
    times = np.array([1.0, 2.0, 4.0, 0.5])
    nedge = np.array([100.0, 100.0, 200.0, 100.0])
    s = teps_statistics(times, nedge)
    teps = nedge / times
    assert s["harmonic_mean"] == pytest.approx(len(teps) / np.sum(1 / teps))
    per_edge = times / nedge
    expected = np.std(per_edge, ddof=1) / (
        per_edge.mean() ** 2 * math.sqrt(len(teps) - 1)
    )
    assert s["harmonic_stddev"] == pytest.approx(expected)
    assert s["min"] == 50.0
    assert s["max"] == 200.0


def test_block_has_the_reference_keys_in_order():
    block = format_block(
        scale=10,
        edgefactor=16,
        nbfs=3,
        generation_time=0.5,
        ranks=4,
        construction_time=0.25,
        times=[0.1, 0.2, 0.3],
        nedges=[1000, 1000, 1000],
        validate_times=[0.01, 0.01, 0.02],
    )
    keys = [line.split(":")[0] for line in block.splitlines()]
    assert keys[:6] == [
        "SCALE",
        "edgefactor",
        "NBFS",
        "graph_generation",
        "num_mpi_processes",
        "construction_time",
    ]
    assert "bfs  median_time" in keys
    assert "median_nedge" in keys
    assert (
        keys.index("bfs  harmonic_stddev_TEPS")
        == keys.index("bfs  harmonic_mean_TEPS") + 1
    )
    assert keys[-1] == "bfs  stddev_validate"
    line = next(x for x in block.splitlines() if "harmonic_mean_TEPS" in x)
    assert line.split("!")[1].strip() == f"{3 / (0.6 / 1000):g}"
    assert "num_mpi_processes:              4" in block
