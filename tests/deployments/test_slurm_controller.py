"""The shipped sbatch recipes against a real (private, four-node) SLURM controller.

Each test submits a rendered script with ``sbatch``, waits for the job and opens the
Dataset it wrote: Dask boots with dask-mpi in an ``srun`` step of the allocation and
every point is an ``srun --mpi=pmi2`` step (or an ``mpiexec`` given the allocation's
hosts) whose ranks the program saw on the nodes the point asks for.
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


def _submit(slurm, tmp_path, tasks, nodes=1, runs=2, **options):
    spec = {
        "name": f"slurm-{nodes}x{tasks}",
        "kernel": "commbench.compute",
        "params": {"total_work": 50},
        "sweep": {"nodes": [nodes], "ppn": sorted({1, tasks}), "run": runs},
        "throttle": {"mode": "none"},
        "timeout": 120,
        "output": str(tmp_path / "out.zarr"),
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    log = tmp_path / "job.out"
    script = render_slurm_script(
        str(tmp_path / "spec.yaml"),
        nodes=nodes,
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
    points = _stored_points(tmp_path)
    assert len(points) == ds.status.size
    for point in points:
        ppn = point["coords"]["ppn"]
        assert point["command"][:2] == ["srun", "--mpi=pmi2"], point["command"]
        assert f"--ntasks-per-node={ppn}" in point["command"]


def _stored_points(tmp_path) -> list[dict]:
    points = [
        json.loads(p.read_text()) for p in (tmp_path / "out.points").glob("*.json")
    ]
    return [p for p in points if "coords" in p]


@pytest.mark.parametrize("launcher", ["auto", "mpiexec"])
def test_points_run_on_the_four_nodes_they_ask_for(slurm, tmp_path, launcher):
    """4 x 1 and 4 x 2: each rank's node as the program saw it is the point's.

    ``auto`` launches srun steps (--nodes --ntasks-per-node); ``mpiexec`` is
    given the allocation's nodes (-hosts spn0:P,... -ppn P) and starts its proxies
    on them through SLURM.
    """
    # The four nodes are slurmd on one host: there UCX's address exchange between
    # them fails now and then ("failed to unpack address, invalid bandwidth 0.00")
    # and the step hangs; MPICH's OFI netmod over TCP joins them every time.
    setup = [
        f"export DASK_SCALEPROBE__LAUNCH__LAUNCHER={launcher}",
        "export MPIR_CVAR_CH4_NETMOD=ofi FI_PROVIDER=tcp",
    ]
    spec, log = _submit(slurm, tmp_path, 2, nodes=4, runs=1, setup=setup)
    ds = open_results(spec["output"])
    assert (ds.status.values == "ok").all(), (ds.error.values, log[-3000:])
    points = _stored_points(tmp_path)
    assert sorted(p["coords"]["ppn"] for p in points) == [1, 2]
    for point in points:
        ppn = point["coords"]["ppn"]
        seen = point["record"]["placement"]
        assert seen["hosts"] == slurm.names, point["command"]
        assert seen["ranks_per_host"] == [ppn] * 4
        if launcher == "auto":
            assert point["command"][:5] == [
                "srun", "--mpi=pmi2", f"--ntasks={4 * ppn}", "--nodes=4",
                f"--ntasks-per-node={ppn}",
            ]  # fmt: skip
        else:
            hosts = ",".join(f"{name}:{ppn}" for name in slurm.names)
            assert point["command"][1:5] == ["-hosts", hosts, "-ppn", str(ppn)]
    # the job held its nodes alone
    assert "#SBATCH --exclusive" in (tmp_path / "job.sbatch").read_text()


def test_scheduler_file_recipe_ends_cleanly(slurm, tmp_path):
    spec, log = _submit(
        slurm, tmp_path, 2, scheduler_file=str(tmp_path / "scheduler.json")
    )
    ds = open_results(spec["output"])
    assert (ds.status.values == "ok").all(), ds.error.values
    assert "Traceback" not in log, log[-3000:]
    assert "CommClosedError" not in log, log[-3000:]
