"""``scaleprobe fit``, ``project`` and ``report`` on a profile of many series, and
rank counts as an axis of their own (no ``--ppn``, tables headed "ranks")."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import xarray as xr
from scaleprobe.framework._cli_models import register

RANKS = (16, 32, 64, 128, 256, 512)


def _run(argv):
    parser = argparse.ArgumentParser(prog="scaleprobe")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def _ranks_csv(path, regions=("solve", "halo", "io")):
    laws = {
        "solve": lambda p: 40.0 / p + 0.002 * np.sqrt(p),
        "halo": lambda p: 0.01 + 0.004 * np.log2(p),
        "io": lambda p: 0.5 + 0.0 * p,
    }
    rows = ["ranks,region,time [s]"]
    for p in RANKS:
        for region in regions:
            for run in range(3):
                rows.append(f"{p},{region},{laws[region](p) * (1 + 0.01 * run):.6g}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_profile_is_fitted_whole_into_one_model_file(tmp_path, capsys):
    models = tmp_path / "profile.json"
    code = _run(["fit", str(_ranks_csv(tmp_path / "app.csv")), "--output", str(models)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "3 series over ranks (csv)" in out
    assert "verdicts: 3 trusted, 0 fallback, 0 refused" in out
    document = json.loads(models.read_text())
    assert document["format"] == "scaleprobe-profile-models"
    assert [s["name"] for s in document["series"]] == [
        "region=solve",
        "region=halo",
        "region=io",
    ]


def _projected(tmp_path, capsys, *options):
    """Fit the three-region profile into a model file, project it with
    ``options``; the model file and what ``project`` printed."""
    models = tmp_path / "profile.json"
    _run(["fit", str(_ranks_csv(tmp_path / "app.csv")), "--output", str(models)])
    capsys.readouterr()
    assert _run(["project", str(models), *options]) == 0
    return models, capsys.readouterr().out


def test_a_ranks_only_profile_projects_without_ppn_and_says_ranks(tmp_path, capsys):
    models, out = _projected(tmp_path, capsys, "--ranks", "32768")
    assert "at 32768 ranks" in out
    assert "will dominate:" in out
    assert out.index("region=io") < out.index("region=halo")  # 0.5 s > 0.07 s
    assert "grow fastest:" in out
    # 64x beyond, the laws of the 1/p region part; 2x beyond, every law holds
    assert "the data cannot tell (1 series" in out
    assert "region=solve  measure at 4096" in out
    assert _run(["project", str(models), "--ranks", "1024"]) == 0
    assert "the data tell every series" in capsys.readouterr().out
    # nodes need ranks per node, which a file of ranks does not give
    assert _run(["project", str(models), "--nodes", "64"]) == 2
    assert "--ppn" in capsys.readouterr().err
    assert _run(["project", str(models), "--nodes", "64", "--ppn", "4"]) == 0
    assert "at 256 ranks" in capsys.readouterr().out


def test_a_profile_projection_shows_the_other_counts_asked_for(tmp_path, capsys):
    models, out = _projected(tmp_path, capsys, "--ranks", "256:4096")
    assert "at 4096 ranks" in out
    # ranked at 4096; the last three other counts beside, the fourth in --output
    assert "the predicted values at 512, 1024, 2048 ranks beside" in out
    assert "1 more count(s) in --output" in out
    table = out.split("will dominate:\n")[1].split("\n\n")[0].splitlines()
    assert table[0].split() == [
        "series", "at", "512", "at", "1024", "at", "2048", "at", "4096",
        "lower", "upper", "growth", "status",
    ]  # fmt: skip
    halo = next(line.split() for line in table if "region=halo" in line)
    # 0.01 + 0.004 log2(p), runs 1.00, 1.01, 1.02 times it: their mean
    for value, p in zip(halo[1:5], (512, 1024, 2048, 4096), strict=True):
        assert float(value) == pytest.approx(1.01 * (0.01 + 0.004 * np.log2(p)), 0.01)
    # one count: the plain table
    assert _run(["project", str(models), "--ranks", "4096"]) == 0
    out = capsys.readouterr().out
    assert "beside" not in out
    table = out.split("will dominate:\n")[1].splitlines()
    assert table[0].split()[:3] == ["series", "predicted", "lower"]


def test_a_profile_projection_is_written_with_its_axis(tmp_path, capsys):
    models = tmp_path / "profile.json"
    _run(["fit", str(_ranks_csv(tmp_path / "app.csv")), "--output", str(models)])
    output = tmp_path / "projection.nc"
    code = _run(
        ["project", str(models), "--ranks", "1024,4096", "--output", str(output)]
    )
    assert code == 0, capsys.readouterr()
    with xr.open_dataset(output) as projection:
        assert projection["predicted"].dims == ("series", "ranks")
        assert projection["ranks"].values.tolist() == [1024.0, 4096.0]
        assert bool(np.all(projection["lower"] >= 0))


def test_a_profile_report_ranks_the_series_at_scale(tmp_path, capsys):
    output = tmp_path / "report.md"
    csv = _ranks_csv(tmp_path / "app.csv")
    assert _run(["report", str(csv), "--output", str(output)]) == 0, capsys.readouterr()
    text = output.read_text()
    assert "## Will dominate at 4096 ranks" in text
    assert "## The data cannot tell" in text
    assert "| region=solve |" in text


def test_one_series_chosen_from_a_profile_takes_the_ensemble(tmp_path, capsys):
    csv = _ranks_csv(tmp_path / "app.csv", regions=("solve",))
    models = tmp_path / "m.json"
    argv = ["fit", str(csv), "--model", "base", "--model", "pmnf"]
    code = _run([*argv, "--cv", "extrapolation", "--output", str(models)])
    assert code == 0, capsys.readouterr()
    assert json.loads(models.read_text())["format"] == "scaleprobe-models"
    capsys.readouterr()
    output = tmp_path / "projection.nc"
    # fitted on ranks alone: projected without --ppn, over ranks
    code = _run(["project", str(models), "--ranks", "32768", "--output", str(output)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.splitlines()[1].split()[0] == "ranks"
    with xr.open_dataset(output) as projection:
        assert "ranks" in projection.dims
        assert "edgefactor" not in projection.attrs  # no Graph500 on outside data
        training = json.loads(projection.attrs["training"])
        assert "scale" not in training["units"]
        assert float(projection["time_lower"].min()) >= 0


def _csv(path, series):
    """A CSV of ranks, region and time: ``series[region] = {ranks: time}``."""
    rows = ["ranks,region,time [s]"]
    for region, values in series.items():
        rows += [f"{p},{region},{t:.6g}" for p, t in values.items()]
    path.write_text("\n".join(rows) + "\n")
    return path


def _law(law, counts):
    return {p: law(p) for p in counts}


def test_series_that_end_at_different_counts_say_where(tmp_path, capsys):
    # "short" was measured up to 64 ranks only: its 0.69 s is not a value at 512
    csv = _csv(
        tmp_path / "app.csv",
        {
            "long": _law(lambda p: 0.1 + 0.01 * p, RANKS),
            "short": _law(lambda p: 40.0 / p + 0.06, RANKS[:3]),
        },
    )
    assert _run(["fit", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "at 512 " not in out
    header = next(line for line in out.splitlines() if "last measured" in line)
    assert header.split()[1:5] == ["last", "measured", "at", "ranks"]
    rows = {row.split()[0]: row.split() for row in out.splitlines() if row.strip()}
    assert rows["region=long"][1:3] == ["5.22", "512"]
    assert rows["region=short"][1:3] == ["0.685", "64"]
    # series that end at the same count keep one column headed with it
    assert _run(["fit", str(_ranks_csv(tmp_path / "same.csv"))]) == 0
    out = capsys.readouterr().out
    assert "last measured" not in out
    assert "series (largest at the largest ranks count first):" in out
    assert out.split("first):\n")[1].split()[:3] == ["series", "at", "512"]


def test_verdicts_add_up_and_two_counts_are_not_said_to_miss_a_check(tmp_path, capsys):
    csv = _csv(
        tmp_path / "app.csv",
        {
            "solve": _law(lambda p: 40.0 / p + 0.06, RANKS),
            "two": _law(lambda p: 1.0 / p, RANKS[:2]),
            "one": _law(lambda p: 1.0 / p, RANKS[:1]),
        },
    )
    assert _run(["fit", str(csv), "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "3 series over ranks" in out
    assert "verdicts: 1 trusted, 0 fallback, 1 refused, 1 left out" in out
    assert "missed its own" not in out
    assert (
        "warning: 1 of 3 series have fewer than three counts: no law can be checked "
        "on a held-out count, so they are refused" in out
    )
    assert "  region=two: 2 counts" in out
    assert "1 of 3 series are left out: fewer than two counts" in out
    # without --verbose each warning is said once, on standard error
    assert _run(["fit", str(csv)]) == 0
    said = capsys.readouterr()
    warning = "1 of 3 series have fewer than three counts"
    assert (said.out + said.err).count(warning) == 1
    assert f"scaleprobe: warning: UnreliableModelWarning: {warning}" in said.err
    assert "warning: " not in said.out


def test_verbose_tables_tell_long_call_paths_apart(tmp_path, capsys):
    stem = "main->lulesh.cycle->LagrangeLeapFrog->LagrangeNodal->"
    leaves = ("CalcForceForNodes", "CalcAccelerationForNodes")
    csv = _csv(
        tmp_path / "app.csv",
        {stem + leaf: _law(lambda p: 40.0 / p + 0.06, RANKS) for leaf in leaves},
    )
    models = tmp_path / "m.json"
    assert _run(["fit", str(csv), "--output", str(models)]) == 0
    capsys.readouterr()
    assert _run(["project", str(models), "--ranks", "2048", "--verbose"]) == 0
    out = capsys.readouterr().out
    for leaf in leaves:
        assert f"region={stem}{leaf} " in out
    # without --verbose a name keeps its root and the last regions that fit
    assert _run(["project", str(models), "--ranks", "2048"]) == 0
    out = capsys.readouterr().out
    assert stem not in out
    assert "region=main->…->LagrangeNodal->CalcForceForNodes " in out
    assert "region=main->…->CalcAccelerationForNodes " in out


def test_short_names_of_a_caliper_profile_stay_apart():
    # Caliper profiles name every region under one root and every metric with
    # the same ending: a cut in the middle of the whole name left 180 series
    # all reading "main->lulesh.cycle->Lag…usive#sum#time.duration]"
    from scaleprobe.models.profiles.summary import short_name

    root = "main->lulesh.cycle->LagrangeLeapFrog->"
    paths = [
        root + "LagrangeNodal",
        root + "LagrangeNodal->CalcForceForNodes",
        root + "LagrangeNodal->CalcForceForNodes->CalcVolumeForceForElems"
        "->CalcHourglassControlForElems->CalcFBHourglassForceForElems",
        root + "LagrangeElements->CalcQForElems->MPI_Wait",
        root + "LagrangeElements->CalcQForElems->MPI_Waitall",
    ]
    metrics = [f"{agg}#inclusive#sum#time.duration" for agg in ("min", "max")]
    names = [f"{path} [{metric}]" for path in paths for metric in metrics]
    short = [short_name(name, 48) for name in names]
    assert len(set(short)) == len(names)
    assert all(len(name) <= 48 for name in short)
    assert short[0] == "main->…->LagrangeNodal [min#in…ration]"
    assert short[4] == "…->CalcFBHourglassForceForElems [min#in…ration]"
    assert short[7] == "main->…->CalcQForElems->MPI_Wait [max#in…ration]"
    # a name that fits, and one without regions, whose end stays
    assert short_name("main [time]", 48) == "main [time]"
    assert short_name("x" * 30 + "solve", 12) == "…xxxxxxsolve"


def test_a_projection_where_no_series_can_be_told_says_so(tmp_path, capsys):
    # two counts per series: no law can be checked, every series is refused
    csv = _csv(
        tmp_path / "app.csv",
        {name: _law(lambda p: 1.0 / p, RANKS[:2]) for name in ("solve", "halo")},
    )
    models = tmp_path / "m.json"
    assert _run(["fit", str(csv), "--output", str(models)]) == 0
    capsys.readouterr()
    assert _run(["project", str(models), "--ranks", "1024"]) == 0
    out = capsys.readouterr().out
    none = "  none: the data cannot tell any series at 1024 ranks (below)"
    assert out.count(none) == 2, out
    assert "the data cannot tell (2 series" in out


def test_what_fit_cannot_read_is_one_line_that_says_what_it_reads(tmp_path, capsys):
    csv = _ranks_csv(tmp_path / "app.csv")
    code = _run(["fit", str(csv), "--ranks-from", "nosuch"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert "no column 'nosuch' for the process count" in err
    assert "['ranks', 'region', 'time']" in err
    models = tmp_path / "m.json"
    assert _run(["fit", str(csv), "--output", str(models)]) == 0
    capsys.readouterr()
    for argv in (["fit", str(models)], ["fit", str(models), "--model", "base"]):
        assert _run(argv) == 2
        err = capsys.readouterr().err
        assert "is a model file written by 'scaleprobe fit', not measurements" in err
        assert f"'scaleprobe project {models}'" in err
    tsv = tmp_path / "runs.tsv"
    tsv.write_text(csv.read_text())
    assert _run(["fit", str(tsv)]) == 2
    err = capsys.readouterr().err
    assert "scaleprobe does not read .tsv files; give the results of" in err
    assert "Zarr" not in err


def test_a_report_that_cannot_be_written_is_refused_before_the_fit(
    tmp_path, capsys, monkeypatch
):
    from scaleprobe.framework import _cli_profiles

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before the output was checked")

    monkeypatch.setattr(_cli_profiles, "_fit", no_fit)
    csv = _ranks_csv(tmp_path / "app.csv")
    assert _run(["report", str(csv), "--output", str(tmp_path / "x.pdf")]) == 2
    assert "write a profile's report as .md or .html" in capsys.readouterr().err


def test_values_left_out_are_named_with_their_count(tmp_path, capsys):
    for text, shown in (("NaN", "nan"), ("inf", "inf")):
        csv = tmp_path / f"{shown}.csv"
        csv.write_text(f"np,time\n4,1.0\n8,{text}\n16,0.3\n32,0.2\n")
        assert _run(["fit", str(csv)]) == 0
        out = capsys.readouterr().out
        assert (
            "note: 1 value(s) left out as not finite numbers (NaN or inf): "
            f"(no call path) {shown} at 8 ranks" in out
        )
    negative = tmp_path / "neg.csv"
    negative.write_text("np,time\n4,1.0\n8,-0.5\n16,0.3\n32,0.2\n")
    assert _run(["fit", str(negative)]) == 2
    err = capsys.readouterr().err
    assert "zero or negative" in err
    assert "(no call path) -0.5 at 8 ranks" in err


def test_a_call_path_that_does_not_run_on_one_rank_begins_where_it_runs(
    tmp_path, capsys
):
    # a profile measured from one rank: its MPI calls take no time there
    counts = (1, *RANKS)
    csv = _csv(
        tmp_path / "app.csv",
        {
            "solve": _law(lambda p: 40.0 / p + 0.06, counts),
            "MPI_Allreduce": _law(lambda p: 0.002 * np.log2(p), counts),
            "checkpoint": _law(lambda p: 0.0, counts),
            "retired": _law(lambda p: 0.0 if p == 512 else 0.5, counts),
        },
    )
    models = tmp_path / "m.json"
    assert _run(["fit", str(csv), "--output", str(models), "--verbose"]) == 0
    out = capsys.readouterr().out
    assert "verdicts: 2 trusted, 0 fallback, 0 refused, 2 left out" in out
    assert (
        "note: 1 series begin at their first count with a value (zero before: the "
        "call path did not run there): region=MPI_Allreduce from 16 ranks" in out
    )
    assert "every value zero (the call path never ran)" in out
    assert "region=retired 0 at 512 ranks" in out  # it stopped: not projected
    assert _run(["project", str(models), "--ranks", "4096", "--verbose"]) == 0
    out = capsys.readouterr().out
    row = next(x for x in out.splitlines() if x.strip().startswith("region=MPI_"))
    assert float(row.split()[1]) == pytest.approx(0.002 * 12, rel=0.02), row


def test_a_metric_a_call_path_never_had_makes_no_series(tmp_path, capsys):
    # "io" has no bytes at any count: not a series, and no value is said missing
    rows = ["ranks,region,time,bytes"]
    for p in RANKS:
        rows += [f"{p},solve,{40.0 / p:.6g},{1e6 / p:.6g}", f"{p},io,0.5,"]
    csv = tmp_path / "app.csv"
    csv.write_text("\n".join(rows) + "\n")
    assert _run(["fit", str(csv), "--target", "bytes"]) == 0
    out = capsys.readouterr().out
    assert "1 series over ranks" in out
    assert "left out" not in out


def test_options_a_profile_projection_cannot_use_are_refused(tmp_path, capsys):
    models = tmp_path / "m.json"
    csv = _ranks_csv(tmp_path / "app.csv")
    assert _run(["fit", str(csv), "--output", str(models)]) == 0
    capsys.readouterr()
    plot = tmp_path / "r.png"
    argv = ["project", str(models), "--ranks", "1024"]
    extra = ["--scale", "20", "--link-bandwidth", "100 Gbit/s", "--plot", str(plot)]
    assert _run([*argv, *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "scaleprobe: error: --scale, --link-bandwidth, --plot: not for a profile's"
    )
    assert not plot.exists()
    for top in ("-3", "0"):
        assert _run([*argv, "--top", top]) == 2
        assert f"--top {top}: give the rows of each table as a positive integer" in (
            capsys.readouterr().err
        )
    report = tmp_path / "r.md"
    assert _run(["report", str(csv), "--top", "0", "--output", str(report)]) == 2
    assert not report.exists()
    capsys.readouterr()
    assert _run([*argv, "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert out.split("will dominate:\n")[1].split("\n\n")[0].count("region=") == 1


def test_advice_follows_where_the_projection_is(tmp_path, capsys):
    # "wave" follows no law: the data cannot tell it, so it is listed with advice
    wave = dict(zip(RANKS, (1.0, 3.0, 0.5, 2.0, 0.7, 2.5), strict=True))
    csv = _csv(
        tmp_path / "app.csv",
        {"solve": _law(lambda p: 40.0 / p + 0.06, RANKS), "wave": wave},
    )
    models = tmp_path / "m.json"
    assert _run(["fit", str(csv), "--output", str(models)]) == 0
    capsys.readouterr()
    expected = {
        "8": "measure at 8: below the smallest measured count (16) the plausible "
        "laws part",
        "64": "measured at 64: 0.5 (no law of this series is vouched for; take "
        "the measurement)",
        "100": "measure at 100: between the measured 64 and 128 the plausible laws "
        "part",
        "8192": "measure at 2048: the plausible laws part there",
    }
    for ranks, advice in expected.items():
        assert _run(["project", str(models), "--ranks", ranks]) == 0
        row = next(
            line
            for line in capsys.readouterr().out.splitlines()
            if line.startswith("  region=wave ")
        )
        assert row.split(None, 1)[1] == advice


def test_the_advice_names_a_count_of_the_measured_grid(tmp_path, capsys):
    # a code that decomposes a cube runs at cubes only (LULESH: 27 to 343 ranks);
    # the count halfway to 8000 in doublings, 1372, is none: 11**3 is
    cubes = (27, 64, 125, 216, 343)
    wave = dict(zip(cubes, (1.0, 3.0, 0.5, 2.0, 0.7), strict=True))
    csv = _csv(tmp_path / "app.csv", {"wave": wave})
    models = tmp_path / "m.json"
    assert _run(["fit", str(csv), "--output", str(models)]) == 0
    capsys.readouterr()
    assert _run(["project", str(models), "--ranks", "8000"]) == 0
    row = next(
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("  region=wave ")
    )
    assert row.split(None, 1)[1].startswith("measure at 1331")


def test_the_hints_of_one_series_of_ranks_speak_of_ranks(tmp_path, capsys):
    two = _csv(tmp_path / "two.csv", {"solve": {4: 1.0, 8: 0.6}})
    assert _run(["fit", str(two), "--model", "base"]) == 0
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "held-out rank counts" in text
    assert "measure a third rank count" in text
    assert "node count" not in text
    flat = {p: 1.0 + 0.02 * (i % 2) for i, p in enumerate(RANKS)}
    csv = _csv(tmp_path / "flat.csv", {"solve": flat})
    assert _run(["fit", str(csv), "--model", "base", "--model", "pmnf"]) == 0
    captured = capsys.readouterr()
    assert "rank order p-value " in captured.out + captured.err
    assert " p = " not in captured.out + captured.err
