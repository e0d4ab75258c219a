"""``scaleprobe suggest``: a real campaign, a ranking, a spec that resumes it."""

from __future__ import annotations

import math
import shutil
from types import SimpleNamespace

import pytest
import yaml
from scaleprobe.framework import run_sweep
from scaleprobe.framework._summary import summarize
from scaleprobe.framework._sweep_state import state_from_store
from scaleprobe.framework.adaptive import round_picks, worthwhile_picks
from scaleprobe.framework.cli import main
from scaleprobe.framework.planning import plan, point_key
from scaleprobe.framework.spec import load_spec
from scaleprobe.framework.store import ResultStore, open_results
from scaleprobe.framework.suggest import (
    _planned_points,
    extension_spec,
    parse_budget,
    parse_target,
    suggest,
)

pytestmark = pytest.mark.mpi


@pytest.fixture(scope="module")
def measured(tmp_path_factory, cluster):
    """A measured strong-scaling campaign: 1, 2 and 4 nodes, two runs each."""
    from distributed import Client

    folder = tmp_path_factory.mktemp("campaign")
    spec = {
        "name": "compute",
        "kernel": "commbench.compute",
        "params": {"total_work": 400},
        "sweep": {"nodes": [1, 2, 4], "ppn": 1, "run": 2},
        "admissible": "power_of_two",
        "order": {"shuffle": False},
        "throttle": {"mode": "emulated"},
        "output": str(folder / "compute.zarr"),
    }
    with Client(cluster) as client:
        run_sweep(spec, client, progress=False)
    return folder


@pytest.fixture
def campaign(measured, tmp_path):
    """A copy of the measured campaign's store, for one test to change."""
    shutil.copytree(measured, tmp_path / "campaign")
    return str(tmp_path / "campaign" / "compute.zarr")


def test_the_written_spec_resumes_the_campaign_with_the_planned_points(
    campaign, tmp_path, client, capsys
):
    store = ResultStore(campaign)
    before = {r["key"]: r["started"] for r in store.results()}
    written = tmp_path / "next.yaml"
    now = suggest(campaign, "nodes=256", "15 s")
    code = main(
        [
            "suggest",
            campaign,
            "--target",
            "nodes=256",
            "--budget",
            "15 s",
            "--write",
            str(written),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "interval width now" in out
    assert (
        f"interval factor {now.state.rate:.2g} (its half-width, in log, over the "
        "laws' spread plus the distance and the noise)"
    ) in out
    kept = any(why.startswith("kept") for why in now.state.rejected.values())
    assert ("no law held its check" in out) == kept
    assert ("the interval factor is at least 1 (uncalibrated" in out) == kept
    assert "1. nodes=" in out
    listed = [line.strip() for line in out.splitlines() if line.startswith("  nodes=")]
    assert listed
    # what an adaptive round measures of the plan: the runs it leaves to its next
    # plan are counted, and the new counts it measures once, alone, are named
    picked = now.design.plan
    small = len(picked) - len(worthwhile_picks(picked))
    first = round_picks(picked)
    said = [line for line in out.splitlines() if "run --until" in line]
    assert len(said) == (len(first) < len(picked))
    assert said == [] or (
        f"{small} of these run(s) narrow the width by under 1 % each" in said[0]
    ) == (small > 0)
    probes = any(picked[i].candidate.new for i in first)
    assert said == [] or ("measures one run at each first" in said[0]) == probes
    # The spec is the same campaign: scaleprobe run takes it as it is.
    raw = yaml.safe_load(written.read_text())
    assert raw["kernel"] == "commbench.compute"
    assert raw["params"] == {"total_work": 400}
    spec = load_spec(str(written))
    assert spec.output == campaign
    todo = plan(spec, store.done_keys())
    assert sorted(p.label() for p in todo) == sorted(listed)
    # Only powers of two, as the campaign's rule says; at most 4 x its grid.
    assert all(p.coords["nodes"] in (1, 2, 4, 8, 16) for p in todo)
    run_sweep(str(written), client, progress=False)
    after = {r["key"]: r["started"] for r in store.results()}
    # Nothing measured before was measured again; every listed point was added.
    assert {k: after[k] for k in before} == before
    assert len(after) == len(before) + len(todo)
    assert plan(load_spec(str(written)), store.done_keys()) == []
    # show counts the new spec's points as run, the grid's other cells apart
    ds = open_results(campaign)
    shown = summarize(ds, path=campaign).splitlines()[2]
    others = ds["status"].size - len(after)
    # (a plan whose runs fill the grid the extension spans leaves none over)
    assert shown == (
        f"points: not run 0, ok {len(after)}; {others} other cell(s) of the grid "
        "are no point of its last spec (a campaign extended by suggest measures "
        "some runs at some counts)"
        if others
        else f"points: ok {len(after)}"
    )
    assert list(ds["nodes"].values) == sorted(ds["nodes"].values)
    # and so does the dashboard's page of the store: its points, none pending
    points = state_from_store(ds)["points"].values()
    assert sorted(p["status"] for p in points) == ["ok"] * len(after)
    # The store now keeps the written spec: the next suggestion still weighs what
    # the campaign admits (powers of two up to 4 x the largest count measured) and
    # writes a spec
    # that keeps the campaign's rule and loads, whichever counts it picks.
    assert raw["admissible"] == "power_of_two"
    again = suggest(campaign, "nodes=256", "15 s")
    measured = {float(x) for x in again.state.x}
    weighed = {r.candidate.x for r in again.design.ranking}
    assert weighed | measured >= {1.0, 2.0, 4.0, 8.0, 16.0}
    assert max(weighed) <= 4 * max(measured)
    assert all(x == 2 ** round(math.log2(x)) for x in weighed)
    points, _ = extension_spec(again, str(tmp_path / "next2.yaml"))
    assert points
    assert load_spec(str(tmp_path / "next2.yaml")).admissible == "power_of_two"


def test_the_plan_fits_the_budget(campaign):
    suggestion = suggest(campaign, "nodes=256", "30 s")
    assert suggestion.design.spent_wall <= 30.0 * (1 + 1e-9)
    tiny = suggest(campaign, "nodes=256", "0.01 s")
    assert tiny.design.plan == []
    assert tiny.design.ranking  # still ranked, just not affordable


def test_a_spec_of_some_of_the_plans_picks_measures_those_alone(campaign, tmp_path):
    suggestion = suggest(campaign, "nodes=256", "30 s")
    plan_ = suggestion.design.plan
    assert len(plan_) > 2
    first, _ = extension_spec(suggestion, str(tmp_path / "one.yaml"), picks=[0])
    x = plan_[0].candidate.x
    assert [p.coords["nodes"] for p in first] == [int(x)]
    # a repeat takes the first run index the store lacks; a new count, run 0
    measured = set(suggestion.runs.get(x, ()))
    index = next(i for i in range(len(measured) + 1) if i not in measured)
    assert [p.coords["run"] for p in first] == [index]
    every, _ = extension_spec(suggestion, str(tmp_path / "all.yaml"))
    picks = range(len(plan_))
    more, _ = extension_spec(suggestion, str(tmp_path / "more.yaml"), picks=picks)
    assert len(every) > 1
    assert sorted(p.key for p in more) == sorted(p.key for p in every)


def _store_failure(store, nodes, run, status):
    """Store a point of ``store``'s campaign at ``nodes`` and ``run`` that ended
    with ``status`` (as a launch that failed or ran out of time leaves it)."""
    ok = next(r for r in store.results() if r["status"] == "ok")
    coords = {**ok["coords"], "nodes": nodes, "run": run}
    failure = {"key": point_key(coords), "coords": coords, "status": status}
    store.write_point({**failure, "error": "the launch ended", "command": ["mpiexec"]})
    return failure["key"]


def test_a_count_whose_runs_failed_is_not_offered_and_a_run_takes_a_free_index(
    campaign, tmp_path, capsys
):
    store = ResultStore(campaign)
    offered = suggest(campaign, "nodes=256", "1 min")
    assert 8 in {r.candidate.x for r in offered.design.ranking if r.candidate.new}
    _store_failure(store, 8, 0, "timeout")  # the new count a round probed
    for nodes in (1, 2, 4):  # a repeat at each measured count failed
        _store_failure(store, nodes, 2, "failed")
    suggestion = suggest(campaign, "nodes=256", "1 min")
    assert suggestion.failed == {8.0: ["timeout"]}
    assert 8 not in {r.candidate.x for r in suggestion.design.ranking}
    assert sorted(suggestion.runs[4.0]) == [0, 1, 2]  # the failed index is taken
    repeat = SimpleNamespace(candidate=SimpleNamespace(x=4.0))
    assert _planned_points([repeat, repeat], suggestion.runs) == {4.0: [3, 4]}
    # whichever repeat the measured plan holds, its spec measures an index that
    # no stored point holds, failed ones included
    plan_ = suggestion.design.plan
    # (a plan's later picks at a new count are not new either: the measured ones)
    for i in [i for i, r in enumerate(plan_) if r.candidate.x in (1, 2, 4)][:2]:
        (point,), _ = extension_spec(suggestion, str(tmp_path / f"{i}.yaml"), [i])
        assert point.coords["nodes"] == plan_[i].candidate.x
        assert point.coords["run"] not in suggestion.runs[plan_[i].candidate.x]
    argv = ["suggest", campaign, "--target", "nodes=256", "--budget", "1 min"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "not offered: nodes=8, every stored run timeout; `scaleprobe run SPEC "
        "--retry timeout` measures it again" in out
    )


def test_reach_below_one_is_refused(campaign):
    with pytest.raises(ValueError, match=r"reach=0\.5: a factor of 1 or more"):
        suggest(campaign, "nodes=256", "1 min", reach=0.5)


def test_points_priced_on_the_one_host_their_ranks_share(campaign):
    # every rank of the campaign ran on this host, whose cores the emulated
    # link's slots count: a 16-node point is 16 ranks taking turns on them
    store = ResultStore(campaign)
    results = [r for r in store.results() if r["status"] == "ok"]
    slots = results[0]["record"]["link"]["core_slots"]
    assert all(len(r["record"]["placement"]["hosts"]) == 1 for r in results)
    busiest = [
        r["launch_time"] * min(4, slots) / 4
        for r in results
        if r["coords"]["nodes"] == 4
    ]
    suggestion = suggest(campaign, "nodes=256", "30 s")
    ranked = {r.candidate.x: r for r in suggestion.design.ranking if r.candidate.new}
    one_run = ranked[16.0].wall_seconds / ranked[16.0].candidate.repeats
    assert one_run >= 16 / slots * sorted(busiest)[0] * (1 - 1e-9)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "nodes=x", "--budget", "1 h"], "nodes must be a positive"),
        (["--target", "ranks=8", "--budget", "1 h"], "name the node count"),
        (["--target", "nodes=64 bandwidth=7", "--budget", "1 h"], "was not swept"),
        (["--target", "nodes=64", "--budget", "2"], "give a positive wall time"),
        (["--target", "nodes=64", "--budget", "1 h", "--metric", "tim"], "allowed:"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(campaign, capsys, argv, message):
    assert main(["suggest", campaign, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]


def test_targets_and_budgets_parse():
    axes = {"nodes": [1, 2], "ppn": [1], "bandwidth": [100, 25], "run": [0, 1]}
    assert parse_target("nodes=1024, bandwidth=25", axes) == (
        1024.0,
        {"ppn": 1, "bandwidth": 25},
    )
    with pytest.raises(ValueError, match=r"name one, e\.g\. 'bandwidth=100'"):
        parse_target("nodes=1024", axes)
    assert parse_budget("90 min").seconds == 5400.0
    assert parse_budget("1.5 core-hours").limits() == {"core_budget": 5400.0}


@pytest.mark.parametrize(
    ("nodes", "ppn", "admissible", "new"),
    [
        # a square grid of ranks (BT and SP decompose a square): the squares to
        # 4 times the largest count, not only the powers of two among them
        ([4, 9, 16, 25], 1, "square", [1, 36, 49, 64, 81, 100]),
        # two ranks a node on a square grid: the nodes whose ranks are a square
        ([2, 8, 18], 2, "square", [32, 50, 72]),
        # a cube grid (LULESH's), any count admitted: the cubes beside the powers
        ([27, 64, 125], 1, "any", [1, 2, 4, 8, 16, 32, 128, 216, 256, 343]),
        # a grid that doubles: the powers of two, as before
        ([1, 2, 4], 1, "power_of_two", [8, 16]),
    ],
)
def test_new_counts_take_the_measured_grids_form(tmp_path, nodes, ppn, admissible, new):
    from scaleprobe.framework.suggest import _candidates

    spec = load_spec(
        {
            "name": "grid",
            "kernel": "commbench.compute",
            "params": {"total_work": 400},
            "sweep": {"nodes": nodes, "ppn": ppn, "run": 1},
            "admissible": admissible,
            "throttle": {"mode": "emulated"},
            "output": str(tmp_path / "grid.zarr"),
        }
    )
    measured = [float(n) for n in nodes]
    found = _candidates(spec, {"ppn": ppn}, measured, 10**6, None)
    assert [c.x for c in found if not c.new] == measured  # repeats
    assert [c.x for c in found if c.new] == [float(n) for n in new]


def test_a_store_without_its_spec_is_one_line_and_exit_2(tmp_path, capsys):
    store = ResultStore(str(tmp_path / "old.zarr"))
    store.start({"identity": {"kernel": "x"}, "sweep": {"nodes": [1]}, "attrs": {}})
    code = main(["suggest", store.path, "--target", "nodes=8", "--budget", "1 h"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"scaleprobe: error: {store.path} does not keep its spec; suggest "
        "needs a store of run"
    ]


def _times(store, **where):
    """Counts and the times measured at each, of the points at ``where``."""
    times = {}
    for result in store.results():
        if all(result["coords"].get(k) == v for k, v in where.items()):
            value = result["record"]["metrics"]["time"]
            times.setdefault(float(result["coords"]["nodes"]), []).append(value)
    return sorted(times), [times[x] for x in sorted(times)]


def test_the_intervals_factor_is_pooled_over_the_stores_slices(
    campaign, tmp_path, client, monkeypatch
):
    from scaleprobe.models import design
    from scaleprobe.models.design import design_state, pooled_rate

    pooled = []

    def recorded(series, *args, **kwargs):
        series = list(series)
        pooled.append(series)
        return pooled_rate(series, *args, **kwargs)

    monkeypatch.setattr(design, "pooled_rate", recorded)

    # one slice: the series calibrates on its own extrapolation errors
    alone = suggest(campaign, "nodes=256", "30 s")
    own = design_state(*_times(ResultStore(campaign)), 256)
    assert alone.state.rate == pytest.approx(own.rate)
    assert pooled == []
    # two bandwidths: each is a series of the same program, pooled as a profile's
    spec = {
        "name": "compute-bw",
        "kernel": "commbench.compute",
        "params": {"total_work": 400},
        "sweep": {"nodes": [1, 2, 4], "ppn": 1, "run": 2, "bandwidth": [50, 100]},
        "order": {"shuffle": False},
        "throttle": {"mode": "emulated"},
        "output": str(tmp_path / "bw.zarr"),
    }
    run_sweep(spec, client, progress=False)
    got = suggest(spec["output"], "nodes=256 bandwidth=50", "30 s")
    store = ResultStore(spec["output"])
    slices = [_times(store, bandwidth=b) for b in (50, 100)]
    (series,) = pooled  # both bandwidths' series, whichever first
    assert sorted(map(repr, series)) == sorted(map(repr, slices))
    alone = design_state(*slices[0], 256)  # the slice's own factor
    # the pooled one, unless the slice's own extrapolation errors ask for more
    assert got.state.rate == pytest.approx(max(pooled_rate(slices), alone.rate))
    assert got.state.x.tolist() == alone.x.tolist()  # the slice asked for
