"""``python -m scaleprobe.deployments.shutdown`` against a real dask-mpi cluster."""

import os
import subprocess
import sys
import time

import pytest
from scaleprobe.framework.launch import child_environment

pytestmark = pytest.mark.mpi
DASK_MPI = os.path.join(os.path.dirname(sys.executable), "dask-mpi")
WORKERS = 3


def _events(log: str) -> list[tuple[str, str]]:
    """The scheduler's closing and removal of each worker, in the log's order."""
    events = []
    for line in log.splitlines():
        for kind in ("Closing worker ", "Remove worker addr: "):
            if kind in line:
                address = line.split(kind)[1].split()[0]
                events.append((kind.split()[0], address))
    return events


def test_workers_leave_one_at_a_time_and_the_log_stays_clean(tmp_path, mpiexec):
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
        done = subprocess.run(
            [sys.executable, "-m", "scaleprobe.deployments.shutdown",
             str(scheduler_file)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert cluster.wait(timeout=60) == 0
    finally:
        if cluster.poll() is None:
            cluster.kill()
            cluster.wait()
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
