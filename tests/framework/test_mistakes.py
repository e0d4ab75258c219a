"""The common mistakes of a new user: exit code 2 and one line that says what was
wrong and what to do, checked before any work is done, never a traceback."""

import pytest
import yaml
from scaleprobe.framework.cli import main
from scaleprobe.framework.store import ResultStore
from test_store import _campaign, _result


def _store(tmp_path, name="demo.zarr", failed=()):
    store = ResultStore(tmp_path / name)
    store.lock.acquire()
    store.start(_campaign())
    for nodes, bandwidth in ((1, 100), (2, 50), (1, 50), (2, 100)):
        if (nodes, bandwidth) in failed:
            result = _result(nodes, bandwidth, status="failed")
            result["error"] = (
                "exit code 1: Traceback (most recent call last):\n  File x\n"
                "ValueError: iterations must be at least 1, got -5"
            )
            result["stderr"] = "rank 0: Traceback...\nrank 1: Traceback...\n"
        else:
            result = _result(nodes, bandwidth)
        store.write_point(result)
    store.consolidate()
    store.lock.release()
    return store


def _one_line(capsys, code):
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, captured.err
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    assert lines[0].startswith("scaleprobe: error: "), lines[0]
    return lines[0].removeprefix("scaleprobe: error: "), captured.out


def test_a_results_store_given_to_project_says_how_to_make_a_model_file(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    _store(tmp_path)
    line, _ = _one_line(capsys, main(["project", "demo.zarr", "--nodes", "64"]))
    assert line == (
        "demo.zarr is a results store; make a model file with `scaleprobe fit "
        "demo.zarr --output models.json`, then project that"
    )
    (tmp_path / "spec.yaml").write_text("name: x\n")
    line, _ = _one_line(capsys, main(["project", "spec.yaml", "--nodes", "64"]))
    assert line.startswith("spec.yaml is a YAML file (a spec?), not a model file")


@pytest.mark.parametrize("metric", ["status", "error"])
def test_show_refuses_a_text_variable_as_a_metric(tmp_path, capsys, metric):
    store = _store(tmp_path)
    line, _ = _one_line(capsys, main(["show", store.path, "--metric", metric]))
    assert line.startswith(f"{store.path}: {metric!r} is text, not a measured number")
    assert line.endswith(
        "metrics: bytes_sent, frontier, launch_time, load, returncode, run_time, "
        "time, valid"
    )


@pytest.mark.parametrize(
    ("nodes", "expected"),
    [
        (
            "64:16",
            "--nodes 64:16: START 64 is above STOP 16; the range goes upwards, "
            "write 16:64",
        ),
        ("2.5", "--nodes 2.5: 2.5 is not a whole number; --nodes counts, e.g. 2"),
        ("4:64:2.5", "--nodes 4:64:2.5: 6.5 is not a whole number"),
        ("0,4", "--nodes '0,4': the values must be positive numbers"),
        ("four", "--nodes 'four': use positive numbers as START:STOP"),
    ],
)
def test_node_counts_are_checked_before_the_model_file_is_read(
    tmp_path, capsys, nodes, expected
):
    model_file = tmp_path / "models.json"
    model_file.write_text("not a model file")  # read only after the arguments
    line, out = _one_line(capsys, main(["project", str(model_file), "--nodes", nodes]))
    assert line.startswith(expected), line
    assert out == ""


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        (
            "--link-bandwidth",
            "100",
            "--link-bandwidth 100 needs a unit, e.g. '100 Gbit/s'",
        ),
        ("--latency", "1", "--latency 1 needs a unit, e.g. '1 us'"),
        ("--link-bandwidth", "100 Gbps/s", "--link-bandwidth '100 Gbps/s': unknown"),
        ("--latency", "1 parsec", "--latency '1 parsec': unknown duration unit"),
        ("--bandwidth", "1 Gbit/s", "--bandwidth '1 Gbit/s': --bandwidth takes"),
        ("--bandwidth", "150", "--bandwidth 150: 150 % is above the whole link"),
        ("--plot", "x.jpg", "--plot x.jpg: must end in .png or .svg (the format"),
        ("--output", "p.txt", "--output p.txt: must end in .nc, .zarr or .csv"),
    ],
)
def test_project_options_are_checked_before_any_work(
    tmp_path, capsys, option, value, expected
):
    model_file = tmp_path / "models.json"
    model_file.write_text("not a model file")
    argv = ["project", str(model_file), "--nodes", "4:64", option, value]
    line, out = _one_line(capsys, main(argv))
    assert line.startswith(expected), line
    assert out == ""  # refused before any table is printed


def test_a_misspelt_named_rule_is_refused_by_plan_with_the_named_rules(
    tmp_path, capsys
):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "rules",
                "kernel": "commbench.compute",
                "sweep": {"nodes": [1, 2]},
                "admissible": "power_of_2",
            }
        )
    )
    line, _ = _one_line(capsys, main(["plan", str(spec)]))
    assert line == (
        "spec key 'admissible': unknown rule 'power_of_2'; did you mean "
        "'power_of_two'? named rules: any, power_of_two, square, two_p_squared; or "
        "write an expression over nodes, ppn, ranks, e.g. 'is_power_of_two(nodes)'"
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["fit", "{store}", "--output", "m.txt"], "--output m.txt: must end in .json"),
        (["report", "{store}", "--output", "r.pdf"], "--output r.pdf: must end in"),
        (["fit", "{store}", "--model", "trafic"], "unknown model 'trafic'; did you"),
    ],
)
def test_fit_and_report_outputs_are_checked_before_fitting(
    tmp_path, capsys, monkeypatch, argv, expected
):
    monkeypatch.chdir(tmp_path)
    store = _store(tmp_path)
    argv = [a.format(store=store.path) for a in argv]
    line, out = _one_line(capsys, main(argv))
    assert line.startswith(expected), line
    assert out == ""


def test_show_lists_failed_points_with_their_error_and_log(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    store = _store(tmp_path, failed=((2, 50), (1, 100)))
    assert main(["show", "demo.zarr"]) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index("points that did not succeed (2):")
    logs = sorted(
        f"demo.logs/{r['key']}.log" for r in store.results() if r["status"] == "failed"
    )
    lines = out[start + 1 : start + 3]
    assert lines[0].startswith(
        "  nodes=1 ppn=1 bandwidth=100 run=0: failed: exit code 1: ValueError: "
        "iterations must be at least 1, got -5  (log: demo.logs/"
    )
    assert lines[1].startswith("  nodes=2 ppn=1 bandwidth=50 run=0: failed: ")
    assert sorted(line.split("(log: ")[1].rstrip(")") for line in lines) == logs
    # the logs hold the launches' whole standard error
    assert "rank 1: Traceback" in (tmp_path / logs[0]).read_text()
