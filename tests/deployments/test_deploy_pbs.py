"""The PBS script renderer."""

import pytest
from scaleprobe.deployments import render_pbs_script


def test_pbs_pro_directives_and_dask_mpi_launch(bash_syntax):
    script = render_pbs_script(
        "g500.yaml",
        nodes=4,
        ppn=2,
        walltime="2 h",
        queue="workq",
        account="proj42",
        python_env="conda:sp",
        extra_directives=["-l mem=8gb", "-m abe"],
    )
    lines = script.splitlines()
    for directive in (
        "#PBS -N scaleprobe",
        "#PBS -l select=4:ncpus=2:mpiprocs=2",
        "#PBS -l place=scatter:excl",
        "#PBS -l walltime=02:00:00",
        "#PBS -q workq",
        "#PBS -A proj42",
        "#PBS -j oe",
        "#PBS -l mem=8gb",
        "#PBS -m abe",
    ):
        assert directive in lines
    assert lines.index("#PBS -m abe") < lines.index("set -euo pipefail")
    assert "conda activate sp" in lines
    assert 'cd "${PBS_O_WORKDIR:-.}"' in lines
    # every Dask rank on the first host, however few slots a chunk has
    assert (
        'mpiexec -n 3 -host "$(head -n 1 "$PBS_NODEFILE"):3" scaleprobe run '
        "--dask-mpi g500.yaml"
    ) in lines
    bash_syntax(script)


def test_hosts_may_be_shared_when_asked():
    script = render_pbs_script(
        "g500.yaml", nodes=2, ppn=1, walltime="1 h", exclusive=False
    ).splitlines()
    assert "#PBS -l place=scatter" in script
    assert "excl" not in "\n".join(script)
    with pytest.raises(ValueError, match="walltime is needed"):
        render_pbs_script("g500.yaml", nodes=2, ppn=1)


def test_torque_syntax_and_scheduler_file(bash_syntax):
    script = render_pbs_script(
        "g500.yaml",
        nodes=2,
        ppn=16,
        walltime=1800,
        select_syntax=False,
        scheduler_file="sched.json",
        dask_ranks=5,
    )
    assert "#PBS -l nodes=2:ppn=16" in script
    assert "#PBS -n" in script.splitlines()  # Torque's node-exclusive job
    assert "#PBS -q" not in script
    assert "#PBS -l walltime=00:30:00" in script
    assert (
        'mpiexec -n 4 -host "$(head -n 1 "$PBS_NODEFILE"):4" dask-mpi '
        "--scheduler-file sched.json --worker-class distributed.Worker "
        "--worker-options '{\"death_timeout\": 300}' &"
    ) in script
    assert "scaleprobe run --scheduler-file sched.json g500.yaml" in script
    bash_syntax(script)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": -1}, "nodes must be a positive integer"),
        ({"ppn": True}, "ppn must be a positive integer"),
        ({"queue": "q 1"}, "queue must be a word"),
        ({"walltime": "forever"}, "walltime"),
        ({"extra_directives": "-m abe"}, "extra_directives must be a list"),
        ({"extra_directives": ["-m abe\nrm -rf ~"]}, "single-line strings"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        render_pbs_script(
            "g500.yaml", **{"nodes": 1, "ppn": 1, "walltime": 60, **kwargs}
        )
