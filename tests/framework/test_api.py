"""The Python API of ``scaleprobe``: a small public surface, imported lazily, whose
documented calls work in a plain script without a ``__main__`` guard and inside a
running event loop, as in a notebook."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import scaleprobe
import scaleprobe.framework
from _docblocks import blocks

ROOT = Path(__file__).resolve().parents[2]


def test_the_public_surface_is_small_and_curated():
    calls = ["fit", "open", "project", "report", "run"]
    assert scaleprobe.__all__ == calls
    assert dir(scaleprobe) == ["__version__", *calls]
    framework = scaleprobe.framework
    public = [name for name in dir(framework) if not name.startswith("_")]
    assert public == sorted(framework.__all__)
    for stray in ("annotations", "importlib", "sys", "types"):
        assert stray not in framework.__all__
        assert stray not in dir(framework)


def test_importing_scaleprobe_imports_none_of_the_heavy_packages():
    code = (
        "import sys, scaleprobe; scaleprobe.run; "
        "print(sorted(m for m in ('dask', 'distributed', 'xarray', 'pandas') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_project_reads_its_quantities_with_the_one_unit_parser(tmp_path):
    with pytest.raises(ValueError, match="link_bandwidth 100 needs a unit"):
        scaleprobe.project(tmp_path / "m.json", nodes=[4], link_bandwidth="100")
    with pytest.raises(ValueError, match=r"latency 1 needs a unit, e.g. '1 us'"):
        scaleprobe.project(tmp_path / "m.json", nodes=[4], latency=1)
    with pytest.raises(ValueError, match="nodes 64:16: START 64 is above STOP 16"):
        scaleprobe.project(tmp_path / "m.json", nodes="64:16")
    with pytest.raises(ValueError, match="no model file at"):
        scaleprobe.project(tmp_path / "m.json", nodes="4:16")


def _readme_blocks():
    found = blocks(ROOT / "README.md")
    spec = next(b for b in found if b.marker == "file" and b.argument == "tour.yaml")
    script = next(b for b in found if b.marker == "script")
    return spec, script


@pytest.mark.slow
@pytest.mark.mpi
def test_the_readme_python_example_runs_as_a_script_without_a_guard(tmp_path):
    spec, script = _readme_blocks()
    assert "__main__" not in script.text
    (tmp_path / "tour.yaml").write_text(spec.text)
    (tmp_path / "example.py").write_text(script.text)
    # a fresh folder: the script's run measures the whole campaign, starting the
    # embedded Dask cluster (the cluster whose spawned workers once imported the
    # script again and found its own run holding the store)
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "in use by another scaleprobe run" not in done.stderr
    assert "Traceback" not in done.stderr
    ds = scaleprobe.open(tmp_path / "results" / "tour.zarr")
    assert (ds.status.values == "ok").sum() == 16
    assert "scaleprobe trusts" in done.stdout or "trusts no model" in done.stdout
    assert (tmp_path / "models.json").is_file()
    assert "4096" in done.stdout  # the projection's last node count, printed


@pytest.mark.slow
@pytest.mark.mpi
def test_the_calls_work_inside_a_running_event_loop_as_in_a_notebook(tmp_path):
    # A notebook runs each cell in the thread of the kernel's running event loop.
    code = textwrap.dedent(
        """
        import asyncio, scaleprobe

        spec = {
            "name": "loop",
            "kernel": "commbench.compute",
            "params": {"total_work": 2000},
            "sweep": {"nodes": [1, 2], "run": 1},
            "output": "loop.zarr",
        }

        async def cell():
            ds = scaleprobe.run(spec, progress=False)
            return int((ds.status.values == "ok").sum())

        print("ok points:", asyncio.run(cell()))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ok points: 2" in done.stdout
