"""Joining a cluster never hangs without a message: bounded waits, one-line errors."""

import json
import os
import subprocess
import sys

import pytest
import yaml
from distributed import LocalCluster
from scaleprobe.framework.cli import main
from scaleprobe.framework.cluster import ClusterError, connect, scheduler_address
from scaleprobe.framework.launch import child_environment
from scaleprobe.framework.settings import SettingsError

SCALEPROBE = os.path.join(os.path.dirname(sys.executable), "scaleprobe")


class FakeTime:
    """A clock that advances only when slept on."""

    def __init__(self, on_sleep=None):
        self.now = 0.0
        self.on_sleep = on_sleep

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        if self.on_sleep:
            self.on_sleep(self.now)


def test_a_missing_scheduler_file_fails_after_the_timeout_naming_the_file(tmp_path):
    time = FakeTime()
    path = tmp_path / "scheduler.json"
    with pytest.raises(ClusterError, match=r"scheduler\.json does not exist after"):
        scheduler_address(path, 5, clock=time.clock, sleep=time.sleep)
    assert 5 <= time.now < 5.2


def test_a_scheduler_file_written_while_waiting_is_read(tmp_path):
    path = tmp_path / "scheduler.json"

    def write(now):
        if now >= 1:
            path.write_text(json.dumps({"address": "tcp://127.0.0.1:9999"}))

    time = FakeTime(write)
    assert (
        scheduler_address(path, 30, clock=time.clock, sleep=time.sleep)
        == "tcp://127.0.0.1:9999"
    )
    assert time.now < 2


def test_a_file_that_is_not_a_scheduler_file_is_named(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("name: x\n")
    time = FakeTime()
    with pytest.raises(ClusterError, match="holds no scheduler address"):
        scheduler_address(path, 1, clock=time.clock, sleep=time.sleep)


def test_a_cluster_without_workers_is_an_error_not_a_hang():
    with (
        LocalCluster(n_workers=0, dashboard_address=":0", processes=False) as cluster,
        pytest.raises(ClusterError, match=r"has no worker after 0\.5 s"),
    ):
        connect(cluster.scheduler_address, 0.5)


@pytest.mark.parametrize("workers", ["0", "-1", "two"])
def test_workers_below_one_are_refused_by_the_cli(tmp_path, capsys, workers):
    with pytest.raises(SystemExit) as stop:
        main(["run", str(tmp_path / "spec.yaml"), "--workers", workers])
    assert stop.value.code == 2
    assert "must be a whole number of at least 1" in capsys.readouterr().err


def test_workers_below_one_are_refused_by_the_library():
    from scaleprobe.framework.cluster import cluster_client

    with (
        pytest.raises(SettingsError, match="at least 1, got 0"),
        cluster_client(workers=0),
    ):
        pass


def _spec(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "connect",
                "kernel": "commbench.fault",
                "sweep": {"nodes": [1], "ppn": 1},
                "throttle": {"mode": "none"},
                "timeout": 5,
                "output": str(tmp_path / "out.zarr"),
            }
        )
    )
    return path


def _run(*argv, timeout=120):
    env = dict(child_environment(), DASK_SCALEPROBE__CLUSTER__CONNECT_TIMEOUT="1")
    return subprocess.run(
        [SCALEPROBE, "run", *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--scheduler-file", "missing.json", "missing.json does not exist after"),
        ("--address", "tcp://127.0.0.1:1", "no Dask scheduler answered at"),
    ],
)
def test_an_unreachable_cluster_is_one_line_and_exit_1(tmp_path, option, value, says):
    if option == "--scheduler-file":
        value = tmp_path / value
    done = _run(_spec(tmp_path), option, value)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert says in lines[0]
    assert not (tmp_path / "out.zarr").exists()


@pytest.mark.mpi
def test_dask_mpi_with_too_few_ranks_says_how_many_it_needs(tmp_path, mpi_run):
    done = mpi_run(2, SCALEPROBE, "run", "--dask-mpi", _spec(tmp_path), check=False)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert "--dask-mpi needs at least 3 MPI ranks" in done.stderr
    assert "this job has 2" in done.stderr
