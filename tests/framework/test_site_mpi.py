"""A program built against the site's MPI: detected, launched by its own mpiexec.

Real processes throughout: a C program compiled with Debian's Open MPI ``mpicc``
(it links ``libmpi.so.40``), the venv's MPICH ``mpiexec`` (the ``mpich`` wheel), the
mpi4py wheel pointed at Open MPI with ``MPI4PY_LIBMPI``, Open MPI's own
``mpiexec``. A launcher of the other MPI runs every rank alone; that is refused
when the sweep is planned, and a launch that still does it is ``invalid``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import dask
import pytest
import yaml
from _openmpi import NEEDS_OPENMPI, OPENMPI_RUN, VENV_MPIEXEC, build_program
from scaleprobe.framework import SettingsError, open_results, run_sweep
from scaleprobe.framework.cli import main
from scaleprobe.framework.launch import launch_point
from scaleprobe.framework.launcher import check_launcher
from scaleprobe.framework.planning import plan
from scaleprobe.framework.settings import LaunchSettings
from scaleprobe.framework.sitempi import (
    binary_mpi,
    launcher_mpi,
    launchers_beside,
    library_mpi,
    python_mpi,
)
from scaleprobe.framework.spec import load_spec

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def openmpi_program(tmp_path_factory):
    """The C program of ``_openmpi``, compiled with Open MPI's mpicc."""
    return build_program(tmp_path_factory.mktemp("openmpi"))


def _stored_points(folder) -> list[dict]:
    points = [json.loads(path.read_text()) for path in folder.glob("*.json")]
    return [point for point in points if "coords" in point]


def _external(tmp_path, program, **extra):
    return {
        "name": "site-mpi",
        "kernel": "external",
        "params": {"command": f"{{mpiexec}} -n {{ranks}} {program}", "parser": "json"},
        "sweep": {"nodes": [1, 2], "ppn": [1]},
        "throttle": {"mode": "none"},
        "timeout": 120,
        "output": str(tmp_path / "out.zarr"),
        **extra,
    }


# ------------------------------------------------------------------ detection


@NEEDS_OPENMPI
def test_the_library_a_binary_links_is_recognised(openmpi_program):
    found = binary_mpi(openmpi_program)
    assert found.family == "openmpi"
    assert os.path.basename(found.library).startswith("libmpi.so.40")
    assert library_mpi(found.library).family == "openmpi"
    # a program linking no MPI links none
    assert binary_mpi("/bin/ls") is None


def test_the_venv_mpich_is_recognised_as_library_launcher_and_mpi4py():
    mpich = python_mpi()
    assert mpich.family == "mpich"
    assert mpich.name.startswith("MPICH ")
    assert library_mpi(mpich.library).family == "mpich"
    assert launcher_mpi(VENV_MPIEXEC).family == "mpich"
    assert launcher_mpi("/bin/true") is None
    assert VENV_MPIEXEC in launchers_beside(mpich.library, "mpich")


@NEEDS_OPENMPI
def test_mpi4py_pointed_at_open_mpi_is_recognised():
    # the mpi4py wheel loads the site's library where MPI4PY_LIBMPI names it:
    # the built-in kernels then run on Open MPI without rebuilding mpi4py. An
    # mpi4py built with Open MPI's mpicc is told the same way (python_mpi asks the
    # imported mpi4py for MPI_Get_library_version and the libmpi it loaded); this
    # test loads the real libmpi.so.40 rather than compiling mpi4py, which takes
    # minutes and a download of its source
    env = {**os.environ, "MPI4PY_LIBMPI": "libmpi.so.40"}
    found = python_mpi(sys.executable, env)
    assert found.family == "openmpi"
    assert found.name.startswith("Open MPI v")
    assert os.path.basename(found.library).startswith("libmpi.so.40")
    assert launcher_mpi(OPENMPI_RUN).family == "openmpi"
    assert OPENMPI_RUN in launchers_beside(found.library, "openmpi")


# ----------------------------------------------------------- refused at plan


@NEEDS_OPENMPI
def test_another_mpis_mpiexec_is_refused_at_plan_in_one_line(openmpi_program, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_external(tmp_path, openmpi_program)))
    done = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "scaleprobe"), "plan", spec],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DASK_SCALEPROBE__LAUNCH__MPIEXEC": VENV_MPIEXEC},
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        f"scaleprobe: error: setting 'scaleprobe.launch.mpiexec': {VENV_MPIEXEC} is "
        "MPICH"
    )
    assert "the program links Open MPI" in lines[0]
    assert f"DASK_SCALEPROBE__LAUNCH__MPIEXEC={OPENMPI_RUN}" in lines[0]
    assert not (tmp_path / "out.zarr").exists()


@NEEDS_OPENMPI
def test_without_a_setting_the_launcher_beside_the_library_is_taken(
    openmpi_program, tmp_path, capsys
):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(_external(tmp_path, openmpi_program)))
    assert main(["plan", str(spec)]) == 0
    out = capsys.readouterr().out
    assert f"mpiexec {OPENMPI_RUN} is Open MPI" in out
    assert "the program links Open MPI" in out
    # as root, Open MPI's launcher needs its consent variables: the replay has them
    if os.geteuid() == 0:
        assert "OMPI_ALLOW_RUN_AS_ROOT=1" in out


def test_a_python_program_on_the_venv_mpich_needs_no_change(tmp_path):
    spec = load_spec(
        {
            "name": "p",
            "kernel": "commbench.compute",
            "sweep": {"nodes": [2]},
            "throttle": {"mode": "none"},
        }
    )
    settings = LaunchSettings.from_config()
    checked = check_launcher(spec, settings)
    assert checked.mpiexec == settings.mpiexec
    assert (checked.program.family, checked.mpiexec_family) == ("mpich", "mpich")


# --------------------------------------------------------- run with its MPI


@NEEDS_OPENMPI
def test_the_open_mpi_program_runs_ok_under_its_own_mpiexec(
    openmpi_program, tmp_path, client
):
    spec = _external(tmp_path, openmpi_program)
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    assert ds.attrs["mpiexec"] == OPENMPI_RUN
    settings = yaml.safe_load(ds.attrs["launch_settings"])
    assert settings["program"]["family"] == "openmpi"
    points = _stored_points(tmp_path / "out.points")
    assert sorted(p["coords"]["nodes"] for p in points) == [1, 2]
    for point in points:  # the world each launch saw is the point's
        assert point["record"]["placement"]["ranks"] == point["coords"]["nodes"]
    assert open_results(spec["output"]).sizes["nodes"] == 2


@NEEDS_OPENMPI
def test_under_another_mpis_mpiexec_a_point_is_invalid_never_ok(
    openmpi_program, tmp_path
):
    # what a launch does when nothing checked the launcher (a program the
    # command hides behind a wrapper script, say): every rank runs alone
    spec = load_spec(_external(tmp_path, openmpi_program))
    point = next(p for p in plan(spec) if p.coords["nodes"] == 2)
    mpich = LaunchSettings.from_config()
    assert mpich.mpiexec_family == "mpich"
    result = launch_point(spec, point, settings=mpich)
    assert result["status"] == "invalid", result
    assert result["error"] == (
        "the program ran as 2 separate jobs of 1 rank but the point asks one job of "
        "2 ranks (was it launched by another MPI's mpiexec?)"
    )


@NEEDS_OPENMPI
def test_built_in_kernels_run_on_the_site_open_mpi(tmp_path, client):
    spec = {
        "name": "site-builtin",
        "kernel": "commbench.compute",
        "params": {"total_work": 50},
        "sweep": {"nodes": [1, 2], "ppn": [1]},
        "throttle": {"mode": "none"},
        "env": {"MPI4PY_LIBMPI": "libmpi.so.40"},
        "timeout": 120,
        "output": str(tmp_path / "builtin.zarr"),
    }
    mpich = {"scaleprobe.launch.mpiexec": VENV_MPIEXEC}
    with (
        dask.config.set(mpich),
        pytest.raises(SettingsError, match="the program links Open MPI v"),
    ):
        run_sweep(spec, client, progress=False)
    assert not (tmp_path / "builtin.zarr").exists()
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    assert ds.attrs["mpiexec"] == OPENMPI_RUN
    for point in _stored_points(tmp_path / "builtin.points"):
        assert point["command"][0] == OPENMPI_RUN
        seen = point["record"]["placement"]
        assert seen["ranks"] == point["coords"]["nodes"]
        assert seen["hosts"] == [socket.gethostname()]
