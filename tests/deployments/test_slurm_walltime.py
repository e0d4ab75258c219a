"""Worker jobs end (their walltime, ``scancel``) in the middle of a sweep.

``scaleprobe run --cluster slurm`` against a private SLURM controller, with settings
from ``DASK_...`` environment variables as a user's job script would give them. Each
test counts what a batch system's limits must never cost: points lost, measured twice
and stored, or stored as failed by the infrastructure.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from scaleprobe.framework.launch import child_environment
from scaleprobe.framework.store import ResultStore

pytestmark = [pytest.mark.slurm, pytest.mark.mpi, pytest.mark.slow]
SCALEPROBE = str(Path(sys.executable).with_name("scaleprobe"))


def _spec(tmp_path, runs: int, sleep: float) -> tuple[Path, ResultStore]:
    spec = {
        "name": "walltime",
        "kernel": "commbench.fault",
        "params": {"sleep": sleep},
        "sweep": {"nodes": [1], "ppn": [2], "run": runs},
        "throttle": {"mode": "none"},
        "timeout": 120,
        "output": str(tmp_path / "wt.zarr"),
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path, ResultStore(spec["output"])


def _environment(slurm, tmp_path, name: str, walltime: str, **settings) -> dict:
    env = dict(
        child_environment(),
        SLURM_CONF=slurm.conf,
        DASK_JOBQUEUE__SLURM__WALLTIME=walltime,
        DASK_JOBQUEUE__SLURM__NAME=name,
        DASK_JOBQUEUE__SLURM__LOG_DIRECTORY=str(tmp_path / "worker-logs"),
        DASK_SCALEPROBE__CLUSTER__SLURM__NTASKS_PER_NODE="2",
        DASK_SCALEPROBE__CLUSTER__DASHBOARD_ADDRESS=":0",
        # a job whose worker left is replaced once Dask gives the worker up
        DASK_DISTRIBUTED__DEPLOY__LOST_WORKER_TIMEOUT="2s",
    )
    for key, value in settings.items():
        env[f"DASK_SCALEPROBE__{key}"] = str(value)
    return env


def _jobs(slurm, name: str) -> dict[str, str]:
    """Job id -> state of every job named ``name``, ended ones too."""
    out = slurm.run("scontrol", "show", "job", "-o").stdout
    jobs = {}
    for line in out.splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if fields.get("JobName") == name:
            jobs[fields["JobId"]] = fields["JobState"]
    return jobs


def _finish(run, timeout: float, slurm, name: str) -> str:
    """Wait for ``scaleprobe run``; its standard error. A run still going after
    ``timeout`` seconds fails the test with where its threads wait (SIGUSR1) and
    the jobs' states, before pytest's own timeout would end it blind."""
    try:
        return run.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        run.send_signal(signal.SIGUSR1)
        time.sleep(3)
        run.kill()
        stderr = run.communicate()[1]
        pytest.fail(
            f"the run did not end in {timeout:g} s; jobs {_jobs(slurm, name)}; its "
            f"threads:\n{stderr[-20000:]}"
        )


def _verdict(store, runs: int) -> dict:
    """What the store holds: points stored ok, lost, stored failed, measured twice."""
    results = store.results()
    return {
        "ok": sum(r["status"] == "ok" for r in results),
        "lost": runs - len(results),
        "failed": sum(r["status"] != "ok" for r in results),
        "twice": sum(bool(r.get("history")) for r in results),
        "workers": len({r["worker"] for r in results}),
    }


def test_workers_retire_before_the_walltime_and_new_jobs_measure_the_rest(
    slurm, tmp_path
):
    """Two-minute jobs, more points than one job's worker lives for: each worker
    retires before the walltime (its job completes, it is not killed) and a new job
    goes on. The margin covers the worker's start in its job on a loaded host."""
    runs, name = 16, f"sp-walltime-{os.getpid()}"
    path, store = _spec(tmp_path, runs, sleep=5.0)
    env = _environment(
        slurm, tmp_path, name, "00:02:00",
        CLUSTER__SLURM__LIFETIME_MARGIN=45, CLUSTER__SLURM__LIFETIME_STAGGER=5,
        CLUSTER__WORKER_WAIT=240,
    )  # fmt: skip
    run = subprocess.Popen(
        [SCALEPROBE, "run", "--cluster", "slurm", str(path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
        cwd=tmp_path,
    )  # fmt: skip
    stderr = _finish(run, 480, slurm, name)
    jobs = _jobs(slurm, name)
    assert run.returncode == 0, stderr[-3000:]
    verdict = _verdict(store, runs)
    assert verdict["ok"] == runs, verdict
    assert (verdict["lost"], verdict["failed"], verdict["twice"]) == (0, 0, 0)
    assert verdict["workers"] >= 2, jobs
    # retired, not killed: a worker reached its lifetime (dask-jobqueue then cancels
    # its job) and no job reached its walltime
    assert len(jobs) >= 2, jobs
    assert "TIMEOUT" not in jobs.values(), jobs
    logs = sorted((tmp_path / "worker-logs").glob("*.err"))
    retired = [p for p in logs if "Reason: worker-lifetime-reached" in p.read_text()]
    assert retired, (jobs, [p.name for p in logs])
    for point in store.results():  # every launch was an srun step of a worker's job
        assert point["command"][:2] == ["srun", "--mpi=pmi2"]


def test_a_point_in_flight_when_its_allocation_ends_is_measured_again(slurm, tmp_path):
    """``scancel`` of the only worker job while a point runs: the point is measured
    again by the job that replaces it, and stored once, ok."""
    runs, name = 6, f"sp-scancel-{os.getpid()}"
    path, store = _spec(tmp_path, runs, sleep=3.0)
    env = _environment(slurm, tmp_path, name, "00:10:00", CLUSTER__WORKER_WAIT=240)
    run = subprocess.Popen(
        [SCALEPROBE, "run", "--cluster", "slurm", str(path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
        cwd=tmp_path,  # a job without a log directory writes slurm-<id>.out there
    )  # fmt: skip
    began = time.time()
    try:
        deadline = began + 300
        while len(store.done_keys()) < 2 and time.time() < deadline:
            time.sleep(0.2)
        (job,) = _jobs(slurm, name)
        while not _steps(slurm, job) and time.time() < deadline:
            time.sleep(0.1)  # a point's srun step runs in the job
        assert _steps(slurm, job), "no point was in flight"
        cancelled = slurm.run("scancel", job)
        assert cancelled.returncode == 0, cancelled.stderr
        # what is left of pytest's 600 s, so that a hang shows its stacks
        stderr = _finish(run, 540 - (time.time() - began), slurm, name)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, stderr[-3000:]
    verdict = _verdict(store, runs)
    assert verdict["ok"] == runs, verdict
    assert (verdict["lost"], verdict["failed"], verdict["twice"]) == (0, 0, 0)
    jobs = _jobs(slurm, name)
    assert jobs[job] == "CANCELLED", jobs
    assert len(jobs) >= 2, jobs
    assert "Traceback" not in stderr


def _steps(slurm, job: str) -> list[str]:
    """The job's running steps other than its batch script."""
    out = slurm.run("squeue", "-h", "-s", "-j", job, "-o", "%i").stdout.split()
    return [step for step in out if not step.endswith((".batch", ".extern"))]
