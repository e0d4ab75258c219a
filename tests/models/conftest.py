"""Shared fixtures: a synthetic results Dataset and a two-worker Dask cluster."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr


def synthetic_results(
    *,
    nodes=(1, 2, 4, 8, 16, 32),
    ppn=(4,),
    bandwidth=(10, 25, 50, 100),
    scale=(20, 21, 22),
    runs=3,
    trials=4,
    coef=(200.0, 6.0),
    alpha=1.12,
    s0=20,
    noise=0.01,
    failed=2,
    seed=0,
):
    """A results Dataset as the framework's, timed by Eq. 7 of Medya et al. 2017.

    ``time = C1 D / p + C2 D alpha^(100/bw) / sqrt(p)`` with ``p = nodes * ppn``,
    multiplicative Gaussian noise, ``failed`` random points marked ``"failed"``.
    """
    rng = np.random.default_rng(seed)
    coords = {
        "nodes": list(nodes),
        "ppn": list(ppn),
        "bandwidth": list(bandwidth),
        "scale": list(scale),
        "run": list(range(runs)),
        "trial": list(range(trials)),
    }
    n, q, bw, s = np.meshgrid(
        np.array(nodes, float),
        np.array(ppn, float),
        np.array(bandwidth, float),
        np.array(scale, float),
        indexing="ij",
    )
    p, D = n * q, np.exp2(s - s0)
    comp = coef[0] * D / p
    comm = coef[1] * D * alpha ** (100.0 / bw) / np.sqrt(p)
    shape = (*n.shape, runs, trials)
    clean = np.broadcast_to((comp + comm)[..., None, None], shape)
    time = clean * (1 + noise * rng.standard_normal(shape))
    status = np.full((*n.shape, runs), "ok", dtype=object)
    for _ in range(failed):
        index = tuple(rng.integers(0, size) for size in status.shape)
        status[index] = "failed"
        time[index] = np.nan
    dims = ("nodes", "ppn", "bandwidth", "scale", "run", "trial")
    return xr.Dataset(
        data_vars={
            "time": (dims, time, {"units": "s", "long_name": "BFS time"}),
            "comm_time": (
                dims,
                np.broadcast_to(comm[..., None, None], shape).copy(),
                {"units": "s", "long_name": "communication time"},
            ),
            "status": (dims[:-1], status.astype(str), {"long_name": "point status"}),
        },
        coords=coords,
        attrs={"spec": "kernel: synthetic\n", "kernel": "synthetic"},
    )


@pytest.fixture
def results():
    """A small synthetic results Dataset (Eq. 7 with known coefficients)."""
    return synthetic_results()


@pytest.fixture
def make_results():
    """The :func:`synthetic_results` factory, for tests that need other shapes."""
    return synthetic_results


def synthetic_traffic(
    *,
    nodes=(1, 2, 3, 4, 6, 8),
    bandwidth=(100, 50, 25),
    runs=3,
    work=2.0,
    serial=0.01,
    steps=6.0,
    volume=4e7,
    link_bandwidth=1.25e8,
    latency=5e-6,
    noise=0.02,
    seed=0,
    overhead=0.0,
):
    """Critical-path records of a program with known computation and traffic.

    On ``n`` nodes (ppn 1): computation ``work / n + serial + overhead * n`` (noisy),
    ``steps *
    (n - 1)`` latency-bound steps and ``volume / n`` bytes through the busiest
    interface (none on one node), priced on ``link_bandwidth * bw / 100`` bytes/s
    and ``latency`` seconds. ``time`` is the sum of the parts.
    """
    import json

    rng = np.random.default_rng(seed)
    n = np.array(nodes, float)[:, None, None]
    bw = np.array(bandwidth, float)[None, :, None]
    shape = (len(nodes), len(bandwidth), runs)
    comp = (work / n + serial + overhead * n) * np.exp(
        noise * rng.standard_normal(shape)
    )
    lat = np.broadcast_to(steps * (n - 1) * latency, shape)
    transfer = np.broadcast_to(
        volume / n * (n > 1) / (link_bandwidth * bw / 100), shape
    )
    dims = ("nodes", "bandwidth", "run")

    def var(values, name):
        return (
            dims,
            np.array(values, float)[:, None],
            {"units": "s", "long_name": name},
        )

    data = {
        "time": var(comp + lat + transfer, "completion time"),
        "cp_comp_time": var(comp, "computation"),
        "cp_latency_time": var(lat, "latency"),
        "cp_bandwidth_time": var(transfer, "transfer"),
        "cp_intra_time": var(np.zeros(shape), "intra"),
    }
    ds = xr.Dataset(
        {
            k: (
                (*v[0][:2], "ppn", "run"),
                np.moveaxis(v[1], 1, 1).reshape(len(nodes), len(bandwidth), 1, runs),
                v[2],
            )
            for k, v in data.items()
        },
        coords={
            "nodes": list(nodes),
            "bandwidth": list(bandwidth),
            "ppn": [1],
            "run": list(range(runs)),
        },
        attrs={
            "kernel": "synthetic",
            "link_model": json.dumps(
                {"link_bandwidth": link_bandwidth, "latency": latency}
            ),
        },
    )
    return ds


@pytest.fixture
def traffic():
    """Synthetic critical-path records with known parts (see synthetic_traffic)."""
    return synthetic_traffic()


@pytest.fixture
def make_traffic():
    """The :func:`synthetic_traffic` factory."""
    return synthetic_traffic
