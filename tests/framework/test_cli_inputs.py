"""Every mistake the command line can meet is one line and the right exit code, and
`scaleprobe plan` checks a sweep without writing or launching anything."""

import contextlib
import os
import subprocess

import pytest
import xarray as xr
import yaml
from _system import missing
from scaleprobe.framework._cli_inputs import load_results
from scaleprobe.framework.cli import main
from scaleprobe.framework.runner import prepare_sweep
from scaleprobe.framework.store import ResultStore
from test_store import _campaign, _result


def _spec(tmp_path, **extra):
    raw = {
        "name": "inputs",
        "kernel": "commbench.fault",
        "sweep": {"nodes": [1, 2], "run": 2},
        "throttle": {"mode": "none"},
        "output": "results/inputs.zarr",
    }
    raw.update(extra)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _tree(folder):
    return sorted(
        os.path.relpath(os.path.join(root, name), folder)
        for root, dirs, files in os.walk(folder)
        for name in dirs + files
    )


def _one_line(capsys, code, expected_code, start):
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == expected_code, captured.err
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(start), lines[0]
    return lines[0]


def test_plan_lists_the_points_and_the_first_command_and_writes_nothing(
    tmp_path, capsys
):
    spec = _spec(tmp_path, kernel="commbench.pingpong", throttle={"mode": "emulated"})
    before = _tree(tmp_path)
    assert main(["plan", str(spec)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "campaign inputs (kernel commbench.pingpong, throttle emulated)"
    assert out[1] == f"output {tmp_path}/results/inputs.zarr: new campaign"
    assert out[2] == "points: 2 in the campaign, 0 stored, 2 to measure"
    assert out[3].startswith("left out: 2 admissible points with fewer than 2 ranks")
    assert out[4] == f"first point: {out[7].split(None, 1)[1]}"
    assert "SCALEPROBE_LINK=" in out[5]
    assert " -n 2 " in out[5]
    assert out[5].strip().startswith(f"cd {os.getcwd()} && env ")
    assert [line.split()[0] for line in out[7:9]] == ["1", "2"]
    assert _tree(tmp_path) == before


def test_plan_counts_what_a_resumed_run_would_retry(tmp_path, capsys):
    spec = _spec(
        tmp_path,
        kernel="commbench.compute",
        sweep={"nodes": [1, 2], "bandwidth": [100, 50]},
        throttle={"mode": "emulated"},
        output=str(tmp_path / "c.zarr"),
    )
    with prepare_sweep(spec, progress=False) as sweep:
        sweep.store.write_point(_result(1, 100))
        sweep.store.write_point(_result(2, 100, status="failed"))
    assert main(["plan", str(spec), "--retry", "failed"]) == 0
    out = capsys.readouterr().out
    assert (
        "points: 4 in the campaign, 1 stored, 3 to measure (1 of them again: failed)"
        in out.splitlines()
    )
    assert "stored without success" not in out  # the one failed point is retried
    assert main(["plan", str(spec)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == [
        "points: 4 in the campaign, 2 stored, 2 to measure",
        "stored without success: failed 1 (`--retry failed` measures them again)",
    ]
    other = _spec(
        tmp_path,
        kernel="commbench.compute",
        params={"total_work": 1000},
        sweep={"nodes": [1, 2], "bandwidth": [100, 50]},
        throttle={"mode": "emulated"},
        output=str(tmp_path / "c.zarr"),
    )
    code = main(["plan", str(other)])
    line = _one_line(capsys, code, 2, f"scaleprobe: error: {tmp_path}/c.zarr holds")
    assert "(params.total_work added (1000)); run with --new-campaign" in line
    assert main(["plan", str(other), "--new-campaign"]) == 0
    assert "4 to measure" in capsys.readouterr().out


@contextlib.contextmanager
def _read_only_folder(path):
    if os.geteuid() != 0:
        pytest.skip(missing("root, to mount a read-only tmpfs"))
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        pytest.skip(missing(f"a tmpfs mount (mount said: {done.stderr.strip()})"))
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@pytest.mark.parametrize("command", ["run", "plan"])
def test_an_output_that_cannot_be_created_is_one_line(tmp_path, capsys, command):
    spec = _spec(tmp_path)
    (tmp_path / "file").write_text("x")
    code = main([command, str(spec), "--output", str(tmp_path / "file" / "r.zarr")])
    _one_line(
        capsys,
        code,
        2,
        f"scaleprobe: error: {'output: ' if command == 'run' else ''}cannot create "
        f"the results {tmp_path}/file/r.zarr: {tmp_path}/file is a regular file",
    )
    code = main([command, str(_spec(tmp_path, output="/proc/scaleprobe/r.zarr"))])
    line = _one_line(capsys, code, 2, "scaleprobe: error: ")
    assert "/proc/scaleprobe/r.zarr" in line
    if command == "run":
        assert line.startswith("scaleprobe: error: spec key 'output': cannot ")
    spec_file = _spec(tmp_path, output=str(tmp_path / "spec.yaml"))
    code = main([command, str(spec_file)])
    line = _one_line(capsys, code, 2, "scaleprobe: error: ")
    assert line.endswith(
        "is not a scaleprobe store (no "
        f"{tmp_path}/spec.yaml.points/campaign.json): it would be "
        "overwritten; give another output"
    )
    assert (tmp_path / "spec.yaml").read_text().startswith("kernel:")  # intact
    with _read_only_folder(tmp_path / "ro") as ro:
        code = main([command, str(spec), "--output", str(ro / "r.zarr")])
        line = _one_line(capsys, code, 2, "scaleprobe: error: ")
        assert f"{ro} is not writable (read-only file system" in line


def _store_with_points(tmp_path):
    store = ResultStore(tmp_path / "c.zarr")
    store.lock.acquire()
    store.start(_campaign())
    store.write_point(_result(1, 100))
    store.write_point(_result(2, 50))
    store.lock.release()
    return store


def test_reading_commands_refuse_what_is_not_results_in_one_line(tmp_path, capsys):
    xr.Dataset({"a": ("x", [1, 2])}).to_zarr(tmp_path / "foreign.zarr", zarr_format=2)
    (tmp_path / "folder.zarr").mkdir()
    spec = _spec(tmp_path)
    cases = [
        (
            ["show", str(tmp_path / "foreign.zarr")],
            "foreign.zarr is not scaleprobe "
            "results (a Dataset without the 'status' of each point)",
        ),
        (
            ["show", str(tmp_path / "folder.zarr")],
            "folder.zarr is not scaleprobe results (it cannot be read as a Zarr store",
        ),
        (["show", str(tmp_path / "none.zarr")], "no scaleprobe results at"),
        (["fit", str(tmp_path / "foreign.zarr")], "foreign.zarr is not scaleprobe"),
        (["fit", str(spec)], f"{spec} is a YAML file (a spec?), not results"),
        (["run", str(spec), "--retry", "failed,ok"], "retry: 'ok' is not a status"),
    ]
    for argv, says in cases:
        line = _one_line(capsys, main(argv), 2, "scaleprobe: error: ")
        assert says in line, (argv, line)


def test_a_store_whose_consolidated_dataset_is_missing_is_rebuilt_for_fit(tmp_path):
    store = _store_with_points(tmp_path)
    assert not os.path.exists(store.path)
    ds = load_results(store.path)
    assert ds.attrs["points"] == 2
    assert os.path.exists(store.path)


def test_report_refuses_an_unwritable_output_before_fitting(tmp_path, capsys):
    store = _store_with_points(tmp_path)
    with _read_only_folder(tmp_path / "ro") as ro:
        code = main(["report", store.path, "--output", str(ro / "report.html")])
        line = _one_line(capsys, code, 2, "scaleprobe: error: --output ")
        assert f"cannot write in {ro} (read-only file system" in line
    assert not os.path.exists(store.path)  # nothing was read, let alone fitted


def test_an_unexpected_error_is_one_line_unless_debugging(
    tmp_path, capsys, monkeypatch
):
    def broken(path):
        raise RuntimeError("the disk controller is on fire\nsecond line")

    monkeypatch.setattr("scaleprobe.framework.store.open_results", broken)
    code = main(["show", str(tmp_path)])
    line = _one_line(capsys, code, 1, "scaleprobe: failed: RuntimeError: the disk")
    assert line.endswith("(run with --debug for the traceback)")
    with pytest.raises(RuntimeError, match="on fire"):
        main(["--debug", "show", str(tmp_path)])


def test_oversubscription_is_a_one_line_warning(tmp_path, capsys):
    cores = os.cpu_count()
    spec = _spec(tmp_path, sweep={"nodes": [1, 2 * cores]})
    assert main(["plan", str(spec)]) == 0
    warning = [line for line in capsys.readouterr().err.splitlines() if line]
    assert warning == [
        f"scaleprobe: warning: 1 point in throttle mode 'none' runs up to {2 * cores} "
        f"ranks on a host of {cores} cores; ranks that share a core wait for each "
        "other and the wall-clock times measure the host more than the program: keep "
        "nodes x ppn x threads at most the cores, place ranks on real nodes "
        "(scaleprobe.launch.hostfile, srun), or use throttle mode 'emulated'"
    ]
