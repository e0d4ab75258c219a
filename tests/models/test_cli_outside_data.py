"""``scaleprobe fit``, ``project`` and ``report`` on one series of data measured
outside scaleprobe (a CSV over nodes, JSON Lines over ranks): the counts asked for,
the options such data take, and no variable of a scaleprobe kernel."""

import json

import pytest
import xarray as xr
from scaleprobe.framework.cli import main

#: Times of runs.csv (docs/guide/measurements.md): two inputs over nodes.
RUNS = {
    "small": [4.20, 2.20, 1.21, 0.70, 0.45],
    "large": [16.8, 8.83, 4.79, 2.81, 1.81],
}


@pytest.fixture
def runs_csv(tmp_path):
    path = tmp_path / "runs.csv"
    rows = ["N,input,time"]
    for name, times in RUNS.items():
        rows += [
            f"{n},{name},{t}" for n, t in zip((2, 4, 8, 16, 32), times, strict=True)
        ]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.fixture
def ranks_jsonl(tmp_path):
    """One call path over ranks, as an Extra-P JSON Lines profile records it."""
    path = tmp_path / "app.jsonl"
    lines = [
        json.dumps(
            {"params": {"p": p}, "callpath": "main", "metric": "time_avg", "value": v}
        )
        for p, v in zip((8, 16, 32, 64, 128), (41.0, 21.5, 11.2, 6.1, 3.4), strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _runs_model(runs_csv, tmp_path):
    output = tmp_path / "runs.json"
    select = ["--nodes-from", "N", "--ppn", "4", "--select", "input=large"]
    assert main(["fit", str(runs_csv), *select, "--output", str(output)]) == 0
    return output


def _ranks_model(ranks_jsonl, tmp_path):
    output = tmp_path / "ranks.json"
    series = ["--callpath", "main", "--target", "time_avg"]
    assert main(["fit", str(ranks_jsonl), *series, "--output", str(output)]) == 0
    return output


def test_report_of_data_without_a_bandwidth_axis(
    ranks_jsonl, runs_csv, tmp_path, capsys
):
    csv_report, jsonl_report = tmp_path / "runs.md", tmp_path / "app.md"
    select = ["--nodes-from", "N", "--ppn", "4", "--select", "input=large"]
    code = main(["report", str(runs_csv), *select, "--output", str(csv_report)])
    assert code == 0, capsys.readouterr().err
    series = ["--callpath", "main", "--target", "time_avg", "--ppn", "8"]
    code = main(["report", str(ranks_jsonl), *series, "--output", str(jsonl_report)])
    assert code == 0, capsys.readouterr().err
    assert "| 32 | 1.726 |" in csv_report.read_text()  # base at 32 nodes
    for name in ("runs", "app"):
        assert (tmp_path / f"{name}_projection.png").stat().st_size > 0
        assert (
            f"![projection]({name}_projection.png)"
            in (tmp_path / f"{name}.md").read_text()
        )


def _table(out):
    """The projection table ``project`` prints: its header and rows, split."""
    lines = out.splitlines()
    end = lines.index("") if "" in lines else len(lines)
    return [line.split() for line in lines[1:end]]


def test_ranks_of_a_model_over_nodes_are_its_nodes_at_the_trained_ppn(
    runs_csv, tmp_path, capsys
):
    model = _runs_model(runs_csv, tmp_path)
    capsys.readouterr()
    assert main(["project", str(model), "--nodes", "32,64"]) == 0
    by_nodes = _table(capsys.readouterr().out)
    assert main(["project", str(model), "--ranks", "128,256"]) == 0
    by_ranks = _table(capsys.readouterr().out)
    assert by_ranks == by_nodes  # 128 ranks at ppn 4: 32 nodes, labelled nodes
    assert by_ranks[0] == ["nodes", "time_predicted", "time_lower", "time_upper"]
    assert [row[0] for row in by_ranks[1:]] == ["32", "64"]
    assert by_ranks[1][1] == "1.726"  # base at 32 nodes; 128 nodes gives 0.6704


def test_nodes_of_a_model_over_ranks_are_converted_with_ppn(
    ranks_jsonl, tmp_path, capsys
):
    model = _ranks_model(ranks_jsonl, tmp_path)
    capsys.readouterr()
    assert main(["project", str(model), "--ranks", "256,1024"]) == 0
    by_ranks = _table(capsys.readouterr().out)
    assert main(["project", str(model), "--nodes", "32,128", "--ppn", "8"]) == 0
    by_nodes = _table(capsys.readouterr().out)
    assert by_nodes == by_ranks  # labelled ranks, the ranks asked for
    assert by_nodes[0][0] == "ranks"
    assert [row[0] for row in by_nodes[1:]] == ["256", "1024"]


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        (
            ["--nodes", "8:64"],
            "the model's data run over ranks; give ranks (--ranks) or the ranks "
            "per node (--ppn) to convert nodes",
        ),
        (["--ranks", "64", "--ppn", "8"], "rank counts take no ppn"),
        (["--ranks", "64", "--nodes", "8"], "give --ranks or --nodes, not both"),
    ],
)
def test_counts_a_model_over_ranks_cannot_take_are_refused(
    ranks_jsonl, tmp_path, capsys, counts, message
):
    model = _ranks_model(ranks_jsonl, tmp_path)
    capsys.readouterr()
    assert main(["project", str(model), *counts]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("scaleprobe: error: ")
    assert message in captured.err
    assert captured.err.count("\n") == 1


def test_ranks_that_are_not_whole_nodes_are_refused(runs_csv, tmp_path, capsys):
    model = _runs_model(runs_csv, tmp_path)
    capsys.readouterr()
    assert main(["project", str(model), "--ranks", "130"]) == 2
    err = capsys.readouterr().err
    assert "130 ranks are not a whole number of nodes at 4 ranks per node" in err


def test_a_projection_of_outside_data_has_nothing_of_graph500(
    runs_csv, tmp_path, capsys
):
    model = _runs_model(runs_csv, tmp_path)
    output = tmp_path / "projection.nc"
    capsys.readouterr()
    assert main(["project", str(model), "--nodes", "64", "--output", str(output)]) == 0
    assert "teps" not in capsys.readouterr().out
    with xr.open_dataset(output) as projection:
        assert set(projection.data_vars) == {
            "time_predicted",
            "time_lower",
            "time_upper",
        }  # no TEPS, no computation and communication parts
        assert "edgefactor" not in projection.attrs
        # measured on the link as it was: no bandwidth axis of scaleprobe's sweeps
        assert dict(projection.sizes) == {"nodes": 1}
        assert "bandwidth" not in projection.coords
        assert projection["time_predicted"].attrs["units"] == ""  # not stated
        training = json.loads(projection.attrs["training"])
        assert "s0" not in training  # the data have no scale
        assert float(projection["time_predicted"].squeeze()) == pytest.approx(
            1.061, rel=1e-3
        )


def test_a_scale_of_outside_data_is_theirs(tmp_path, capsys):
    path = tmp_path / "scales.csv"
    rows = ["N,scale,time [s]"]
    for scale in (20, 22):
        rows += [
            f"{n},{scale},{2.0 ** (scale - 20) * (40 / n + 2 / n**0.5):.5f}"
            for n in (2, 4, 8, 16, 32)
        ]
    path.write_text("\n".join(rows) + "\n")
    model, output = tmp_path / "scales.json", tmp_path / "projection.nc"
    argv = ["fit", str(path), "--nodes-from", "N", "--ppn", "4", "--s0", "20"]
    assert main([*argv, "--model", "pmnf", "--output", str(model)]) == 0
    argv = ["project", str(model), "--name", "pmnf", "--nodes", "64"]
    assert main([*argv, "--scale", "22", "--output", str(output)]) == 0
    with xr.open_dataset(output) as projection:
        assert "teps_predicted" not in projection
        assert projection["scale"].attrs["long_name"] == "problem scale"
        assert projection["time_predicted"].attrs["units"] == "s"  # the header's


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            ["--scale", "20,30"],
            "scale 20, 30: the models were not trained over a scale (their data "
            "have none); they were trained over: nodes, ranks, ppn",
        ),
        (
            ["--bandwidth", "50"],
            "bandwidth 50 %: the models were not trained over a bandwidth",
        ),
        (
            ["--ppn", "2.5"],
            "--ppn must be a whole number of ranks per node, at least 1; got 2.5",
        ),
        (
            ["--ppn", "0"],
            "--ppn must be a whole number of ranks per node, at least 1; got 0",
        ),
        (
            ["--ppn", "-4"],
            "--ppn must be a whole number of ranks per node, at least 1; got -4",
        ),
    ],
)
def test_options_the_model_does_not_take_are_refused(
    runs_csv, tmp_path, capsys, option, message
):
    model = _runs_model(runs_csv, tmp_path)
    capsys.readouterr()
    assert main(["project", str(model), "--nodes", "64", *option]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"scaleprobe: error: {message}")
    assert captured.err.count("\n") == 1
    assert main(["project", str(model), "--nodes", "64", "--bandwidth", "100"]) == 0


@pytest.mark.parametrize("ppn", ["2.5", "0", "-4"])
def test_a_ppn_that_is_no_count_of_ranks_is_refused_for_a_profile(
    ranks_jsonl, tmp_path, capsys, ppn
):
    models = tmp_path / "profile.json"
    assert main(["fit", str(ranks_jsonl), "--output", str(models)]) == 0
    capsys.readouterr()
    assert main(["project", str(models), "--nodes", "64", "--ppn", ppn]) == 2
    err = capsys.readouterr().err
    assert err == (
        "scaleprobe: error: --ppn must be a whole number of ranks per node, at "
        f"least 1; got {float(ppn):g}\n"
    )


@pytest.mark.parametrize("ppn", ["2.5", "0", "-4"])
@pytest.mark.parametrize("command", ["fit", "report"])
@pytest.mark.parametrize("one", [True, False], ids=["one series", "profile"])
def test_fit_and_report_refuse_a_ppn_that_is_no_count_of_ranks(
    runs_csv, tmp_path, capsys, ppn, command, one
):
    argv = [command, str(runs_csv), "--nodes-from", "N", "--ppn", ppn]
    argv += ["--select", "input=large"] if one else []
    argv += [
        "--output",
        str(tmp_path / ("out.md" if command == "report" else "m.json")),
    ]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        "scaleprobe: error: --ppn must be a whole number of ranks per node, at "
        f"least 1; got {float(ppn):g}\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.csv"]  # nothing written


def test_figures_of_outside_data_do_not_assume_seconds(runs_csv, tmp_path):
    from scaleprobe.models import load_models
    from scaleprobe.models.report.plots import (
        plot_measured_vs_predicted,
        plot_projection,
    )

    fit = load_models(_runs_model(runs_csv, tmp_path))
    units = fit.training["units"]["time"]
    figure = plot_projection(fit.project(nodes=[32, 64]))
    assert figure.axes[0].get_ylabel() == "time (units not stated)"
    legend = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    assert "projected" in legend  # no bandwidth the data do not have
    assert not any("bandwidth" in text for text in legend)
    figure = plot_measured_vs_predicted([1.0, 2.0], [1.1, 1.9], units=units)
    assert figure.axes[0].get_xlabel() == "measured time (units not stated)"


def test_a_projection_over_ranks_is_drawn_over_ranks(ranks_jsonl, tmp_path, capsys):
    from scaleprobe.models import load_models
    from scaleprobe.models.report.plots import plot_projection

    model = _ranks_model(ranks_jsonl, tmp_path)
    figure = tmp_path / "projection.png"
    argv = ["project", str(model), "--ranks", "64:1024", "--plot", str(figure)]
    assert main(argv) == 0, capsys.readouterr().err
    assert figure.stat().st_size > 0
    projection = load_models(model).project(ranks=[64, 1024])
    assert dict(projection.sizes) == {"ranks": 2}
    axes = plot_projection(projection).axes[0]
    assert axes.get_xlabel() == "ranks (count)"
    (line,) = [line for line in axes.lines if line.get_label() == "projected"]
    assert line.get_ydata().tolist() == projection["time_avg_predicted"].values.tolist()
    measured = [line for line in axes.lines if line.get_gid() == "measured"]
    assert measured[0].get_xdata().tolist() == [8, 16, 32, 64, 128]


def test_a_report_of_ranks_alone_projects_over_ranks(ranks_jsonl, tmp_path, capsys):
    output = tmp_path / "app.md"
    series = ["--callpath", "main", "--target", "time_avg"]
    code = main(["report", str(ranks_jsonl), *series, "--output", str(output)])
    assert code == 0, capsys.readouterr().err
    text = output.read_text()
    projection = text.split("## Projection of ")[1].split("##")[0]
    assert "bandwidth" not in projection.splitlines()[0]  # the data have none
    assert "| ranks | time_avg_predicted |" in projection
    assert "| 256 |" in projection  # twice the largest measured count
    assert (tmp_path / "app_projection.png").stat().st_size > 0
    # the captions speak of what the figures show: ranks, one line, no link model
    figures = text.split("## Figures")[1]
    assert "beyond the largest measured rank count." in figures
    assert "Held out: the largest rank count" in figures
    assert "node" not in figures
    assert "latency floor" not in figures
    assert "every measured bandwidth" not in figures


def test_the_python_project_takes_ranks_as_the_command_does(ranks_jsonl, tmp_path):
    from scaleprobe.framework.api import project

    model = _ranks_model(ranks_jsonl, tmp_path)
    by_ranks = project(model, ranks="256,1024")
    by_nodes = project(model, nodes=[32, 128], ppn=8)
    assert by_ranks["ranks"].values.tolist() == [256, 1024]
    assert by_nodes["time_avg_predicted"].equals(by_ranks["time_avg_predicted"])
    with pytest.raises(ValueError, match="give ranks"):
        project(model, nodes=[32])


def test_a_sweep_at_one_scale_still_projects_its_teps(make_results, tmp_path, capsys):
    # a sweep of one kernel at one scale (the demo's Graph500 at scale 14) has no
    # scale axis, but its TEPS are counted at the scale it was run at
    results = tmp_path / "results.nc"
    sweep = make_results(scale=(20,), bandwidth=(50, 100), trials=2)
    sweep.isel(scale=0, drop=True).to_netcdf(results)
    model = tmp_path / "models.json"
    argv = ["fit", str(results), "--model", "base", "--cv", "kfold:3"]
    assert main([*argv, "--output", str(model)]) == 0
    capsys.readouterr()
    assert main(["project", str(model), "--nodes", "64", "--scale", "20"]) == 0
    assert "teps_predicted" in capsys.readouterr().out
