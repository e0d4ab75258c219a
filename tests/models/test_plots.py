"""The figures say what a reader needs to trust them: checked on their artists.

Every figure is built from a real fit and read back through matplotlib: the measured
markers and their values, the legend's entries (the interval with its level), the
axis labels with units, the title naming the network, the extrapolated spans.
"""

import argparse
import json

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from scaleprobe.framework._cli_models import register
from scaleprobe.models import ScalingLaw, TrafficModel, fit_ensemble, make_features
from scaleprobe.models.core.measured import measured_frame, measured_summary
from scaleprobe.models.evaluation.crossval import evaluate
from scaleprobe.models.report.document import write_report
from scaleprobe.models.report.labels import nodes_axis
from scaleprobe.models.report.plots import (
    plot_bandwidth_demand,
    plot_extrapolation_error,
    plot_measured_vs_predicted,
    plot_projection,
)

NODES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


@pytest.fixture
def traffic_fit(traffic):
    """The traffic model and the naive baseline fitted on synthetic traffic records
    (1 Gbit/s links, 5 us latency; nodes 1 to 8 at 100, 50 and 25 %)."""
    return traffic, fit_ensemble(traffic, models={"traffic": TrafficModel()})


def _legend_texts(ax):
    return [text.get_text() for text in ax.get_legend().get_texts()]


def _x_extent(patch):
    """A span's data x range, whether matplotlib drew it as a Rectangle or (before
    3.9) as a Polygon."""
    path = patch.get_path().transformed(patch.get_patch_transform())
    xs = path.vertices[:, 0]
    return float(xs.min()), float(xs.max())


def _with_gid(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def _measured_markers(ax):
    return [line for line in ax.get_lines() if line.get_gid() == "measured"]


def test_the_fit_keeps_median_and_run_range_of_each_configuration(traffic_fit):
    ds, fit = traffic_fit
    table = measured_frame(fit.training)
    assert len(table) == ds.sizes["nodes"] * ds.sizes["bandwidth"]
    one = table[(table["nodes"] == 4) & (table["bandwidth"] == 50)].iloc[0]
    runs = ds["time"].sel(nodes=4, bandwidth=50).values.ravel()
    assert one["median"] == pytest.approx(np.median(runs))
    assert (one["low"], one["high"]) == pytest.approx((runs.min(), runs.max()))
    assert one["runs"] == 3
    # the medians are the numbers `scaleprobe show` prints
    shown = ds["time"].median(["run", "ppn"]).sel(nodes=4, bandwidth=50).item()
    assert one["median"] == pytest.approx(shown)


def test_projection_shows_measurements_band_level_network_and_extrapolation(
    traffic_fit,
):
    ds, fit = traffic_fit
    projection = fit.project("traffic", nodes=NODES, bandwidth=[100, 25])
    figure = plot_projection(projection, title="traffic projection")
    ax = figure.axes[0]
    markers = _measured_markers(ax)
    assert len(markers) == 2  # one set per projected bandwidth (100 and 25 %)
    for line in markers:
        assert line.get_marker() == "o"
    medians = ds["time"].median(["run", "ppn"])
    drawn = {
        (x, round(y, 12))
        for line in markers
        for x, y in zip(*line.get_data(), strict=True)
    }
    expected = {
        (n, round(medians.sel(nodes=n, bandwidth=b).item(), 12))
        for n in ds["nodes"].values
        for b in (100, 25)
    }
    assert drawn == expected
    legend = _legend_texts(ax)
    assert "90 % interval (shaded)" in legend
    assert "measured: median, bar from lowest to highest run" in legend
    assert "projected at 25 % bandwidth" in legend
    assert "extrapolated: beyond 8 nodes" in legend
    assert ax.get_xlabel() == "nodes (count)"
    assert ax.get_ylabel() == "time (s)"
    assert len(_with_gid(ax, "band")) == 2
    (span,) = _with_gid(ax, "extrapolated")
    assert _x_extent(span) == pytest.approx((8, 1024))
    title = figure.get_suptitle()
    assert "network: 1 Gbit/s links, 5 µs latency (the measured one)" in title
    # log tick labels: plain numbers, few enough not to run into each other
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert ticks == ["1", "4", "16", "64", "256", "1024"]


def test_a_projection_to_another_network_looks_different_and_says_so(traffic_fit):
    _, fit = traffic_fit
    link = {"link_bandwidth": 1.25e10, "latency": 1e-6}  # 100 Gbit/s, 1 us
    home = fit.project("traffic", nodes=NODES, bandwidth=[100])
    away = fit.project("traffic", nodes=NODES, bandwidth=[100], link=link)
    title = plot_projection(away).get_suptitle()
    assert "another network: 100 Gbit/s links, 1 µs latency" in title
    assert "measured on 1 Gbit/s links, 5 µs latency" in title
    assert plot_projection(home).get_suptitle() != title
    ax = plot_projection(away).axes[0]
    markers = _measured_markers(ax)  # hollow: every point of the measured network
    assert len(markers) == 3
    assert {m.get_markerfacecolor() for m in markers} == {"white"}
    assert any("on 1 Gbit/s links, 5 µs latency" in t for t in _legend_texts(ax))
    line = next(
        line for line in ax.get_lines() if line.get_label().startswith("projected")
    )
    away_time = line.get_ydata()
    assert not np.allclose(away_time, home["time_predicted"].sel(bandwidth=100))
    # the long network names are wrapped: the title and legend fit in the figure
    figure = plot_projection(away)
    figure.canvas.draw()
    width = figure.bbox.width
    (title_text,) = [t for t in figure.texts if t.get_text() == title]
    for artist in (title_text, figure.axes[0].get_legend()):
        box = artist.get_window_extent()
        assert box.x0 >= 0, (box, width)
        assert box.x1 <= width, (box, width)


def test_project_plot_from_a_model_file_draws_the_measurements(
    traffic_fit, tmp_path, capsys
):
    from scaleprobe.models import save_models

    ds, fit = traffic_fit
    model_file = save_models(tmp_path / "models.json", fit)
    parser = argparse.ArgumentParser(prog="scaleprobe")
    register(parser.add_subparsers(dest="command", required=True))
    plot = tmp_path / "projection.png"
    args = parser.parse_args(
        ["project", str(model_file), "--nodes", "1:256", "--plot", str(plot)]
    )
    assert args.handler(args) == 0
    assert plot.read_bytes()[:4] == b"\x89PNG"
    document = json.loads(model_file.read_text())
    assert document["training"]["measured"]["nodes"][:3] == [1, 1, 1]
    # the figure the command drew, rebuilt from the same file
    from scaleprobe.models import load_models

    loaded = load_models(model_file)
    projection = loaded.project("traffic", nodes=[1, 2, 4, 256])
    (markers,) = _measured_markers(plot_projection(projection).axes[0])
    assert sorted(markers.get_xdata()) == sorted(ds["nodes"].values.tolist())


def test_measured_vs_predicted_labels_in_sample_and_held_out(results):
    X, y = make_features(results, s0=20)
    model = ScalingLaw(form="generalized_refined", over="ranks", s0=20).fit(X, y)
    small = (X["nodes"] < 32).to_numpy()
    refitted = ScalingLaw(form="generalized_refined", over="ranks", s0=20).fit(
        X[small], y[small]
    )
    figure = plot_measured_vs_predicted(
        y[small],
        model.predict(X[small]),
        held_out=(y[~small], refitted.predict(X[~small])),
        held_out_label="32 nodes",
    )
    ax = figure.axes[0]
    (in_sample,) = _with_gid(ax, "in-sample")
    (held,) = _with_gid(ax, "held-out")
    assert len(held.get_offsets()) == int((~small).sum())
    assert len(in_sample.get_offsets()) == int(small.sum())
    legend = _legend_texts(ax)
    assert "in-sample: the model was fitted on these" in legend
    assert "held out: 32 nodes" in legend
    assert (ax.get_xlabel(), ax.get_ylabel()) == (
        "measured time (s)",
        "predicted time (s)",
    )
    assert ax.get_title().endswith("in-sample and held out")
    alone = plot_measured_vs_predicted(y, model.predict(X)).axes[0]
    assert alone.get_title().endswith("in-sample")
    assert not _with_gid(alone, "held-out")


def test_bandwidth_impact_marks_what_it_extrapolates(results):
    X, y = make_features(results.sel(bandwidth=[25, 50, 100]), s0=20)
    model = ScalingLaw(form="generalized_refined", over="ranks", s0=20).fit(X, y)
    figure = plot_bandwidth_demand(model, nodes=(1, 4, 16, 64), scale=22, ppn=4)
    ax_cti, ax_demand = figure.axes
    (below,) = _with_gid(ax_cti, "extrapolated")
    assert _x_extent(below) == pytest.approx((10, 25))
    legend = _legend_texts(ax_cti)
    assert legend[:2] == ["1 node", "4 nodes"]
    assert "64 nodes (extrapolated)" in legend  # measured: 1 to 32 nodes
    assert "extrapolated: below 25 %" in legend
    assert [line.get_linestyle() for line in ax_cti.get_lines()] == [
        "-",
        "-",
        "-",
        "--",
    ]
    assert ax_cti.get_xlabel() == "available bandwidth (% of the link)"
    assert ax_cti.get_ylabel() == "CTI (%)"
    shaded = _with_gid(ax_demand, "extrapolated")
    assert len(shaded) == 2  # below 25 % and beyond 32 nodes
    assert "extrapolated: beyond 32 nodes" in _legend_texts(ax_demand)
    assert ax_demand.get_xlabel() == "nodes (count)"
    assert ax_demand.get_ylabel() == "bandwidth demand (% of the link)"
    ticks = [t.get_text() for t in ax_demand.get_xticklabels() if t.get_text()]
    assert ticks == ["1", "2", "4", "8", "16", "32", "64"]


def test_extrapolation_error_has_percent_and_the_trusted_model(results):
    X, y = make_features(results, s0=20)
    models = {
        "gr": ScalingLaw(form="generalized_refined", over="ranks", s0=20),
        "g": ScalingLaw(form="generalized", over="ranks", s0=20),
    }
    scores = evaluate(models, (X, y), s0=20)
    ax = plot_extrapolation_error(scores, trusted="gr").axes[0]
    assert ax.get_ylabel() == "SMAPE (%)"
    names = [t.get_text() for t in ax.get_xticklabels()]
    assert "gr\n(trusted)" in names
    assert "baseline\n(naive)" in names
    bold = [t.get_text() for t in ax.get_xticklabels() if t.get_fontweight() == "bold"]
    assert bold == ["gr\n(trusted)"]
    trusted = _with_gid(ax, "trusted")
    assert len(trusted) == scores.sizes["cv"]
    values = [t.get_text() for t in ax.texts if t.get_text()]
    assert values
    assert all(v.endswith(" %") for v in values)
    assert "trusted: gr" in _legend_texts(ax)


@pytest.mark.parametrize(
    ("values", "ticks"),
    [
        ([1, 1024], ["1", "4", "16", "64", "256", "1024"]),
        ([1, 2, 3, 4, 6, 8], ["1", "2", "3", "4", "6", "8"]),
        ([4, 64], ["4", "8", "16", "32", "64"]),
    ],
)
def test_node_ticks_are_plain_and_never_crowded(values, ticks):
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    ax.plot(values, values)
    nodes_axis(ax, values)
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()] == ticks


@pytest.mark.slow
def test_report_figures_are_labelled(make_results, tmp_path):
    ds = make_results(scale=(20,), bandwidth=(25, 100), trials=2)
    path = write_report(
        ds,
        tmp_path / "report.md",
        s0=20,
        models={"gr": ScalingLaw(form="generalized_refined", over="ranks", s0=20)},
    )
    text = path.read_text()
    assert "*In-sample: the measured configurations" in text
    assert "Held out: the largest node count" in text
    assert "the trusted model is outlined" in text
    X, y = make_features(ds, s0=20)
    summary = measured_summary(X, y)
    assert set(summary.columns) >= {"nodes", "bandwidth", "median", "low", "high"}
    assert (summary["low"] <= summary["median"]).all()
    assert (summary["median"] <= summary["high"]).all()


def test_bands_are_fill_between_collections(traffic_fit):
    # the band a legend names is what the axes draw: one filled area per bandwidth
    _, fit = traffic_fit
    projection = fit.project("traffic", nodes=NODES, bandwidth=[100, 50, 25])
    ax = plot_projection(projection).axes[0]
    bands = _with_gid(ax, "band")
    assert len(bands) == 3
    assert all(isinstance(band, PolyCollection) for band in bands)
