import itertools
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml
from scaleprobe.framework import open_results, run_sweep
from scaleprobe.framework.launch import child_environment
from scaleprobe.framework.store import ResultStore

pytestmark = pytest.mark.mpi

SCALEPROBE = os.path.join(os.path.dirname(sys.executable), "scaleprobe")


def _running(pattern: str) -> bool:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return bool(found.stdout.strip())


def _spec(tmp_path, **extra):
    raw = {
        "name": "faults",
        "kernel": "commbench.fault",
        "params": {"sleep": 0.05},
        "sweep": {"nodes": [1, 2], "ppn": 1, "behaviour": ["ok", "crash", "hang"]},
        "throttle": {"mode": "none"},
        "timeout": 3,
        "output": str(tmp_path / "faults.zarr"),
    }
    raw.update(extra)
    return raw


@pytest.mark.slow
def test_failures_and_hangs_are_points_and_the_sweep_finishes(tmp_path, client):
    ds = run_sweep(_spec(tmp_path), client, progress=False)
    status = ds.status.squeeze(drop=True).to_pandas()
    assert list(status.loc[:, "ok"]) == ["ok", "ok"]
    assert list(status.loc[:, "crash"]) == ["failed", "failed"]
    assert list(status.loc[:, "hang"]) == ["timeout", "timeout"]
    assert ds.time.sel(behaviour="ok").notnull().all()
    assert ds.attrs["kernel"] == "commbench.fault"
    assert "MPICH" in ds.attrs["mpi_library"]
    err = ds.error.sel(behaviour="hang", nodes=1).squeeze().item()
    assert "timeout" in err


def test_a_second_run_repeats_nothing(tmp_path, client):
    spec = _spec(
        tmp_path, sweep={"nodes": [1, 2], "ppn": 1, "run": 2}, params={"sleep": 0.0}
    )
    run_sweep(spec, client, progress=False)
    store = ResultStore(spec["output"])
    before = {r["key"]: r["started"] for r in store.results()}
    ds = run_sweep(spec, client, progress=False)
    after = {r["key"]: r["started"] for r in store.results()}
    assert before == after
    assert len(after) == 4
    assert (ds.status.values == "ok").sum() == 4


def test_launches_are_serialized_across_workers(tmp_path, client):
    spec = _spec(tmp_path, sweep={"nodes": [1], "run": 6}, params={"sleep": 0.3})
    run_sweep(spec, client, progress=False)
    spans = sorted(
        (r["started"], r["finished"]) for r in ResultStore(spec["output"]).results()
    )
    assert len(spans) == 6
    assert all(b[0] >= a[1] - 0.01 for a, b in itertools.pairwise(spans))
    # the two workers both ran points: the slot is per cluster, not per worker
    hosts = {r.get("worker") for r in ResultStore(spec["output"]).results()}
    assert len(hosts) == 2


@pytest.mark.slow
def test_kill_9_mid_sweep_then_resume_gives_every_point_once(tmp_path):
    spec = _spec(
        tmp_path, sweep={"nodes": [1, 2], "run": 6}, params={"sleep": 0.4}, timeout=30
    )
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    store = ResultStore(spec["output"])
    proc = subprocess.Popen(
        [SCALEPROBE, "run", str(path), "--workers", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while len(store.done_keys()) < 4 and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # no MPI job outlives the killed sweep (the launches run in their own groups)
    deadline = time.time() + 5
    while _running("commbench.fault --sleep 0.4") and time.time() < deadline:
        time.sleep(0.1)
    assert not _running("commbench.fault --sleep 0.4")
    stored = {r["key"]: r["started"] for r in store.results()}
    assert 4 <= len(stored) < 12
    done = subprocess.run(
        [SCALEPROBE, "run", str(path), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert f"resuming, {len(stored)} of 12" in done.stderr
    results = store.results()
    assert len(results) == 12
    assert len({r["key"] for r in results}) == 12
    assert all(r["status"] == "ok" for r in results), [r["error"] for r in results]
    # nothing measured before the kill was measured again
    assert all(
        {r["key"]: r["started"] for r in results}[k] == v for k, v in stored.items()
    )
    ds = open_results(spec["output"])
    assert (ds.status.values == "ok").sum() == 12


@pytest.mark.slow
def test_the_same_spec_runs_under_dask_mpi(tmp_path, mpiexec):
    spec = _spec(tmp_path, sweep={"nodes": [1, 2], "ppn": 2, "run": 2}, timeout=60)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    env = dict(
        child_environment(),
        DASK_SCALEPROBE__CLUSTER__DASK_MPI_INTERFACE="lo",
        DASK_SCALEPROBE__CLUSTER__DASHBOARD_ADDRESS=":0",
    )
    done = subprocess.run(
        [mpiexec, "-n", "4", SCALEPROBE, "run", "--dask-mpi", str(path)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ds = open_results(spec["output"])
    assert (ds.status.values == "ok").sum() == 4
    assert ds.run_time.notnull().sum() == 4
