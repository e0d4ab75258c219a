"""``scaleprobe demo`` as a new user runs it: it measures, fits, projects, writes the
report and its figures and names them, speaks only in its own lines, and the spec it
writes reproduces it."""

import subprocess
import sys
from pathlib import Path

import pytest
from scaleprobe.framework.cli import main

SCALEPROBE = str(Path(sys.executable).parent / "scaleprobe")


@pytest.mark.slow
@pytest.mark.mpi
def test_the_demo_writes_its_report_and_figures_and_its_spec_reproduces_it(
    tmp_path, capsys
):
    folder = tmp_path / "demo"
    done = subprocess.run(
        [SCALEPROBE, "demo", "--directory", str(folder)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # no raw Dask log lines, no tracebacks: every line of standard error is ours
    stray = [
        line
        for line in done.stderr.splitlines()
        if line.strip() and not line.startswith("scaleprobe")
    ]
    assert stray == [], done.stderr[-3000:]
    out = done.stdout
    # the projection's columns name their units, the last one included
    header = next(line for line in out.splitlines() if "GTEPS" in line)
    for column in ("nodes", "bandwidth (%)", "time (s)", "90% interval (s)"):
        assert column in header, header
    assert "latency floor (s)" in header
    # a projection warning names its model
    for line in done.stderr.splitlines():
        if "latency floor" in line and "warning" in line:
            assert line.split("warning: ", 1)[1].split(":", 1)[0] in out, line
    # the report and the figures are written and their paths printed
    report = folder / "report.html"
    assert f"report:  {report}" in out
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    for name in ("projection.png", "extrapolation_error.png"):
        assert f"figure:  {folder / name}" in out
        assert (folder / name).read_bytes()[:4] == b"\x89PNG"
    # the spec it wrote points to what it measured: nothing left to measure
    assert main(["plan", str(folder / "demo.yaml")]) == 0
    plan = capsys.readouterr().out
    assert f"output {folder / 'demo.zarr'}: resumes the stored campaign" in plan
    assert "points: 24 in the campaign, 24 stored, 0 to measure" in plan
    assert "nothing to measure: every point is stored" in plan
