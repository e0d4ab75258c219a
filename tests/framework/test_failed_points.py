"""A sweep whose points fail: the terminal gets one line per failed point and one
closing line naming them, never the ranks' standard error, which goes to each
point's log; ``show`` lists every failed point with its error and its log."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SCALEPROBE = str(Path(sys.executable).parent / "scaleprobe")


@pytest.mark.slow
@pytest.mark.mpi
def test_failed_points_are_one_line_each_and_their_output_goes_to_their_logs(
    tmp_path,
):
    spec = tmp_path / "crash.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "crash",
                "kernel": "commbench.fault",
                "params": {"behaviour": "crash"},
                "sweep": {"nodes": [2, 3], "run": 1},
                "throttle": {"mode": "none"},
                "output": "crash.zarr",
                "timeout": 120,
            }
        )
    )
    done = subprocess.run(
        [SCALEPROBE, "run", str(spec), "--workers", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    # every launch failed: the run measured nothing a script could go on with
    assert done.returncode == 1, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    # every line is scaleprobe's: the crashing ranks' stderr is not on the terminal
    assert all(line.startswith("scaleprobe") for line in lines if line.strip()), lines
    failed = [line for line in lines if line.startswith("scaleprobe: failed: nodes=")]
    assert len(failed) == 2, lines
    for line in failed:
        # the line of the error that says why, then where the rest is
        assert ": exit code " in line
        assert ": fault kernel: crashing on purpose (log: " in line
        log = Path(line.split("(log: ")[1].rstrip(")")).read_text()
        output = log.split("# ---- stderr ----\n")[1]
        rest = [text for text in output.splitlines()[1:] if text.strip("=# -")]
        assert any("BAD TERMINATION" in text for text in rest), log
        # mpiexec's report of the crash is in the log only
        assert not any(text in done.stderr for text in rest), rest
    store = tmp_path / "crash.zarr"
    assert lines[-1] == (
        f"scaleprobe: 2 of 2 points failed: first nodes=2 ppn=1 bandwidth=100 "
        f"run=0: {lines[-1].split('run=0: ', 1)[1].split('; see')[0]}; see "
        f"`scaleprobe show {store}` for each error and its log"
    )
    assert "exit code" in lines[-1]
    shown = subprocess.run(
        [SCALEPROBE, "show", str(store)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    start = shown.index("points that did not succeed (2):")
    listed = shown[start + 1 : start + 3]
    assert [line.split(":")[0].strip() for line in listed] == [
        "nodes=2 ppn=1 bandwidth=100 run=0",
        "nodes=3 ppn=1 bandwidth=100 run=0",
    ]
    for line in listed:
        log = tmp_path / line.split("(log: ")[1].rstrip(")")
        assert log.is_file()
