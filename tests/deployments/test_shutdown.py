"""``python -m scaleprobe.deployments.shutdown`` against a real dask-mpi cluster."""

import contextlib
import json
import logging
import os
import re
import shlex
import socket
import subprocess
import sys
import time

import pytest
from scaleprobe.deployments import dask_mpi_launch_line, shutdown
from scaleprobe.framework.launch import child_environment

pytestmark = pytest.mark.mpi
DASK_MPI = os.path.join(os.path.dirname(sys.executable), "dask-mpi")
WORKERS = 3


@contextlib.contextmanager
def _dask_mpi_cluster(tmp_path, mpiexec):
    """A scheduler and :data:`WORKERS` workers under ``mpiexec``, as the recipes
    start them: yields ``(scheduler file, process, log path)``."""
    scheduler_file = tmp_path / "scheduler.json"
    log_path = tmp_path / "cluster.log"
    with open(log_path, "w") as log:
        cluster = subprocess.Popen(
            [mpiexec, "-n", str(WORKERS + 1), DASK_MPI, "--scheduler-file",
             str(scheduler_file), "--worker-class", "distributed.Worker",
             "--interface", "lo", "--no-dashboard"],
            stdout=log, stderr=subprocess.STDOUT, env=child_environment(threads=1),
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not scheduler_file.exists() or not scheduler_file.stat().st_size:
            assert cluster.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "the cluster never wrote its file"
            time.sleep(0.2)
        # The file is written as the scheduler starts; the workers' ranks may still be
        # importing (seconds on a loaded host). A worker that has not reached the
        # scheduler before it closes keeps trying to and holds the job: the recipes
        # shut a cluster down after its sweep, when every worker has long joined.
        from distributed import Client

        with Client(scheduler_file=str(scheduler_file), timeout=120) as client:
            client.wait_for_workers(WORKERS, timeout=120)
        yield scheduler_file, cluster, log_path
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()


#: The scheduler's log of closing a worker and of removing it (``distributed``
#: 2024.8 names the removed worker by its ``WorkerState``, later ones by ``addr:``).
_EVENTS = re.compile(
    r"(Closing) worker (\S+)|(Remove) worker (?:addr: |<WorkerState ')([^\s',]+)"
)


def _events(log: str) -> list[tuple[str, str]]:
    """The scheduler's closing and removal of each worker, in the log's order."""
    events = []
    for match in _EVENTS.finditer(log):
        closing, closed, remove, removed = match.groups()
        events.append((closing, closed) if closing else (remove, removed))
    return events


def test_workers_leave_one_at_a_time_and_the_log_stays_clean(tmp_path, mpiexec):
    with _dask_mpi_cluster(tmp_path, mpiexec) as (scheduler_file, cluster, log_path):
        done = subprocess.run(
            [sys.executable, "-m", "scaleprobe.deployments.shutdown",
             str(scheduler_file)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert cluster.wait(timeout=60) == 0
    log = log_path.read_text()
    for trouble in ("Traceback", "ERROR", "heartbeat-missing"):
        assert trouble not in log, log[-3000:]
    events = _events(log)
    closed = [address for kind, address in events if kind == "Closing"]
    assert len(set(closed)) == WORKERS, events
    # each worker is gone before the next is told to close
    assert events == [
        (kind, address) for address in closed for kind in ("Closing", "Remove")
    ], events


def test_the_cluster_ends_even_when_retiring_fails(tmp_path, mpiexec, monkeypatch):
    # the recipe waits for the cluster to end: a scheduler left running would hold
    # the job until its time limit
    def refuse(client, timeout):
        raise RuntimeError("a worker would not retire")

    monkeypatch.setattr(shutdown, "_retire_one_by_one", refuse)
    level = logging.getLogger("distributed").level
    try:
        with _dask_mpi_cluster(tmp_path, mpiexec) as (scheduler_file, cluster, _):
            with pytest.raises(RuntimeError, match="would not retire"):
                shutdown.shutdown_cluster(str(scheduler_file), timeout=30)
            cluster.wait(timeout=60)
    finally:
        logging.getLogger("distributed").setLevel(level)


def test_a_worker_that_never_reaches_its_scheduler_ends_its_rank(tmp_path, mpiexec):
    # The recipes' workers wait for their scheduler for a bounded time: a plain
    # ``Worker`` would try for ever, and its rank would hold the job.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    scheduler_file = tmp_path / "gone.json"
    scheduler_file.write_text(json.dumps({"address": f"tcp://127.0.0.1:{port}"}))
    line = dask_mpi_launch_line(
        str(scheduler_file), ranks=2, mpiexec=mpiexec, death_timeout=5
    )
    command = [DASK_MPI if word == "dask-mpi" else word for word in shlex.split(line)]
    # no scheduler of their own: the two ranks are workers of the one in the file
    command += ["--no-scheduler", "--interface", "lo", "--no-dashboard"]
    log_path = tmp_path / "workers.log"
    with open(log_path, "w") as log:
        workers = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT,
            env=child_environment(threads=1),
        )  # fmt: skip
    try:
        workers.wait(timeout=180)
    except subprocess.TimeoutExpired:
        workers.kill()
        workers.wait()
        pytest.fail("the workers outlived their death timeout by minutes")
    log = log_path.read_text()
    assert "Timed out" in log or "timed out" in log, log[-3000:]
