"""The fit / project / report subcommands, plots and the report, on real files."""

import argparse
import json

import numpy as np
import pytest
import xarray as xr
from scaleprobe.framework._cli_models import parse_cv, parse_values, register
from scaleprobe.models import ScalingLaw, make_features
from scaleprobe.models.evaluation.crossval import evaluate
from scaleprobe.models.projection.grid import project
from scaleprobe.models.report.document import write_report
from scaleprobe.models.report.plots import (
    plot_bandwidth_demand,
    plot_extrapolation_error,
    plot_measured_vs_predicted,
    plot_projection,
    save_figure,
)


def _run(argv):
    parser = argparse.ArgumentParser(prog="scaleprobe")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.fixture
def results_file(make_results, tmp_path):
    path = tmp_path / "results.nc"
    make_results(scale=(20, 21), bandwidth=(20, 50, 100), trials=2).to_netcdf(path)
    return path


@pytest.mark.slow
def test_fit_then_project(results_file, tmp_path, capsys):
    model_file = tmp_path / "models.json"
    code = _run(
        [
            "fit",
            str(results_file),
            "--s0",
            "20",
            "--model",
            "base",
            "--model",
            "generalized_refined",
            "--cv",
            "kfold:4",
            "--cv",
            "extrapolation",
            "--output",
            str(model_file),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "generalized_refined" in out
    assert "extrapolation" in out
    assert "baseline" in out  # every score is read against the naive baseline
    assert "scaleprobe trusts generalized_refined" in out
    document = json.loads(model_file.read_text())
    assert document["selected"] == "generalized_refined"
    assert document["training"]["ppn"] == [4]
    state = document["models"]["generalized_refined"]["state"]
    assert abs(state["alpha_"] - 1.12) < 0.01
    assert state["coef_"]["__array__"] == pytest.approx([200, 6], rel=0.02)

    output, plot = tmp_path / "projection.nc", tmp_path / "projection.png"
    code = _run(
        [
            "project",
            str(model_file),
            "--nodes",
            "4:1024",
            "--bandwidth",
            "100,50,25",
            "--scale",
            "21",
            "--output",
            str(output),
            "--plot",
            str(plot),
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    table = captured.out
    assert "time_predicted" in table
    assert "time_upper" in table
    assert "1024" in table
    assert "generalized_refined:" in table  # the law, in words
    ds = xr.open_dataset(output)
    assert ds.sizes["nodes"] == 9
    assert ds.sizes["bandwidth"] == 3
    assert np.isfinite(ds["time_upper"]).all()
    # Where the interval spans more than an order of magnitude, the output says so.
    wide = (ds["time_upper"] / ds["time_lower"] > 10).any(
        [d for d in ds["time_upper"].dims if d != "nodes"]
    )
    if wide.any():
        first = int(ds["nodes"].values[wide.values].min())
        assert f"from {first} nodes on" in table
        assert "the data cannot tell the time there" in table
    else:
        assert "cannot tell" not in table
    _check_unchecked_line(ds, wide.values, table)
    ds.close()
    assert plot.read_bytes()[:4] == b"\x89PNG"


def _check_unchecked_line(ds, wide, table):
    """Where a band narrower than 10x lies beyond the distance its widening was
    checked at, the output says that it is extrapolated, and only there."""
    checked = ds.attrs["interval_checked_to"]
    narrow = ds["nodes"].values[~wide]
    unchecked = narrow[narrow > checked]
    assert ("widening is extrapolated" in table) == bool(unchecked.size)
    if unchecked.size:
        assert f"{unchecked.max()} nodes, " in table


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "missing.nc"], "no results"),
        (["fit", "{results}", "--model", "cubic"], "unknown model 'cubic'"),
        (["fit", "{results}", "--cv", "jackknife"], "unknown cross-validation"),
        (["project", "missing.json", "--nodes", "4:8"], "no model file"),
        (["fit", "{results}", "--target", "tme"], "no variable 'tme'"),
        (["fit", "{results}", "--cv", "kfold:1"], "unknown cross-validation"),
        (["report", "{results}", "--output", "{tmp}/report.pdf"], "must end in"),
    ],
)
def test_bad_input_exits_2_with_one_line(argv, message, results_file, tmp_path, capsys):
    argv = [a.format(results=results_file, tmp=tmp_path) for a in argv]
    assert _run(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err
    assert "\n" not in err


def test_a_campaign_with_no_point_ok_has_nothing_to_fit(tmp_path, capsys):
    # what a store holds when every launch failed: statuses and errors, no time
    status = np.array([["failed", "timeout"], ["failed", ""]], dtype=object)
    ds = xr.Dataset(
        {"status": (("nodes", "run"), status), "error": (("nodes", "run"), status)},
        coords={"nodes": [2, 4], "run": [0, 1]},
    )
    ds.to_netcdf(tmp_path / "failed.nc")
    assert _run(["fit", str(tmp_path / "failed.nc")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"scaleprobe: error: {tmp_path / 'failed.nc'}: no point of the campaign "
        "succeeded (failed 2, timeout 1): nothing to fit; `scaleprobe show "
        f"{tmp_path / 'failed.nc'}` lists each point's error"
    )
    with pytest.raises(ValueError, match=r"succeeded \(failed 2, timeout 1\)"):
        make_features(ds)


def test_value_parsers():
    assert parse_values("4:1024", integer=True).tolist() == [
        4,
        8,
        16,
        32,
        64,
        128,
        256,
        512,
        1024,
    ]
    assert parse_values("10:30:10").tolist() == [10, 20, 30]
    assert set(parse_cv(["kfold:3", "extrapolation:8", "scale", "bandwidth"])) == {
        "kfold",
        "extrapolation",
        "scale",
        "bandwidth",
    }
    assert parse_cv(["extrapolation:8"])["extrapolation"].train_max == 8


@pytest.mark.slow
def test_report_markdown_has_tables_and_figures(make_results, tmp_path, capsys):
    path = tmp_path / "results.nc"
    make_results(scale=(20, 21), bandwidth=(20, 100), trials=2).to_netcdf(path)
    code = _run(
        [
            "report",
            str(path),
            "--s0",
            "20",
            "--model",
            "base",
            "--model",
            "generalized_refined",
            "--output",
            str(tmp_path / "report.md"),
        ]
    )
    assert code == 0
    # the command prints the verdict the report states, as every model command does
    assert "trusted: generalized_refined" in capsys.readouterr().out
    text = (tmp_path / "report.md").read_text()
    assert "## Which model is trusted, and why" in text
    assert "| generalized_refined | extrapolation |" in text
    assert "| baseline | extrapolation |" in text
    assert "Verdict: scaleprobe trusts generalized_refined" in text
    # 6 node counts x 2 bandwidths x 2 scales, one node left out: 20 configurations
    # of 3 runs of 2 trials, two runs failed. Configurations are counted, not trials.
    assert "Fitted on 20 configurations, 58 runs (116 values" in text
    projection = text.split("## Projection")[1]
    assert "| 1024 |" in projection
    assert "| 222 |" not in projection
    assert "nan" not in projection.split("teps_predicted")[1].split("##")[0]
    for name in (
        "measured_vs_predicted",
        "extrapolation_error",
        "projection",
        "bandwidth_impact",
    ):
        assert f"report_{name}.png" in text
        assert (tmp_path / f"report_{name}.png").stat().st_size > 5000
    figures = text.split("## Figures")[1]
    assert "(shaded) at every measured bandwidth, " in figures
    # the latency floor is named where the projection has one to draw
    assert ("the latency floor" in figures) == ("time_floor" in projection)
    assert "beyond the largest measured node count" in figures


def test_html_report_is_self_contained(make_results, tmp_path):
    ds = make_results(scale=(20,), bandwidth=(100,), trials=1)
    path = write_report(
        ds, tmp_path / "r.html", s0=20, models={"base": ScalingLaw(over="ranks")}
    )
    text = path.read_text()
    assert (
        text.count("data:image/png;base64,") == 3
    )  # no bandwidth figure at 100 % only
    assert "<table" in text
    assert 'src="http' not in text
    # text reads from the left, numbers from the right; the baseline has no interval
    score = '<tr><td class="text">baseline</td><td class="text">extrapolation</td>'
    (row,) = [r for r in text.split("\n") if r.startswith(score)]
    assert "<td>—</td>" in row
    assert "nan" not in row


def test_a_trend_on_several_bandwidths_says_why_no_bandwidth_figure(
    make_results, tmp_path
):
    # the only law ignores bandwidth: the naive trend is trusted, and it knows only the
    # bandwidths measured, so the report says why the figure is missing
    ds = make_results(
        scale=(20,), bandwidth=(20, 100), trials=1, nodes=(1, 2, 4, 8, 16, 32, 64)
    )
    path = write_report(
        ds, tmp_path / "r.md", s0=20, models={"base": ScalingLaw(over="ranks", s0=20)}
    )
    text = path.read_text()
    assert "\ntrusted: baseline\n" in text
    impact = text.split("## Bandwidth impact")[1]
    assert (
        "not drawn: baseline cannot price a bandwidth it was not measured at" in impact
    )
    assert "report_bandwidth_impact.png" not in text


@pytest.mark.slow
def test_plots_write_png_and_svg(results, tmp_path):
    X, y = make_features(results, s0=20)
    model = ScalingLaw(form="generalized_refined", over="ranks", s0=20).fit(X, y)
    ideal = ScalingLaw(form="generalized", over="ranks", s0=20).fit(
        X[X["bandwidth"] == 100], y[X["bandwidth"] == 100]
    )
    grid = {"nodes": [1, 4, 16, 64, 256], "scale": 22, "ppn": 4}
    measured = X[X["scale"] == 22].assign(time=y)
    figures = {
        "mvp.png": plot_measured_vs_predicted(y, model.predict(X), color_by=X["nodes"]),
        "proj.svg": plot_projection(
            project(model, bandwidth=[100, 25], **grid),
            ideal=project(ideal, **grid),
            measured=measured,
        ),
        "bw.png": plot_bandwidth_demand(model, scale=22, ppn=4),
        "err.png": plot_extrapolation_error(
            evaluate({"gr": model, "g": ideal}, (X, y), s0=20)
        ),
    }
    for name, figure in figures.items():
        path = save_figure(figure, tmp_path / name)
        assert path.stat().st_size > 5000
    assert (tmp_path / "proj.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        save_figure(figures["bw.png"], tmp_path / "x.pdf")


@pytest.mark.slow  # fits the ensemble
@pytest.mark.parametrize(
    ("option", "value", "attr", "expected"),
    [
        ("--link-bandwidth", "100 Gbit/s", "link_bandwidth", 1.25e10),
        ("--link-bandwidth", "1.25 GB/s", "link_bandwidth", 1.25e9),
        ("--latency", "1 us", "latency", 1e-6),
        ("--latency", "0.5 ms", "latency", 5e-4),
    ],
)
def test_project_takes_each_dimensioned_option_with_its_unit(
    traffic_models, tmp_path, capsys, option, value, attr, expected
):
    output = tmp_path / "p.nc"
    argv = ["project", str(traffic_models), "--nodes", "64", option, value]
    assert _run([*argv, "--output", str(output)]) == 0
    capsys.readouterr()
    with xr.open_dataset(output) as ds:
        assert ds.attrs[attr] == pytest.approx(expected)
    # the same number without its unit is refused in one line, exit 2
    bare = value.split()[0]
    assert _run(["project", str(traffic_models), "--nodes", "64", option, bare]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"scaleprobe: error: {option} {bare} needs a unit, e.g. '{bare} "
        f"{'Gbit/s' if option == '--link-bandwidth' else 'us'}'"
    )


@pytest.fixture(scope="module")
def traffic_models(tmp_path_factory):
    """A model file fitted on synthetic critical-path records."""
    from conftest import synthetic_traffic
    from scaleprobe.models import fit_ensemble, save_models

    fit = fit_ensemble(synthetic_traffic())
    assert fit.selected == "traffic"  # the model that prices another network
    return save_models(tmp_path_factory.mktemp("traffic") / "models.json", fit)
