"""The mpiexec + dask-mpi renderer, with the launch line run for real."""

import os
import shlex
import subprocess
import time

import pytest
from scaleprobe.deployments import dask_mpi_launch_line, render_mpirun_script
from scaleprobe.framework.launch import child_environment


def test_in_job_recipe(bash_syntax):
    script = render_mpirun_script(
        "g500.yaml",
        dask_ranks=4,
        hostfile="hosts.txt",
        mpiexec="/opt/mpich/bin/mpiexec",
    )
    assert (
        "/opt/mpich/bin/mpiexec -n 4 -f hosts.txt scaleprobe run --dask-mpi g500.yaml"
    ) in script.splitlines()
    bash_syntax(script)


def test_scheduler_file_recipe(bash_syntax):
    script = render_mpirun_script("g500.yaml", scheduler_file="sched.json")
    lines = script.splitlines()
    start = lines.index(
        "mpiexec -n 2 dask-mpi --scheduler-file sched.json "
        "--worker-class distributed.Worker "
        "--worker-options '{\"death_timeout\": 300}' &"
    )
    run = lines.index(
        "scaleprobe run --scheduler-file sched.json g500.yaml || status=$?"
    )
    assert lines.index("rm -f sched.json") < start < run
    assert lines[-1] == 'exit "$status"'
    bash_syntax(script)


def test_launch_line_errors():
    with pytest.raises(ValueError, match="ranks must be at least 2"):
        dask_mpi_launch_line("s.json", ranks=1)
    with pytest.raises(ValueError, match="dask_ranks must be at least 3"):
        render_mpirun_script("g.yaml", dask_ranks=2)
    with pytest.raises(ValueError, match="mpiexec must be a launcher"):
        render_mpirun_script("g.yaml", mpiexec=" ")


@pytest.mark.mpi
@pytest.mark.slow
def test_launch_line_boots_a_real_cluster(tmp_path, mpiexec):
    """Run the rendered dask-mpi line: one scheduler and one plain worker appear."""
    from distributed import Client

    scheduler_file = tmp_path / "sched.json"
    line = dask_mpi_launch_line(str(scheduler_file), ranks=2, mpiexec=mpiexec)
    env = child_environment()
    env["DASK_DISTRIBUTED__DASHBOARD__ADDRESS"] = ":0"
    argv = [*shlex.split(line), "--dashboard-address", ":0"]
    process = subprocess.Popen(
        argv,
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert scheduler_file.exists(), "dask-mpi wrote no scheduler file"
        with Client(scheduler_file=str(scheduler_file), timeout=30) as client:
            client.wait_for_workers(1, timeout=30)
            workers = client.scheduler_info()["workers"]
            assert len(workers) == 1
            assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6
            client.shutdown()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
            process.wait()


def test_scheduler_file_recipe_fails_at_once_when_the_cluster_dies(tmp_path):
    """The script waits for the scheduler file while the cluster lives, not longer."""
    script = render_mpirun_script(
        "g500.yaml", scheduler_file=str(tmp_path / "sched.json"), mpiexec="false"
    )
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "the Dask cluster ended without writing" in done.stderr
    assert "sched.json" in done.stderr


@pytest.mark.parametrize("bad", [0, -5, True, "300", None])
def test_a_death_timeout_must_be_positive_seconds(bad):
    from scaleprobe.deployments.mpirun import dask_mpi_worker_options

    with pytest.raises(ValueError, match="death_timeout must be"):
        dask_mpi_worker_options(bad)
    with pytest.raises(ValueError, match="death_timeout must be"):
        dask_mpi_launch_line("sched.json", death_timeout=bad)
