"""A program built against Open MPI, launched inside SLURM as an srun step.

The srun plugin follows the program's MPI: ``--mpi=pmix`` for Open MPI (under
``--mpi=pmi2``, the MPICH plugin, Debian's Open MPI cannot start). The
private cluster's slurmd share one host, and their PMIx servers one ``/tmp``: a
step on one node is what it can run with PMIx.
"""

from __future__ import annotations

import dask
import pytest
from _openmpi import NEEDS_OPENMPI, build_program
from scaleprobe.framework.launch import launch_point
from scaleprobe.framework.launcher import check_launcher
from scaleprobe.framework.planning import plan
from scaleprobe.framework.settings import LaunchSettings
from scaleprobe.framework.spec import load_spec

pytestmark = [pytest.mark.slurm, pytest.mark.mpi, NEEDS_OPENMPI]


def test_an_open_mpi_program_gets_the_pmix_plugin(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    program = build_program(tmp_path)
    spec = load_spec(
        {
            "name": "srun-openmpi",
            "kernel": "external",
            "params": {
                "command": f"{{mpiexec}} -n {{ranks}} {program}",
                "parser": "json",
            },
            "sweep": {"nodes": [1], "ppn": [2]},
            "throttle": {"mode": "none"},
            "timeout": 120,
        }
    )
    point = plan(spec)[0]
    with dask.config.set({"scaleprobe.launch.launcher": "srun"}):
        settings = check_launcher(spec, LaunchSettings.from_config())
    assert settings.program.family == "openmpi"
    result = launch_point(spec, point, settings=settings)
    assert result["command"][:2] == ["srun", "--mpi=pmix"]
    assert result["status"] == "ok", result["error"]
    assert result["record"]["placement"]["ranks"] == 2
    # the MPICH plugin: the program cannot start, and the point says so
    mpich = LaunchSettings(mpiexec=settings.mpiexec, launcher="srun")
    result = launch_point(spec, point, settings=mpich)
    assert result["command"][:2] == ["srun", "--mpi=pmi2"]
    assert result["status"] == "failed"
    assert result["error"].startswith("exit code ")
