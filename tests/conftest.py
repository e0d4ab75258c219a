"""Shared fixtures: one real two-worker Dask cluster and one way to run MPI programs."""

from __future__ import annotations

import copy
import subprocess
import sys
import time

import dask
import distributed  # noqa: F401 - its config defaults must be in every snapshot below
import pytest
from _system import MISSING, in_ci
from scaleprobe.framework.launch import child_environment, resolve_mpiexec


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under ``CI=true`` a test skipped for a missing system requirement fails."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
        if MISSING in str(reason):
            report.outcome = "failed"
            report.longrepr = (
                f"{reason} -- under CI=true this is an error: CI installs what the "
                "tests need (.ci/install-deploy-deps, .ci/install-system-mpi)"
            )


#: Workers of the session's cluster, and seconds a test waits for them to be back.
SESSION_WORKERS = 2
WORKERS_BACK = 30.0


class _SessionCluster:
    """The session's LocalCluster, started again when a test left it without workers.

    Every sweep on a cluster without workers waits ``scaleprobe.cluster.worker-wait``
    seconds before it stops: one test that lost the workers would make every later
    test wait that long and the suite outlast any time limit. The test that finds
    them gone fails at once and says so; the tests after it get a new cluster.
    """

    def __init__(self):
        self.cluster = None

    def get(self):
        """Return ``(cluster, problem)``; ``problem`` says what a test left behind."""
        if self.cluster is None:
            self.cluster = self._start()
            return self.cluster, None
        deadline = time.monotonic() + WORKERS_BACK  # a nanny restarts a lost worker
        while len(self.cluster.scheduler.workers) < SESSION_WORKERS:
            if time.monotonic() > deadline:
                have = len(self.cluster.scheduler.workers)
                self.close()
                self.cluster = self._start()
                return self.cluster, (
                    f"the session's Dask cluster had {have} of its {SESSION_WORKERS} "
                    f"workers for {WORKERS_BACK:g} s: a test before this one lost "
                    "them (a new cluster serves the tests after this one)"
                )
            time.sleep(0.1)
        return self.cluster, None

    @staticmethod
    def _start():
        from distributed import LocalCluster

        return LocalCluster(
            n_workers=SESSION_WORKERS,
            threads_per_worker=1,
            dashboard_address=":0",
            processes=True,
        )

    def close(self):
        """Close the cluster, if one was started."""
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


@pytest.fixture(scope="session")
def _session_cluster():
    holder = _SessionCluster()
    yield holder
    holder.close()


def _checked(holder):
    cluster, problem = holder.get()
    if problem:
        pytest.fail(problem)
    return cluster


@pytest.fixture(scope="module")
def cluster(_session_cluster):
    """The session's LocalCluster with two single-threaded worker processes."""
    return _checked(_session_cluster)


@pytest.fixture
def client(_session_cluster):
    """A client of the session cluster, closed after each test."""
    from distributed import Client

    with Client(_checked(_session_cluster)) as client:
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


@pytest.fixture(scope="session")
def mpiexec() -> str:
    """The ``mpiexec`` sweeps launch with (:func:`launch.resolve_mpiexec`).

    Never the first one on ``PATH``: a system Open MPI there refuses to run as root
    and speaks another process-manager protocol than the MPICH mpi4py links against.
    """
    return resolve_mpiexec()


@pytest.fixture(scope="session")
def mpi_run(mpiexec):
    """Run a command on ``ranks`` MPI ranks, as a launch would.

    ``mpi_run(ranks, *command, env=None, timeout=240, check=True)`` returns the
    :class:`subprocess.CompletedProcess` (text output); ``command`` starting with
    ``-m`` runs a module of this Python. The environment is the launch's
    (:func:`launch.child_environment`) without an inherited ``SCALEPROBE_LINK``, plus
    ``env``. With ``check`` a non-zero exit fails the test with the error output.
    """

    def run(ranks, *command, env=None, timeout=240, check=True):
        environment = child_environment(threads=1)
        environment.pop("SCALEPROBE_LINK", None)
        environment.update(env or {})
        argv = [str(part) for part in command]
        if argv and argv[0] == "-m":
            argv.insert(0, sys.executable)
        done = subprocess.run(
            [mpiexec, "-n", str(ranks), *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
        )
        if check:
            assert done.returncode == 0, done.stderr[-3000:]
        return done

    return run
