"""The shipped sbatch recipes against a real (private, single-node) SLURM controller.

Each test submits a rendered script with ``sbatch``, waits for the job and opens the
Dataset it wrote: Dask boots with dask-mpi in an ``srun`` step of the allocation and
every point is an ``srun --mpi=pmi2`` step.
"""

import json
import os
import sys

import pytest
import yaml
from scaleprobe.deployments import render_slurm_script
from scaleprobe.framework import open_results

pytestmark = [pytest.mark.slurm, pytest.mark.mpi, pytest.mark.slow]
VENV = os.path.dirname(os.path.dirname(sys.executable))
WALLTIME = 600  # seconds of each test job


def _submit(slurm, tmp_path, tasks, **options):
    spec = {
        "name": f"slurm-{tasks}",
        "kernel": "commbench.compute",
        "params": {"total_work": 50},
        "sweep": {"nodes": [1], "ppn": sorted({1, tasks}), "run": 2},
        "throttle": {"mode": "none"},
        "timeout": 120,
        "output": str(tmp_path / "out.zarr"),
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    log = tmp_path / "job.out"
    script = render_slurm_script(
        str(tmp_path / "spec.yaml"),
        nodes=1,
        ppn=tasks,
        walltime=WALLTIME,
        python_env=VENV,
        log=str(log),
        **options,
    )
    (tmp_path / "job.sbatch").write_text(script)
    submitted = slurm.run("sbatch", "--parsable", str(tmp_path / "job.sbatch"))
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip().split(";")[0]
    # The job's own time limit bounds it: a rank that fails ends the step at once,
    # and on a loaded machine a healthy sweep may take minutes.
    state = slurm.wait_job(job, timeout=WALLTIME + 60)
    text = log.read_text() if log.exists() else "(no job log)"
    assert state == "COMPLETED", f"{state}\n--- job log ---\n{text[-3000:]}"
    return spec, text


@pytest.mark.parametrize("tasks", [1, 2, 4])
def test_dask_mpi_sweep_in_a_one_node_allocation(slurm, tmp_path, tasks):
    spec, log = _submit(slurm, tmp_path, tasks)
    ds = open_results(spec["output"])
    assert list(ds.ppn.values) == spec["sweep"]["ppn"]
    assert ds.status.size == len(spec["sweep"]["ppn"]) * 2
    assert (ds.status.values == "ok").all(), ds.error.values
    assert (ds.time > 0).all()
    assert "More processors requested than permitted" not in log
    # every point was an srun step that placed its ranks as the spec asks
    points = [
        json.loads(p.read_text()) for p in (tmp_path / "out.points").glob("*.json")
    ]
    points = [p for p in points if "coords" in p]
    assert len(points) == ds.status.size
    for point in points:
        ppn = point["coords"]["ppn"]
        assert point["command"][:2] == ["srun", "--mpi=pmi2"], point["command"]
        assert f"--ntasks-per-node={ppn}" in point["command"]


def test_scheduler_file_recipe_ends_cleanly(slurm, tmp_path):
    spec, log = _submit(
        slurm, tmp_path, 2, scheduler_file=str(tmp_path / "scheduler.json")
    )
    ds = open_results(spec["output"])
    assert (ds.status.values == "ok").all(), ds.error.values
    assert "Traceback" not in log, log[-3000:]
    assert "CommClosedError" not in log, log[-3000:]
