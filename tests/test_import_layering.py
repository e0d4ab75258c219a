"""The import layering the design asks for, enforced.

Kernels run in every MPI rank: they may import the standard library, numpy, scipy,
mpi4py and their own package, never Dask, xarray, pandas or matplotlib (each of those
costs every rank start-up time and resident memory that ends up in ``peak_rss``).
Rendering a deployment script needs none of them either, and ``models/`` never imports
mpi4py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

FORBIDDEN_IN_KERNELS = ("dask", "distributed", "xarray", "pandas", "matplotlib")
# Third-party packages the models may import, loaded once before the forks.
HEAVY = ("numpy", "scipy", "pandas", "xarray", "sklearn", "dask", "distributed")

# Imports each named module in a forked copy of an interpreter that has loaded nothing
# but the standard library (as fresh as a new interpreter, at a fraction of the cost),
# and prints, per module, the forbidden modules it brought in.
_PROBE = textwrap.dedent(
    """
    import importlib, json, os, sys
    names, forbidden = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    for name in json.loads(sys.argv[3]):
        importlib.import_module(name)
    report = {"preloaded": [m for m in forbidden if m in sys.modules]}
    for name in names:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                importlib.import_module(name)
                found = [m for m in forbidden if m in sys.modules]
            except BaseException as exc:
                found = [f"import failed: {type(exc).__name__}: {exc}"]
            os.write(write, json.dumps(found).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read) as pipe:
            report[name] = json.loads(pipe.read() or '["no answer"]')
        os.waitpid(pid, 0)
    print(json.dumps(report))
    """
)


def _modules_below(package: str) -> list[str]:
    """Every module of ``package``, found on disk (importing would taint the test)."""
    spec = importlib.util.find_spec(package)
    names = []
    for location in spec.submodule_search_locations:
        for folder, subfolders, files in os.walk(location):
            subfolders[:] = sorted(
                d
                for d in subfolders
                if os.path.isfile(os.path.join(folder, d, "__init__.py"))
            )
            relative = os.path.relpath(folder, location)
            prefix = (
                package
                if relative == "."
                else f"{package}.{relative.replace(os.sep, '.')}"
            )
            for file in sorted(files):
                if file == "__main__.py" or not file.endswith(".py"):
                    continue
                names.append(
                    prefix if file == "__init__.py" else f"{prefix}.{file[:-3]}"
                )
    return names


def _probe(names: list[str], forbidden, preload=()) -> dict:
    """Per module of ``names``, the ``forbidden`` modules importing it loads, in a
    fork of an interpreter that has imported only ``preload`` (third-party
    packages the check allows, so that each fork does not load them again)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    argv = [json.dumps(names), json.dumps(list(forbidden)), json.dumps(list(preload))]
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    ).stdout
    report = json.loads(out)
    assert report.pop("preloaded") == [], (
        "a preloaded package brought in a forbidden one"
    )
    return report


@pytest.mark.slow
def test_every_kernel_module_imports_only_the_kernel_layer():
    names = _modules_below("scaleprobe.kernels")
    assert "scaleprobe.kernels.comm.instrumented" in names
    assert "scaleprobe.kernels.units" in names
    report = _probe(names, FORBIDDEN_IN_KERNELS)
    offenders = {name: found for name, found in report.items() if found}
    assert offenders == {}
    assert set(report) == set(names)


@pytest.mark.parametrize(
    "module",
    ["scaleprobe.deployments", "scaleprobe.framework", "scaleprobe.framework.units"],
)
def test_light_entry_points_do_not_load_the_scheduler_or_xarray(module):
    report = _probe([module], ("distributed", "xarray", "pandas", "matplotlib"))
    assert report == {module: []}


def test_rendering_a_deployment_script_stays_light():
    report = _probe(
        ["scaleprobe.deployments.slurm", "scaleprobe.deployments.pbs"],
        ("distributed", "xarray", "pandas", "matplotlib"),
    )
    assert report == {
        "scaleprobe.deployments.slurm": [],
        "scaleprobe.deployments.pbs": [],
    }


@pytest.mark.slow
def test_no_model_module_imports_mpi4py():
    # every module, not only the package's lazy entry point
    names = _modules_below("scaleprobe.models")
    assert "scaleprobe.models.fim.model" in names
    report = _probe(names, ("mpi4py",), preload=HEAVY)
    assert {name: found for name, found in report.items() if found} == {}


@pytest.mark.parametrize(
    "module",
    [
        "scaleprobe.framework.cli",
        "scaleprobe.framework.runner",
        "scaleprobe.framework.store",
        "scaleprobe.framework.cluster",
    ],
)
def test_the_command_and_the_sweep_load_the_scheduler_only_to_measure(module):
    # Planning, storing and the command line import the distributed scheduler,
    # scikit-learn and matplotlib only when a sweep measures or a model is fitted.
    report = _probe([module], ("distributed", "sklearn", "matplotlib"))
    assert report == {module: []}


def test_the_probe_catches_a_heavy_import():
    # The checks above could not fail if the probe never saw anything.
    report = _probe(["scaleprobe.framework._execute"], FORBIDDEN_IN_KERNELS)
    assert "distributed" in report["scaleprobe.framework._execute"]
    # and preloading the models' packages does not hide an import of mpi4py (no
    # scaleprobe module imports it at its top: kernels import it in main)
    assert _probe(["mpi4py.MPI"], ("mpi4py",), preload=HEAVY) == {
        "mpi4py.MPI": ["mpi4py"]
    }
