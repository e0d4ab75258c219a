"""scaleprobe fit --model commpredictor, then project a stencil phase, on real files."""

from __future__ import annotations

import contextlib
import io
import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import yaml
from scaleprobe.framework.cli import main
from scaleprobe.kernels.comm import Allocation, Topology
from scaleprobe.kernels.comm.pattern import (
    METRIC_UNITS,
    METRICS,
    CommPattern,
    place_nodes,
)
from scaleprobe.kernels.commbench.random_pingpong import random_partners
from scaleprobe.models.commpredictor.patterns import pattern_table

B = 1.25e8


def _law(metrics):
    """The known communication time: a latency and the node traffic over B."""
    return 2e-5 + metrics["NT"] / B


def _busiest_law(metrics):
    """A known time set by the busiest node's inter-node bytes."""
    return 2e-5 + metrics["NTmax"] / B


def _uplink_law(metrics):
    """A known time set by the busiest node and the busiest switch's uplinks (the
    switch's bytes shared by two uplinks of the node's bandwidth)."""
    return 2e-5 + metrics["NTmax"] / B + metrics["SWTmax"] / (2 * B)


def _benchmark(tmp_path, law=_law, busiest=False, allocations=("random",)):
    """A random ping-pong results file as a sweep writes it, timed by ``law``.

    With ``busiest`` the records carry ``NTmax`` and ``SWTmax``, as the benchmark's
    do; run ``i`` places its nodes as ``allocations[i]`` says on 64 machine nodes.
    """
    coords = {
        "nodes": [2, 4, 8],
        "ppn": [1, 2],
        "messages": [1, 2, 4],
        "msg_bytes": [2048, 8192, 32768, 131072, 1 << 20],
        "run": list(range(len(allocations))),
    }
    shape = tuple(len(v) for v in coords.values())
    names = (*METRICS, *(["NTmax", "SWTmax"] if busiest else []), "exchange_time")
    values = {name: np.empty(shape) for name in names}
    topology = Topology(nodes_per_switch=4, switches_per_rack=2)
    for index in itertools.product(*(range(n) for n in shape)):
        nodes, ppn, m, size, run = (
            list(v)[i] for v, i in zip(coords.values(), index, strict=True)
        )
        partners = random_partners(nodes * ppn, m, seed=run)
        allocation = Allocation(allocations[run], machine_nodes=64, seed=run)
        placement = place_nodes(nodes, allocation)
        metrics = CommPattern.from_partners(
            [[p for p in row if p >= 0] for row in partners], size
        ).metrics(ppn=ppn, placement=placement, nodes_per_switch=4, switches_per_rack=2)
        for name in names[:-1]:
            values[name][index] = metrics[name]
        values["exchange_time"][index] = law(metrics)
    dims = tuple(coords)
    status = np.full(shape, "ok", dtype=object)
    status[0, 0, 0, 0, 0] = "failed"  # a failed point is left out, not trained on
    values["exchange_time"][0, 0, 0, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            name: (dims, v, {"units": METRIC_UNITS.get(name, "s")})
            for name, v in values.items()
        }
        | {"status": (dims, status)},
        coords=coords,
        attrs={"kernel": "commbench.random_pingpong", "topology": str(topology)},
    )
    path = tmp_path / "pingpong.nc"
    ds.to_netcdf(path)
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("commcli")
    results = _benchmark(folder)
    model = folder / "comm.json"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "fit",
                str(results),
                "--model",
                "commpredictor",
                "--cv",
                "extrapolation",
                "--output",
                str(model),
            ]
        )
    return code, out.getvalue(), model


@pytest.mark.slow
def test_fit_trains_on_the_benchmark_and_reports_its_areas(fitted):
    code, out, model = fitted
    assert code == 0
    assert "'exchange_time'" in out  # the phase time, not the whole run
    assert "89 measurements" in out  # 90 points, one failed
    assert "area II" in out
    assert "extrapolation" in out  # scored on held-out node counts
    assert "NTmax not recorded by every one: the paper's 13 metrics only" in out
    assert model.exists()


@pytest.mark.slow  # fits whole ensembles: half a minute
def test_a_phase_set_by_its_busiest_node_is_projected_with_ntmax(tmp_path, capsys):
    """Records with NTmax: it is offered to the fit and computed for the phase.

    The benchmark's random pairings load nodes nearly evenly (NTmax close to NT),
    but a stencil's inner nodes carry far more than the mean: only a model that
    knows NTmax can carry that over.
    """
    results = _benchmark(tmp_path, law=_busiest_law, busiest=True)
    model = str(tmp_path / "comm.json")
    fit = ["fit", "--model", "commpredictor", "--cv", "extrapolation"]
    assert main([*fit, str(results), "--output", model]) == 0
    out = capsys.readouterr().out
    assert "not recorded" not in out
    argv = ["project", model, "--stencil", "jacobi3d", "--shape", "96,96,96"]
    assert main([*argv, "--nodes", "8", "--ppn", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "NTmax" in lines[1].split()
    assert "SWTmax" not in lines[1].split()  # recorded, but only asked for
    expected = pattern_table(
        {"pattern": {"stencil": "jacobi3d", "shape": [96] * 3}, "mapping": {"ppn": 2}},
        [8],
        columns=[*METRICS, "NTmax"],
    )
    assert expected["NTmax"].iloc[0] > 1.3 * expected["NT"].iloc[0]
    predicted = float(lines[2].split()[-1])
    assert predicted == pytest.approx(_busiest_law(expected).iloc[0], rel=0.05)
    # the same records without NTmax: a mean-node model misses the busiest node
    plain = tmp_path / "plain"
    plain.mkdir()
    results = _benchmark(plain, law=_busiest_law)
    assert main([*fit, str(results), "--output", model]) == 0
    capsys.readouterr()
    assert main([*argv, "--nodes", "8", "--ppn", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "NTmax" not in lines[1].split()
    assert float(lines[2].split()[-1]) < 0.85 * _busiest_law(expected).iloc[0]


def _falling_law(metrics):
    """A known time that falls with the node traffic (positive on the benchmark's
    rows, up to 8.4 MB of NT; below zero beyond 13 MB)."""
    return 4e-3 - 3e-10 * metrics["NT"]


@pytest.mark.slow  # fits an ensemble
def test_a_time_not_above_zero_is_printed_as_cannot_tell(tmp_path, capsys):
    from scaleprobe.models import load_models

    results = _benchmark(tmp_path, law=_falling_law)
    model = str(tmp_path / "comm.json")
    fit = ["fit", str(results), "--model", "commpredictor", "--output", model]
    fit += ["--cv", "extrapolation"]  # the projection is tested, not k-fold
    assert main(fit) == 0
    shapes = {"96,96,96": 96, "2048,2048,2048": 2048}
    mapping = {"pattern": {"stencil": "jacobi3d"}, "mapping": {"ppn": 2}}
    raw = {}
    predictor = load_models(model).models["commpredictor"]
    features = list(predictor.feature_names_in_)
    for text, side in shapes.items():
        mapping["pattern"]["shape"] = [side] * 3
        table = pattern_table(mapping, [8], columns=[*METRICS])
        with warnings.catch_warnings():  # beyond the range: predict warns
            warnings.simplefilter("ignore")
            raw[text] = predictor.predict(table.assign(nodes=table["N"])[features])[0]
    assert raw["96,96,96"] > 0 > raw["2048,2048,2048"]  # the law carried too far
    capsys.readouterr()
    output = tmp_path / "phase.csv"
    argv = ["project", model, "--stencil", "jacobi3d", "--nodes", "8", "--ppn", "2"]
    assert main([*argv, "--shape", "2048,2048,2048", "--output", str(output)]) == 0
    out = capsys.readouterr().out
    assert "1 of 1 rows: the law gives no positive time there" in out
    assert "cannot tell" in out
    assert np.isnan(pd.read_csv(output)["time_predicted"].iloc[0])
    assert main([*argv, "--shape", "96,96,96", "--output", str(output)]) == 0
    assert "cannot tell" not in capsys.readouterr().out
    predicted = pd.read_csv(output)["time_predicted"].iloc[0]
    assert predicted == pytest.approx(raw["96,96,96"])


def test_project_predicts_a_stencil_never_run_at_a_mapping(fitted, capsys):
    *_, model = fitted
    code = main(
        [
            "project",
            str(model),
            "--stencil",
            "jacobi3d",
            "--shape",
            "128,128,128",
            "--nodes",
            "4,8",
            "--ppn",
            "2",
            "--allocation",
            "random",
            "--machine-nodes",
            "64",
            "--nodes-per-switch",
            "4",
            "--switches-per-rack",
            "2",
            "--allocation-seed",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    lines = out.splitlines()
    assert "jacobi3d" in lines[0]
    expected = pattern_table(
        {
            "pattern": {"stencil": "jacobi3d", "shape": [128, 128, 128]},
            "mapping": {
                "ppn": 2,
                "allocation": "random",
                "machine_nodes": 64,
                "nodes_per_switch": 4,
                "switches_per_rack": 2,
                "seed": 1,
            },
        },
        [4, 8],
    )
    table = pd.read_csv(pd.io.common.StringIO("\n".join(lines[1:3])), sep=r"\s+")
    predicted = [float(line.split()[-1]) for line in lines[2:4]]
    assert np.allclose(predicted, _law(expected), rtol=0.05), (predicted, out)
    assert list(table.columns)[:2] == ["N", "PPN"]


def test_project_takes_a_pattern_file_and_writes_the_table(fitted, tmp_path, capsys):
    *_, model = fitted
    ring = {
        "pattern": {
            "partners": [[(r + 1) % 8, (r - 1) % 8] for r in range(8)],
            "bytes": 262144,
        },
        "mapping": {"ppn": 2},
    }
    path = tmp_path / "ring.yaml"
    path.write_text(yaml.safe_dump(ring))
    output = tmp_path / "ring.csv"
    code = main(
        [
            "project",
            str(model),
            "--pattern",
            str(path),
            "--nodes",
            "4",
            "--output",
            str(output),
        ]
    )
    capsys.readouterr()
    assert code == 0
    written = pd.read_csv(output)
    assert written["N"].tolist() == [4]
    truth = _law(pattern_table(ring, [4]))
    assert written["time_predicted"].iloc[0] == pytest.approx(truth.iloc[0], rel=0.05)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "4"], "describe it with --stencil"),
        (["--nodes", "4", "--stencil", "jacobi3d"], "needs --shape"),
        (
            ["--nodes", "4", "--stencil", "jacobi3d", "--shape", "64,64"],
            "needs --shape",
        ),
        (["--nodes", "3", "--pattern", "PATTERN"], "runs on 4 nodes, not 3"),
    ],
)
def test_bad_phase_is_one_line_and_exit_2(fitted, tmp_path, capsys, argv, message):
    *_, model = fitted
    path = tmp_path / "ring.yaml"
    path.write_text(
        yaml.safe_dump({"pattern": {"partners": [[1], [0], [3], [2]], "bytes": 64}})
    )
    argv = [str(path) if a == "PATTERN" else a for a in argv]
    code = main(["project", str(model), *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_fit_refuses_results_without_the_metrics(make_results, tmp_path, capsys):
    path = tmp_path / "g500.nc"
    make_results(scale=(20,), bandwidth=(100,), trials=1).to_netcdf(path)
    code = main(["fit", str(path), "--model", "commpredictor"])
    err = capsys.readouterr().err
    assert code == 2
    assert "pattern metrics" in err


@pytest.mark.slow  # fits two ensembles
def test_metrics_switch_fits_the_papers_13_alone_or_with_ntmax(tmp_path, capsys):
    """The same records with NTmax: --metrics chooses whether the fit may use it."""
    results = _benchmark(tmp_path, law=_busiest_law, busiest=True)
    model = str(tmp_path / "comm.json")
    fit = ["fit", str(results), "--model", "commpredictor", "--output", model]
    fit += ["--cv", "extrapolation"]  # the switch is what is tested, not k-fold
    argv = ["project", model, "--stencil", "jacobi3d", "--shape", "96,96,96"]
    expected = pattern_table(
        {"pattern": {"stencil": "jacobi3d", "shape": [96] * 3}, "mapping": {"ppn": 2}},
        [8],
        columns=[*METRICS, "NTmax"],
    )
    truth = _busiest_law(expected).iloc[0]
    predicted = {}
    for choice in ("paper", "paper+ntmax"):
        assert main([*fit, "--metrics", choice]) == 0
        out = capsys.readouterr().out
        note = "paper's 13 metrics only" if choice == "paper" else "and NTmax"
        assert note in out.splitlines()[0], out
        assert main([*argv, "--nodes", "8", "--ppn", "2"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert ("NTmax" in lines[1].split()) == (choice == "paper+ntmax")
        predicted[choice] = float(lines[2].split()[-1])
    assert predicted["paper+ntmax"] == pytest.approx(truth, rel=0.05)
    assert predicted["paper"] < 0.85 * truth  # the mean node misses the busiest


@pytest.mark.slow  # fits two ensembles
def test_a_phase_set_by_its_switch_uplinks_is_projected_with_swtmax(tmp_path, capsys):
    """Records whose time the busiest switch's uplinks set: with SWTmax the fit finds
    the law and carries it to a phase on an allocation of its own."""
    results = _benchmark(
        tmp_path, law=_uplink_law, busiest=True, allocations=("random", "compact")
    )
    model = str(tmp_path / "comm.json")
    fit = ["fit", str(results), "--model", "commpredictor", "--output", model]
    fit += ["--cv", "extrapolation"]  # the switch is what is tested, not k-fold
    mapping = {"ppn": 2, "allocation": "compact", "machine_nodes": 64}
    mapping["nodes_per_switch"] = 4
    argv = ["project", model, "--stencil", "jacobi3d", "--shape", "96,96,96"]
    argv += ["--nodes", "16", "--ppn", "2", "--allocation", "compact"]
    argv += ["--machine-nodes", "64", "--nodes-per-switch", "4"]
    expected = pattern_table(
        {"pattern": {"stencil": "jacobi3d", "shape": [96] * 3}, "mapping": mapping},
        [16],
        columns=[*METRICS, "NTmax", "SWTmax"],
    )
    truth = _uplink_law(expected).iloc[0]
    errors = {}
    for choice in ("paper+ntmax", "paper+ntmax+swtmax"):
        assert main([*fit, "--metrics", choice]) == 0
        out = capsys.readouterr().out
        assert ("SWTmax" in out.splitlines()[0]) == choice.endswith("swtmax"), out
        assert main(argv) == 0
        lines = capsys.readouterr().out.splitlines()
        assert ("SWTmax" in lines[1].split()) == choice.endswith("swtmax")
        errors[choice] = float(lines[2].split()[-1]) / truth - 1
    # the forward selection takes V and NT beside the two (at most 4 terms, chosen
    # on the ping-pong's rows), so the law is near, not exact, on a stencil: -7 %
    assert abs(errors["paper+ntmax+swtmax"]) < 0.10, errors
    # without SWTmax the compact allocation's 4 switches look like the ping-pong's
    # spread ones: +77 %
    assert abs(errors["paper+ntmax"]) > 3 * abs(errors["paper+ntmax+swtmax"]), errors


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--metrics", "paper+ntmax", "--model", "commpredictor"], "lack it"),
        (
            ["--metrics", "paper+ntmax+swtmax", "--model", "commpredictor"],
            "needs NTmax, SWTmax recorded by every successful point; these results "
            "lack them",
        ),
        (["--metrics", "paper", "--model", "traffic"], "use it with --model"),
        (["--metrics", "all", "--model", "commpredictor"], "invalid choice"),
    ],
)
def test_bad_metrics_choice_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    results = _benchmark(tmp_path)  # records without NTmax
    try:
        code = main(["fit", str(results), *argv])
    except SystemExit as exit_:  # argparse refuses an unknown choice itself
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    if "all" not in argv:
        assert len(err.strip().splitlines()) == 1
