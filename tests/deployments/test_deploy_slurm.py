"""The sbatch script renderer, and an opt-in check against a real SLURM."""

import dask
import pytest
from scaleprobe.deployments import render_slurm_script


def test_directives_and_dask_mpi_step(bash_syntax):
    script = render_slurm_script(
        "campaigns/g500.yaml",
        nodes=4,
        ppn=2,
        walltime="90 min",
        queue="batch",
        account="proj42",
        job_name="g500-sweep",
        python_env="/home/me/venv",
        setup=["module load gcc/12"],
        extra_directives=["--mem=8G"],
    )
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    for directive in (
        "#SBATCH -N 4",
        "#SBATCH --ntasks-per-node=2",
        "#SBATCH -t 01:30:00",
        "#SBATCH -p batch",
        "#SBATCH -A proj42",
        "#SBATCH -J g500-sweep",
        "#SBATCH -o scaleprobe-%j.out",
        "#SBATCH --exclusive",
        "#SBATCH --mem=8G",
    ):
        assert directive in lines
    # directives must precede the first command or sbatch ignores them
    last_directive = max(i for i, ln in enumerate(lines) if ln.startswith("#SBATCH"))
    first_command = lines.index("set -euo pipefail")
    assert last_directive < first_command
    assert lines.index("module load gcc/12") < lines.index(
        ". /home/me/venv/bin/activate"
    )
    assert (
        "srun --mpi=pmi2 --overlap --overcommit --kill-on-bad-exit=1 --nodes=1 "
        "--ntasks=3 --ntasks-per-node=3 scaleprobe run --dask-mpi campaigns/g500.yaml"
    ) in lines
    bash_syntax(script)


def test_optional_directives_are_left_out():
    script = render_slurm_script(
        "s.yaml", nodes=1, ppn=1, log=None, walltime="1 h", exclusive=False
    )
    assert "#SBATCH -p" not in script
    assert "#SBATCH -A" not in script
    assert "#SBATCH -o" not in script
    assert "--exclusive" not in script
    assert "# scaleprobe must be on PATH" in script


def test_the_time_limit_is_given_or_configured_never_assumed():
    # dask-jobqueue's own 30 minutes (in the config here: conftest.py imports it)
    # would end a sweep at a limit nobody chose
    assert dask.config.get("jobqueue.slurm.walltime") == "00:30:00"
    with pytest.raises(ValueError, match=r"walltime is needed: give walltime= "):
        render_slurm_script("s.yaml", nodes=1, ppn=1)
    with dask.config.set({"jobqueue.slurm.walltime": "00:45:00"}):
        lines = render_slurm_script("s.yaml", nodes=1, ppn=1).splitlines()
    assert "#SBATCH -t 00:45:00" in lines  # configured: taken


def test_batch_options_default_to_the_dask_jobqueue_config():
    # one configuration for SLURMCluster jobs and rendered scripts alike
    settings = {
        "jobqueue.slurm.queue": "debug",
        "jobqueue.slurm.account": "proj7",
        "jobqueue.slurm.walltime": "00:10:00",
        "jobqueue.slurm.job-extra-directives": ["--exclusive", "--mem=8G"],
    }
    with dask.config.set(settings):
        lines = render_slurm_script("s.yaml", nodes=1, ppn=1).splitlines()
        given = render_slurm_script(
            "s.yaml", nodes=1, ppn=1, queue="batch", extra_directives=[]
        ).splitlines()
    for directive in ("-p debug", "-A proj7", "-t 00:10:00", "--exclusive"):
        assert f"#SBATCH {directive}" in lines
    assert lines.count("#SBATCH --exclusive") == 1
    assert "#SBATCH -p batch" in given
    assert "#SBATCH --mem=8G" not in given


def test_scheduler_file_recipe(bash_syntax):
    script = render_slurm_script(
        "s.yaml",
        walltime="1 h",
        nodes=2,
        ppn=8,
        scheduler_file="/scratch/me/sched.json",
        dask_ranks=4,
        output="/scratch/me/out.zarr",
        overlap=False,
        mpi="pmix",
    )
    assert (
        "srun --mpi=pmix --overcommit --kill-on-bad-exit=1 --nodes=1 --ntasks=3 "
        "--ntasks-per-node=3 dask-mpi --scheduler-file /scratch/me/sched.json "
        "--worker-class distributed.Worker "
        "--worker-options '{\"death_timeout\": 300}' &"
    ) in script
    assert (
        "scaleprobe run --scheduler-file /scratch/me/sched.json s.yaml "
        "--output /scratch/me/out.zarr || status=$?"
    ) in script
    assert (
        "python -m scaleprobe.deployments.shutdown /scratch/me/sched.json || true"
        in script
    )
    assert "--dask-mpi" not in script
    bash_syntax(script)


def test_paths_with_spaces_are_quoted(bash_syntax):
    script = render_slurm_script(
        "my campaigns/g500.yaml",
        nodes=1,
        ppn=1,
        walltime=60,
        python_env="/opt/my env",
    )
    assert "scaleprobe run --dask-mpi 'my campaigns/g500.yaml'" in script
    assert ". '/opt/my env/bin/activate'" in script
    bash_syntax(script)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3600, "01:00:00"),
        ("45 min", "00:45:00"),
        ("1-12:00:00", "36:00:00"),
        ("0:05:00", "00:05:00"),
        (59.2, "00:01:00"),
        ("2 h", "02:00:00"),
    ],
)
def test_time_limits(value, expected):
    script = render_slurm_script("s.yaml", nodes=1, ppn=1, walltime=value)
    assert f"#SBATCH -t {expected}" in script


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 0}, "nodes must be a positive integer, got 0"),
        ({"ppn": 1.5}, "ppn must be a positive integer"),
        ({"walltime": "soon"}, "walltime"),
        ({"walltime": 0}, "walltime must be at least one second"),
        ({"queue": "batch; rm -rf /"}, "queue must be a word"),
        ({"account": "a b"}, "account must be a word"),
        ({"dask_ranks": 2}, "dask_ranks must be at least 3"),
        ({"mpi": "pmi2 --x"}, "mpi must be an srun --mpi plugin"),
        ({"extra_directives": "--mem=8G"}, "extra_directives must be a list"),
        ({"extra_directives": ["--a\nrm x"]}, "single-line strings"),
        ({"scheduler_file": "it's.json"}, "scheduler_file must be a path without"),
        ({"python_env": ""}, "python_env must be"),
        ({"setup": "module load x"}, "setup must be a list"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    arguments = {"nodes": 2, "ppn": 2, "walltime": "1 h", **kwargs}
    with pytest.raises(ValueError, match=message):
        render_slurm_script("s.yaml", **arguments)


@pytest.mark.slurm
def test_sbatch_accepts_the_script(tmp_path, slurm):
    """sbatch --test-only parses the directives without queuing a job."""
    path = tmp_path / "job.sbatch"
    path.write_text(
        render_slurm_script(str(tmp_path / "s.yaml"), nodes=1, ppn=1, walltime="5 min")
    )
    result = slurm.run("sbatch", "--test-only", str(path))
    assert result.returncode == 0, result.stderr
