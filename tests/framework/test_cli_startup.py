"""The command starts light: help, ``plan`` and ``show`` load no heavy library.

Each command line runs in its own interpreter, which reports at exit which of the
heavy libraries it had imported: scikit-learn, matplotlib and Dask's distributed
scheduler (``show`` may open a store with xarray). Start-up times are printed by
``tests/benchmarks/bench_cli_startup.py``, not asserted here.
"""

import json
import os
import subprocess
import sys
import time

import pytest
from scaleprobe.framework.runner import prepare_sweep

HEAVY = ("sklearn", "matplotlib", "distributed")

# Runs the command as the console script does and reports, at exit, which of the
# modules named in the first argument were imported.
WRAPPER = """
import atexit, json, sys
names = json.loads(sys.argv.pop(1))
def report():
    found = [name for name in names if name in sys.modules]
    sys.__stderr__.write("IMPORTED " + json.dumps(found) + "\\n")
atexit.register(report)
exec(sys.argv.pop(1))
from scaleprobe.framework.cli import main
sys.argv[0] = "scaleprobe"
sys.exit(main())
"""

SPEC = """\
name: light
kernel: commbench.compute
params: {{total-work: 1000}}
sweep: {{nodes: [1, 2], bandwidth: [100, 50], run: 2}}
throttle: {{mode: emulated}}
output: {output}
"""


def imported(*argv, before="", names=HEAVY) -> tuple[int, list[str], str]:
    """Run ``scaleprobe ARGV`` in a new interpreter; its exit code, the ``names`` it
    imported and its standard output."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, json.dumps(list(names)), before, *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("IMPORTED ")]
    assert len(lines) == 1, done.stderr[-2000:]
    return done.returncode, json.loads(lines[0][len("IMPORTED ") :]), done.stdout


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A finished store of eight points, written through the store's own API."""
    folder = tmp_path_factory.mktemp("light")
    spec = folder / "spec.yaml"
    spec.write_text(SPEC.format(output=folder / "stored.zarr"))
    with prepare_sweep(str(spec), progress=False) as sweep:
        for number, point in enumerate(sweep.todo):
            now = time.time()
            sweep.store.write_point(
                {
                    "key": point.key,
                    "coords": dict(point.coords),
                    "status": "ok",
                    "error": "",
                    "record": {"metrics": {"time": 1.0 + number}},
                    "returncode": 0,
                    "started": now,
                    "finished": now,
                    "launch_time": 0.5,
                    "command": ["true"],
                }
            )
    return str(folder / "stored.zarr")


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        *([command, "--help"] for command in ("run", "plan", "show", "demo")),
        *([command, "--help"] for command in ("fit", "project", "report")),
    ],
    ids=" ".join,
)
def test_help_imports_no_heavy_library(argv):
    code, found, out = imported(*argv)
    assert code == 0
    assert out.startswith(("usage: scaleprobe", "scaleprobe "))
    assert found == []


def test_help_imports_neither_the_models_nor_xarray_nor_numpy():
    code, found, _ = imported("--help", names=("scaleprobe.models", "xarray", "numpy"))
    assert (code, found) == (0, [])


def test_plan_imports_no_heavy_library(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(output=tmp_path / "planned.zarr"))
    code, found, out = imported("plan", str(spec))
    assert code == 0
    assert "points: 8 in the campaign, 0 stored, 8 to measure" in out
    assert found == []
    # nor xarray: planning reads no Dataset
    assert imported("plan", str(spec), names=("xarray",))[1] == []


def test_show_imports_no_heavy_library(store):
    code, found, out = imported("show", store)
    assert code == 0
    assert "points: ok 8" in out
    assert found == []
    # the consolidated store written by that first show is opened without them too
    assert os.path.isdir(store)
    assert imported("show", store)[1] == []


def test_the_probe_sees_a_heavy_import():
    # The checks above could not fail if the report missed imports.
    code, found, _ = imported("--help", before="import distributed")
    assert (code, found) == (0, ["distributed"])
