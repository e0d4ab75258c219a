"""Sweeps that cannot contaminate, lose or orphan anything, with real runs."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from scaleprobe.framework import run_sweep
from scaleprobe.framework._warnings import DamagedPointWarning
from scaleprobe.framework.cli import main
from scaleprobe.framework.launch import child_environment
from scaleprobe.framework.spec import SpecError
from scaleprobe.framework.store import ResultStore

pytestmark = pytest.mark.mpi

BIN = os.path.dirname(sys.executable)
SCALEPROBE = os.path.join(BIN, "scaleprobe")


def _spec(tmp_path, **extra):
    raw = {
        "name": "safety",
        "kernel": "commbench.fault",
        "params": {"sleep": 0.0},
        "sweep": {"nodes": [1], "run": 2},
        "throttle": {"mode": "none"},
        "timeout": 60,
        "output": str(tmp_path / "safety.zarr"),
    }
    raw.update(extra)
    return raw


def _write(tmp_path, raw, name="spec.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.slow
def test_a_second_run_on_the_same_output_is_refused_and_measures_nothing(
    tmp_path, client
):
    # 12 s of work: the second command (a Python start, imports) must find the first
    # still running even on a loaded host, where 2.4 s once were not enough
    raw = _spec(tmp_path, params={"sleep": 3.0}, sweep={"nodes": [1], "run": 4})
    path = _write(tmp_path, raw)
    store = ResultStore(raw["output"])
    first = threading.Thread(
        target=run_sweep, args=(raw, client), kwargs={"progress": False}
    )
    first.start()
    deadline = time.time() + 60
    while store.lock.holder() is None and time.time() < deadline:
        time.sleep(0.05)
    second = subprocess.run(
        [SCALEPROBE, "run", str(path), "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    racing = first.is_alive()
    first.join(timeout=120)
    assert racing, "the first run ended before the second started: nothing was tested"
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert lines[0].startswith(
        f"scaleprobe: error: {raw['output']} is in use by another"
    )
    assert f"(pid {os.getpid()} on " in lines[0]
    results = store.results()
    assert len(results) == 4
    assert all(r["status"] == "ok" and "history" not in r for r in results)
    # one launch per point: the logs name each point once and only the first run's
    logs = sorted(os.listdir(store.logs_dir))
    assert len(logs) == 4
    assert {r["worker"] for r in results} <= set(client.scheduler_info()["workers"])


def test_changed_sweep_keys_are_refused_before_anything_runs(tmp_path, client, capsys):
    raw = _spec(tmp_path, sweep={"nodes": [1], "behaviour": ["ok"]})
    run_sweep(raw, client, progress=False)
    store = ResultStore(raw["output"])
    before = {
        p.name: p.read_text() for p in Path(store.points_dir).iterdir() if p.is_file()
    }
    changed = _spec(tmp_path, params={}, sweep={"nodes": [1], "sleep": [0.0, 0.1]})
    assert main(["run", str(_write(tmp_path, changed)), "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert (
        "holds another campaign (params.sleep removed; sweep keys: behaviour " in err[0]
    )
    assert "removed, sleep added)" in err[0]
    after = {
        p.name: p.read_text() for p in Path(store.points_dir).iterdir() if p.is_file()
    }
    assert after == before
    assert (ResultStore(raw["output"]).dataset().status.values == "ok").sum() == 1


def test_retry_measures_failed_points_again_and_keeps_their_history(tmp_path, client):
    raw = _spec(tmp_path, sweep={"nodes": [1], "behaviour": ["ok", "exit"]})
    run_sweep(raw, client, progress=False)
    store = ResultStore(raw["output"])
    first = {r["coords"]["behaviour"]: r for r in store.results()}
    assert first["exit"]["status"] == "failed"
    ds = run_sweep(raw, client, progress=False, retry="failed")
    again = {r["coords"]["behaviour"]: r for r in store.results()}
    assert again["ok"]["started"] == first["ok"]["started"]  # untouched
    assert again["exit"]["started"] > first["exit"]["started"]
    (old,) = again["exit"]["history"]
    assert old["started"] == first["exit"]["started"]
    assert old["error"] == first["exit"]["error"]
    key = first["exit"]["key"]
    assert old["log"].endswith(f"{key}.1.log")
    assert os.path.exists(os.path.join(store.logs_dir, f"{key}.1.log"))
    assert ds.status.sel(behaviour="exit").item() == "failed"
    with pytest.raises(SpecError, match="is not a status to retry"):
        run_sweep(raw, client, progress=False, retry="ok")


def test_run_fails_only_when_every_point_it_launched_failed(tmp_path, capsys):
    path = _write(
        tmp_path, _spec(tmp_path, sweep={"nodes": [1], "behaviour": ["ok", "exit"]})
    )
    # one point of two failed: the sweep went on and measured the other
    assert main(["run", str(path), "--workers", "1"]) == 0
    assert "scaleprobe: 1 of 2 points failed: first " in capsys.readouterr().err
    # the retry launches the failed point alone, and it fails again
    assert main(["run", str(path), "--workers", "1", "--retry", "failed"]) == 1
    assert "scaleprobe: 1 of 2 points failed: first " in capsys.readouterr().err
    # nothing left to launch: the stored failure is not this run's
    assert main(["run", str(path), "--workers", "1"]) == 0


def test_a_damaged_point_file_is_measured_again(tmp_path, client):
    raw = _spec(tmp_path)
    run_sweep(raw, client, progress=False)
    store = ResultStore(raw["output"])
    damaged, kept = sorted(store.results(), key=lambda r: r["coords"]["run"])
    path = Path(store.points_dir, f"{damaged['key']}.json")
    truncated = path.read_text()[:40]
    path.write_text(truncated)
    with pytest.warns(DamagedPointWarning, match=f"{damaged['key']}.json is damaged"):
        ds = run_sweep(raw, client, progress=False)
    again = {r["key"]: r for r in store.results()}
    assert again[kept["key"]]["started"] == kept["started"]
    assert again[damaged["key"]]["started"] > damaged["started"]
    # moved aside as it was, never deleted
    assert Path(store.damaged_dir, f"{damaged['key']}.json").read_text() == truncated
    assert (ds.status.values == "ok").sum() == 2


def _launches(marker: str) -> list[int]:
    found = subprocess.run(
        ["pgrep", "-f", "--", marker], capture_output=True, text=True
    )
    return [int(pid) for pid in found.stdout.split()]


def _groups_alive(groups) -> list[str]:
    found = subprocess.run(
        ["ps", "-eo", "pgid=,stat=,args="], capture_output=True, text=True
    )
    return [
        line.strip()
        for line in found.stdout.splitlines()
        if line.split() and int(line.split()[0]) in groups
    ]


def _external_cluster(tmp_path, env):
    """A scheduler and one worker without nanny, as processes of their own."""
    scheduler_file = tmp_path / "scheduler.json"
    dask = os.path.join(BIN, "dask")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
    cluster = [
        subprocess.Popen(
            [
                dask,
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(scheduler_file),
            ],
            **quiet,
        )
    ]
    cluster.append(
        subprocess.Popen(
            [
                dask,
                "worker",
                "--scheduler-file",
                str(scheduler_file),
                "--nthreads",
                "1",
                "--no-dashboard",
                "--no-nanny",
            ],
            **quiet,
        )
    )
    return scheduler_file, cluster


def _stop(cluster):
    for process in reversed(cluster):
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.mark.slow
def test_killing_the_client_of_an_external_cluster_kills_its_launch(tmp_path):
    """kill -9 of `scaleprobe run --scheduler-file`: the worker's launch dies too."""
    env = child_environment()
    scheduler_file, cluster = _external_cluster(tmp_path, env)
    marker = "--sleep 0.0123"
    try:
        raw = _spec(
            tmp_path,
            params={"sleep": 0.0123, "behaviour": "hang"},
            sweep={"nodes": [1, 2]},
            timeout=300,
        )
        with open(tmp_path / "client.err", "w") as err:
            client = subprocess.Popen(
                [
                    SCALEPROBE,
                    "run",
                    str(_write(tmp_path, raw)),
                    "--scheduler-file",
                    str(scheduler_file),
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
        deadline = time.time() + 180
        while not _launches(marker) and time.time() < deadline:
            time.sleep(0.1)
        assert _launches(marker), (tmp_path / "client.err").read_text()
        groups = {os.getpgid(pid) for pid in _launches(marker)}
        client.send_signal(signal.SIGKILL)
        client.wait()
        killed = time.time()
        # the worker and its guard are alive: only the sweep's lease can end it
        while _groups_alive(groups) and time.time() < killed + 10:
            time.sleep(0.1)
        assert not _groups_alive(groups), _groups_alive(groups)
        assert not _launches(marker)
        assert all(process.poll() is None for process in cluster)
        # the client's lock died with it: the next run takes it over at once
        assert ResultStore(raw["output"]).lock.holder() is None
    finally:
        _stop(cluster)


@pytest.mark.slow
def test_a_dead_scheduler_stores_nothing_unfinished_and_says_to_run_again(tmp_path):
    """kill -9 of the scheduler mid-sweep: finished points are kept, the rest are not
    stored as failures, and the run ends in one line saying how to go on."""
    env = child_environment()
    scheduler_file, cluster = _external_cluster(tmp_path, env)
    marker = "--sleep 0.7321"
    raw = _spec(tmp_path, params={"sleep": 0.7321}, sweep={"nodes": [1], "run": 6})
    store = ResultStore(raw["output"])
    try:
        client = subprocess.Popen(
            [
                SCALEPROBE,
                "run",
                str(_write(tmp_path, raw)),
                "--scheduler-file",
                str(scheduler_file),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.time() + 180
        while len(store.done_keys()) < 1 and time.time() < deadline:
            time.sleep(0.05)
        while not _launches(marker) and time.time() < deadline:
            time.sleep(0.05)
        assert store.done_keys(), "no point finished before the deadline"
        cluster[0].send_signal(signal.SIGKILL)
        cluster[0].wait()
        _, err = client.communicate(timeout=120)
    finally:
        _stop(cluster)
    lines = [line for line in err.splitlines() if line.startswith("scaleprobe: error")]
    assert client.returncode == 75, err  # EX_TEMPFAIL: points left unmeasured
    assert len(lines) == 1, err
    assert "left unmeasured (the Dask cluster dropped them" in lines[0], err
    assert "run the same command again" in lines[0], err
    assert "Traceback" not in err
    results = store.results()
    assert 1 <= len(results) < 6
    assert all(r["status"] == "ok" for r in results)  # none stored as failed


def _worker(scheduler_file, env):
    return subprocess.Popen(
        [os.path.join(BIN, "dask"), "worker", "--scheduler-file", str(scheduler_file),
         "--nthreads", "1", "--no-dashboard", "--no-nanny"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip


@pytest.mark.slow
def test_a_cluster_left_without_workers_ends_the_run_with_what_is_unmeasured(
    tmp_path,
):
    """kill -9 of the only worker mid-launch: its point is not stored as failed, the
    run does not hang, it ends after scaleprobe.cluster.worker-wait with one line
    and exit 75; with a worker again, the same command measures the rest."""
    env = dict(child_environment(), DASK_SCALEPROBE__CLUSTER__WORKER_WAIT="8")
    scheduler_file, cluster = _external_cluster(tmp_path, env)
    marker = "--sleep 0.8123"
    raw = _spec(tmp_path, params={"sleep": 0.8123}, sweep={"nodes": [1], "run": 6})
    store = ResultStore(raw["output"])
    command = [SCALEPROBE, "run", str(_write(tmp_path, raw)), "--scheduler-file",
               str(scheduler_file)]  # fmt: skip
    try:
        run = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env=env,
        )  # fmt: skip
        deadline = time.time() + 180
        while len(store.done_keys()) < 2 and time.time() < deadline:
            time.sleep(0.05)
        while not _launches(marker) and time.time() < deadline:
            time.sleep(0.05)
        assert len(store.done_keys()) >= 2, "no point finished before the deadline"
        cluster[1].send_signal(signal.SIGKILL)  # the only worker, mid-launch
        cluster[1].wait()
        killed = time.time()
        _, err = run.communicate(timeout=180)
        waited = time.time() - killed
        stored = len(store.done_keys())
        assert run.returncode == 75, err
        lines = [line for line in err.splitlines() if "scaleprobe: error" in line]
        assert len(lines) == 1, err
        assert lines[0].startswith(
            f"scaleprobe: error: {6 - stored} point(s) left unmeasured (no Dask "
            "worker for 8 s)"
        ), err
        assert lines[0].endswith("run the same command again to measure the rest")
        assert "Traceback" not in err
        assert waited >= 8, "the run must wait worker-wait seconds for a worker"
        assert all(r["status"] == "ok" for r in store.results())  # none failed
        cluster.append(_worker(scheduler_file, env))
        again = subprocess.run(
            command, capture_output=True, text=True, env=env, timeout=300
        )
        assert again.returncode == 0, again.stderr
    finally:
        _stop(cluster)
    results = store.results()
    assert len(results) == 6
    assert all(r["status"] == "ok" and "history" not in r for r in results)
