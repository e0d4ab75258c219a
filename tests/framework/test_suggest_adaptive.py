"""Adaptive campaigns: ``scaleprobe run SPEC --until ... --budget ...``, for real."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import signal
import subprocess
import sys
import urllib.request

import pytest
import yaml
from scaleprobe.framework.adaptive import (
    ROUND_REACH,
    adaptive_record,
    parse_until,
    round_picks,
    run_until,
    worthwhile_picks,
)
from scaleprobe.framework.cli import main
from scaleprobe.framework.store import ResultStore

pytestmark = pytest.mark.mpi

CLI = (sys.executable, "-m", "scaleprobe.framework.cli")


def _spec(tmp_path):
    return {
        "name": "compute",
        "kernel": "commbench.compute",
        "params": {"total_work": 400},
        "sweep": {"nodes": [1, 2, 4], "ppn": 1, "run": 2},
        "admissible": "power_of_two",
        "order": {"shuffle": False},
        "throttle": {"mode": "emulated"},
        "output": str(tmp_path / "compute.zarr"),
    }


def test_rounds_measure_suggested_points_and_a_rerun_resumes(tmp_path, client):
    spec = _spec(tmp_path)
    # an injected clock: every reading is 10 s later, so the 25 s budget lasts the
    # same rounds on a loaded machine as on an idle one: the first plans the 15 s
    # left after the sweep (what the points are predicted to cost), the second
    # finds the budget spent
    ticks = itertools.count(0.0, 10.0)
    campaign = run_until(
        spec, "width <= 1.01 at nodes=256", "25 s", client, clock=lambda: next(ticks)
    )
    assert len(campaign.rounds) == 2
    store = ResultStore(spec["output"])
    measured = {r["key"]: r["started"] for r in store.results()}
    added = sum(row["points"] for row in campaign.rounds)
    assert added > 0
    assert len(measured) == 6 + added  # the grid, then every round's points
    assert "budget is spent" in campaign.reason
    record = adaptive_record(spec["output"])
    assert record["goal"] == 1.01
    assert [r["width"] for r in record["rounds"]] == [
        r["width"] for r in campaign.rounds
    ]
    for row in record["rounds"]:
        assert row["lower"] < row["upper"]
        assert row["width"] == pytest.approx(row["upper"] / row["lower"], rel=1e-6)
    # The same command again loses and repeats nothing: it resumes.
    spent = itertools.chain([0.0], itertools.repeat(1000.0))
    run_until(
        spec, "width <= 1.01 at nodes=256", "1 s", client, clock=lambda: next(spent)
    )
    again = {r["key"]: r["started"] for r in store.results()}
    assert {k: again[k] for k in measured} == measured


def test_a_round_measures_the_picks_that_narrow_the_interval(tmp_path, client):
    from scaleprobe.framework import run_sweep
    from scaleprobe.framework.suggest import Budget, extension_spec, suggest

    spec = _spec(tmp_path)
    run_sweep(spec, client, progress=False)
    copy = tmp_path.with_name(tmp_path.name + "-copy")  # the store and its files
    shutil.copytree(tmp_path, copy)
    # the clock: the sweep took 10 s of the 2 minutes, the round 10 s; then the
    # budget is spent
    ticks = itertools.chain([0.0, 10.0, 20.0, 30.0], itertools.repeat(1e4))
    before = suggest(
        str(copy / "compute.zarr"),
        "nodes=256",
        Budget(110.0, "wall", "2 min"),
        reach=ROUND_REACH,
    )
    plan = before.design.plan
    worthwhile = worthwhile_picks(plan)
    assert 0 < len(worthwhile) < len(plan)  # repeats that narrow it little
    # the plan's new counts are measured once each, alone, before the next plan
    picks = round_picks(plan)
    new = sorted({plan[i].candidate.x for i in worthwhile if plan[i].candidate.new})
    assert new
    assert max(new) <= ROUND_REACH * 4  # one doubling beyond the grid's 1-4 nodes
    assert [plan[i].candidate.x for i in picks] == new
    expected, _ = extension_spec(before, str(copy / "next.yaml"), picks)
    assert sorted(p.coords["nodes"] for p in expected) == new
    campaign = run_until(
        spec, "width <= 1.01 at nodes=256", "2 min", client, clock=lambda: next(ticks)
    )
    assert campaign.rounds[0]["points"] == len(expected)
    measured = {r["key"] for r in ResultStore(spec["output"]).results()}
    assert {p.key for p in expected} <= measured
    # the record names the new counts, and the page and the CLI say so
    assert campaign.rounds[0]["new"] == new
    (row, *_) = adaptive_record(spec["output"])["rounds"]
    counts = ", ".join(f"{x:g}" for x in new)
    assert row["note"].startswith(f"one at each new count: {counts} nodes")


def test_a_count_whose_probe_failed_is_named_once_and_not_probed_again(
    tmp_path, client
):
    from scaleprobe.framework import run_sweep
    from scaleprobe.framework.planning import point_key

    spec = _spec(tmp_path)
    run_sweep(spec, client, progress=False)
    store = ResultStore(spec["output"])
    # the one new count a round may offer (up to 2x the grid's 4 nodes) timed out
    ok = next(r for r in store.results() if r["status"] == "ok")
    coords = {**ok["coords"], "nodes": 8, "run": 0}
    key = point_key(coords)
    store.write_point({"key": key, "coords": coords, "status": "timeout"})
    ticks = itertools.chain([0.0, 10.0, 20.0, 30.0], itertools.repeat(1e4))
    campaign = run_until(
        spec, "width <= 1.01 at nodes=256", "2 min", client, clock=lambda: next(ticks)
    )
    first, *later = campaign.rounds
    assert first["failed"] == {"8": ["timeout"]}
    assert first["points"] > 0  # it measured repeats
    assert "new" not in first
    assert later
    assert all("failed" not in row for row in later)
    results = store.results()
    assert {r["coords"]["nodes"] for r in results} == {1, 2, 4, 8}
    assert [r["status"] for r in results if r["coords"]["nodes"] == 8] == ["timeout"]
    (row, *_) = adaptive_record(spec["output"])["rounds"]
    # (after the note that no law held its check, when none did)
    assert row["note"].endswith(
        "not offered again, every run failed: 8 nodes (timeout)"
    )


def test_a_spent_budget_stops_after_the_sweep(tmp_path, client):
    spec = _spec(tmp_path)
    ticks = itertools.chain([0.0], itertools.repeat(1000.0))
    campaign = run_until(
        spec, "width <= 1.01 at nodes=256", "10 min", client, clock=lambda: next(ticks)
    )
    assert [row["points"] for row in campaign.rounds] == [0]
    assert "budget is spent" in campaign.reason
    assert len(ResultStore(spec["output"]).results()) == 6


def test_a_goal_already_met_measures_nothing_more(tmp_path, client):
    spec = _spec(tmp_path)
    # Twice the largest measured count: the interval there is 1.4-22x wide for 5-60 %
    # noise, also when no law holds its check (then about 2000x at 256 nodes).
    campaign = run_until(spec, "width <= 1000 at nodes=8", "1 h", client)
    assert len(campaign.rounds) == 1
    assert "the width at the target is" in campaign.reason
    assert len(ResultStore(spec["output"]).results()) == 6
    text = (tmp_path / "compute.adaptive.json").read_text()
    assert json.loads(text)["rounds"][0]["points"] == 0
    # The store's sweep page shows the interval at the target, round by round.
    from test_dashboard import _dom

    width = campaign.rounds[0]["width"]
    server = subprocess.Popen(
        [*CLI, "dashboard", spec["output"], "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        match = re.search(r"at (http://127\.0\.0\.1:\d+/scaleprobe) ", line)
        assert match, line + server.stderr.read()
        with urllib.request.urlopen(match.group(1) + "/data.json") as response:
            (grid,) = json.loads(response.read())["sweeps"]
        assert grid["adaptive"]["rounds"][0]["width"] == width
        html = _dom(match.group(1), tmp_path / "profile")
        assert "Interval at nodes=8 by round (goal: width &lt;= 1000)" in html
        assert f'data-width="{width}"' in html
        note = "no law held its check at 4 nodes: the width takes the uncalibrated"
        assert (note in html) == campaign.rounds[0]["unchecked"]
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=60)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--until", "width < 1.3 at nodes=8", "--budget", "1 h"], "width <= W"),
        (["--until", "width <= 0.9 at nodes=8", "--budget", "1 h"], "above 1"),
        (["--until", "width <= 1.3 at nodes=8"], "go together"),
        (
            [
                "--until",
                "width <= 1.3 at nodes=8",
                "--budget",
                "1 h",
                "--retry",
                "failed",
            ],
            "--retry does not go with --until",
        ),
        (
            ["--until", "width <= 1.3 at nodes=8", "--budget", "1 h", "--new-campaign"],
            "--new-campaign does not go with --until",
        ),
    ],
)
def test_bad_until_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    assert main(["run", str(tmp_path / "none.yaml"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]


def test_until_parses():
    assert parse_until("width<=2 at nodes=64") == (2.0, "nodes=64")


def test_until_runs_on_the_cluster_and_output_it_is_given(tmp_path, client, capsys):
    spec = _spec(tmp_path)
    (tmp_path / "compute.yaml").write_text(yaml.safe_dump(spec))
    elsewhere = tmp_path / "elsewhere.zarr"
    argv = ["run", str(tmp_path / "compute.yaml"), "--output", str(elsewhere)]
    argv += ["--until", "width <= 1000 at nodes=8", "--budget", "1 h"]
    status = main([*argv, "--address", client.scheduler.address])
    out, err = capsys.readouterr()
    assert status == 0, out + err
    assert "stopped: the width at the target is" in out, out + err
    assert len(ResultStore(str(elsewhere)).results()) == 6
    assert not ResultStore(spec["output"]).exists()
    # the round's line says when no law held its check, as the record does
    (row,) = adaptive_record(str(elsewhere))["rounds"]
    (line,) = [line for line in out.splitlines() if line.startswith("round 1:")]
    said = line.endswith("at 4 nodes: the width takes the uncalibrated factor)")
    assert said == row["unchecked"], (line, row)


def test_a_sweep_whose_every_point_failed_stops_with_exit_1(tmp_path, client, capsys):
    spec = {**_spec(tmp_path), "kernel": "commbench.fault"}
    spec["params"] = {"behaviour": "exit"}
    spec["sweep"] = {"nodes": [1, 2], "ppn": 1, "run": 1}
    (tmp_path / "fault.yaml").write_text(yaml.safe_dump(spec))
    argv = ["run", str(tmp_path / "fault.yaml"), "--until", "width <= 2 at nodes=8"]
    status = main([*argv, "--budget", "1 h", "--address", client.scheduler.address])
    out, err = capsys.readouterr()
    assert status == 1, out + err
    # the line names the failures, not a design short of node counts
    assert out.startswith(
        "scaleprobe: stopped: nothing to plan from: 2 of 2 points failed: first "
        "nodes=1 ppn=1 "
    ), out + err
    assert "exit code 3" in out, out
    assert "round 1" not in out, out
    assert len(ResultStore(spec["output"]).results()) == 2


def test_a_round_says_when_no_law_held_its_check_and_which_counts_are_new():
    from scaleprobe.framework._adaptive_record import round_note
    from scaleprobe.framework._cli_suggest import _note

    row = {"unchecked": True, "largest": 64.0}
    assert _note(row) == (
        " (no law held its check at 64 nodes: the width takes the uncalibrated factor)"
    )
    assert _note({**row, "unchecked": False}) == ""
    assert _note({}) == ""  # a record written before the flag
    probe = {"unchecked": False, "largest": 4.0, "new": [16, 64], "points": 2}
    assert round_note(probe) == "one at each new count: 16, 64 nodes"
    assert round_note({**probe, "unchecked": True}).endswith(
        "; no law held its check at 4 nodes: the width takes the uncalibrated factor"
    )
