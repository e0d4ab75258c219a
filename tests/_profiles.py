"""Synthetic profiles of known laws, shared by the tests of profile fits."""

from __future__ import annotations

import math

import numpy as np
from scaleprobe.models.profiles import ProfileTable

#: Process counts of the synthetic profiles: 2 .. 256 ranks.
COUNTS = 2.0 ** np.arange(1, 9)


def synthetic_profile(
    laws, *, metric="time", counts=COUNTS, runs=3, noise=0.01, seed=0
):
    """A profile table of one series per call path: ``laws[path](p)`` at every count,
    ``runs`` repetitions with log-normal noise of ``noise``."""
    rng = np.random.default_rng(seed)
    rows = []
    for path, law in laws.items():
        for x in counts:
            for run in range(runs):
                value = float(law(x)) * math.exp(noise * rng.standard_normal())
                rows.append((float(x), path, metric, run, value))
    return ProfileTable.from_rows(["p"], rows, source={"path": "synthetic"})
