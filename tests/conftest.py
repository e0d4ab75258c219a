"""Shared fixtures: one real two-worker Dask cluster for the whole test session."""

from __future__ import annotations

import copy
import os
import sys

import dask
import distributed  # noqa: F401 - its config defaults must be in every snapshot below
import pytest

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


@pytest.fixture(scope="session")
def cluster():
    """A LocalCluster with two single-threaded worker processes."""
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=":0", processes=True
    ) as cluster:
        yield cluster


@pytest.fixture
def client(cluster):
    """A client of the session cluster, closed after each test."""
    from distributed import Client

    with Client(cluster) as client:
        yield client


@pytest.fixture(autouse=True)
def _isolate_dask_config():
    """Give every test the Dask config it started with.

    A client closed out of order can leave ``scheduler: dask.distributed`` behind,
    which breaks later tests that compute without a client.
    """
    saved = copy.deepcopy(dask.config.config)
    yield
    dask.config.config.clear()
    dask.config.config.update(saved)
