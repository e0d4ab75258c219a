"""``scaleprobe fit``, ``project`` and ``report`` on a profile of many series, and
rank counts as an axis of their own (no ``--ppn``, tables headed "ranks")."""

from __future__ import annotations

import argparse
import json

import numpy as np
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


def test_a_ranks_only_profile_projects_without_ppn_and_says_ranks(tmp_path, capsys):
    models = tmp_path / "profile.json"
    _run(["fit", str(_ranks_csv(tmp_path / "app.csv")), "--output", str(models)])
    capsys.readouterr()
    assert _run(["project", str(models), "--ranks", "32768"]) == 0
    out = capsys.readouterr().out
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
