"""``scaleprobe run --cluster slurm``: Dask workers as SLURM jobs (dask-jobqueue)."""

import json
import time
from types import SimpleNamespace

import dask
import pytest
import yaml
from scaleprobe.framework import load_spec, open_results
from scaleprobe.framework.cli import main
from scaleprobe.framework.jobqueue import NODE_RESOURCE, node_resources
from scaleprobe.framework.planning import plan


def _spec(tmp_path, mode="none", nodes=(1,)):
    return {
        "name": "jobqueue",
        "kernel": "commbench.compute",
        "params": {"total_work": 50},
        "sweep": {"nodes": list(nodes), "ppn": [1, 2], "run": 2},
        "throttle": {"mode": mode},
        "timeout": 120,
        "output": str(tmp_path / "jq.zarr"),
    }


def test_points_ask_for_their_nodes_and_too_big_points_are_refused(tmp_path):
    client = SimpleNamespace(cluster=SimpleNamespace(scaleprobe_nodes_per_job=2))
    spec = load_spec(_spec(tmp_path, nodes=(1, 2)))
    resources = node_resources(client, spec)
    assert sorted({resources(p)[NODE_RESOURCE] for p in plan(spec)}) == [1, 2]
    emulated = load_spec(_spec(tmp_path, mode="emulated", nodes=(1, 4)))
    assert {
        node_resources(client, emulated)(p)[NODE_RESOURCE] for p in plan(emulated)
    } == {1}
    with pytest.raises(
        ValueError, match="points of 4 nodes cannot run in SLURM jobs of 2"
    ):
        node_resources(client, load_spec(_spec(tmp_path, nodes=(4,))))
    assert node_resources(SimpleNamespace(), spec) is None


@pytest.mark.slurm
@pytest.mark.mpi
@pytest.mark.slow
def test_cluster_slurm_runs_every_point_inside_worker_jobs(
    slurm, tmp_path, monkeypatch
):
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    spec = _spec(tmp_path)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    settings = {
        "scaleprobe.cluster.slurm.jobs": 2,
        "scaleprobe.cluster.slurm.ntasks-per-node": 2,
        "jobqueue.slurm.walltime": "00:10:00",
        "jobqueue.slurm.log-directory": str(tmp_path / "worker-logs"),
        "jobqueue.slurm.job-extra-directives": ["--comment=scaleprobe-test"],
    }
    with dask.config.set(settings):
        assert main(["run", "--cluster", "slurm", str(path)]) == 0
    ds = open_results(spec["output"])
    assert ds.status.size == 4
    assert (ds.status.values == "ok").all(), ds.error.values
    points = [
        json.loads(p.read_text())
        for p in (tmp_path / "jq.points").glob("*.json")
        if p.name != "campaign.json"
    ]
    assert len(points) == 4
    for point in points:  # every launch was an srun step inside a worker's job
        assert point["command"][:2] == ["srun", "--mpi=pmi2"], point["command"]
        ppn = point["coords"]["ppn"]
        assert f"--ntasks-per-node={ppn}" in point["command"]
    scripts = [p.read_text() for p in (tmp_path / "worker-logs").glob("*.out")]
    assert scripts, "the worker jobs wrote no logs"


def _settled_jobs(slurm, comment, timeout=30.0):
    """The controller's lines of the jobs with ``comment`` once none is completing
    (a completing job counts only the nodes still releasing it in NumNodes)."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = slurm.run("scontrol", "show", "jobs", "-o").stdout.splitlines()
        ours = [line for line in jobs if f"Comment={comment}" in line]
        completing = any("JobState=COMPLETING" in line for line in ours)
        if not completing or time.monotonic() > deadline:
            return ours
        time.sleep(0.5)


@pytest.mark.slurm
@pytest.mark.mpi
@pytest.mark.slow
def test_cluster_slurm_places_points_on_the_nodes_of_a_worker_job(
    slurm, tmp_path, monkeypatch
):
    """One worker job of 4 exclusive nodes x 2 tasks: points 4 x 1 and 4 x 2 run
    as srun steps whose ranks the program sees on the job's 4 nodes."""
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    spec = {**_spec(tmp_path, nodes=(4,)), "name": "jobqueue-4"}
    spec["sweep"] = {**spec["sweep"], "run": 1}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    comment = f"scaleprobe-placement-{tmp_path.name}"
    settings = {
        "scaleprobe.cluster.slurm.jobs": 1,
        "scaleprobe.cluster.slurm.nodes-per-job": 4,
        "scaleprobe.cluster.slurm.ntasks-per-node": 2,
        "jobqueue.slurm.walltime": "00:10:00",
        "jobqueue.slurm.log-directory": str(tmp_path / "worker-logs"),
        "jobqueue.slurm.job-extra-directives": [f"--comment={comment}"],
    }
    with dask.config.set(settings):
        assert main(["run", "--cluster", "slurm", str(path)]) == 0
    ds = open_results(spec["output"])
    assert (ds.status.values == "ok").all(), ds.error.values
    points = [
        json.loads(p.read_text())
        for p in (tmp_path / "jq.points").glob("*.json")
        if p.name != "campaign.json"
    ]
    assert sorted(p["coords"]["ppn"] for p in points) == [1, 2]
    for point in points:
        ppn = point["coords"]["ppn"]
        assert point["command"][3:5] == ["--nodes=4", f"--ntasks-per-node={ppn}"]
        seen = point["record"]["placement"]
        assert seen["hosts"] == slurm.names
        assert seen["ranks_per_host"] == [ppn] * 4
    # the worker job held its nodes alone
    ours = _settled_jobs(slurm, comment)
    assert ours, "the worker job is not known to the controller"
    for line in ours:
        assert "OverSubscribe=NO" in line, line
        assert "NumNodes=4" in line, line
