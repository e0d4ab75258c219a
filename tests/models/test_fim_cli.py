"""A real K-means sweep through ``scaleprobe fit``, ``project`` and ``report``: FiM
and RBASP join the ensemble, and the projection takes the size they regress on."""

from __future__ import annotations

import argparse
import json

import pytest
from scaleprobe.framework import run_sweep
from scaleprobe.framework._cli_models import register

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def _run(argv):
    parser = argparse.ArgumentParser(prog="scaleprobe")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


@pytest.fixture(scope="module")
def kmeans_results(tmp_path_factory, cluster):
    from distributed import Client

    folder = tmp_path_factory.mktemp("kmeans")
    spec = {
        "name": "kmeans",
        "kernel": "iterative.kmeans",
        "params": {"clusters": 4, "iterations": 3},
        "sweep": {"nodes": [1, 2, 4], "ppn": 1, "points": [4096, 16384]},
        "throttle": {"mode": "emulated", "link_bandwidth": "1 Gbit/s"},
        "timeout": 300,
        "output": str(folder / "kmeans.zarr"),
    }
    with Client(cluster) as client:
        data = run_sweep(spec, client, progress=False)
    assert (data.status.values == "ok").all(), data.error.values
    return folder / "kmeans.zarr"


def test_fit_project_and_report_include_fim_and_rbasp(kmeans_results, capsys):
    folder = kmeans_results.parent
    models = folder / "models.json"
    assert _run(["fit", str(kmeans_results), "--output", str(models)]) == 0
    out = capsys.readouterr().out
    assert "fim extrapolation" in out
    assert "rbasp extrapolation" in out
    assert "fim: computation: FiM-Cal" in out
    document = json.loads(models.read_text())
    assert {"fim", "rbasp"} <= set(document["models"])
    assert document["training"]["parameters"] == {"points": [4096.0, 16384.0]}

    argv = ["project", str(models), "--name", "fim", "--nodes", "8:16"]
    assert _run([*argv, "--param", "points=65536"]) == 0
    captured = capsys.readouterr()
    # the law, the table, notes on the interval; then, apart, the verdict
    lines = captured.out.split("\n\n")[0].splitlines()[2:]
    rows = [line.split() for line in lines[:2]]
    assert [(row[0], row[2]) for row in rows] == [
        ("8", "6.554e+04"),
        ("16", "6.554e+04"),
    ]
    # With three node counts the interval may already be too wide to answer at 8 or
    # 16 nodes, or rest on a widening checked nearer than they are: a line after
    # the table says each, and never of the same count.
    notes = lines[2:]
    wide = [n for n in notes if "the data cannot tell" in n]
    unchecked = [n for n in notes if "widening is extrapolated" in n]
    assert len(wide) <= 1
    assert len(unchecked) <= 1
    assert len(notes) == len(wide) + len(unchecked)
    if wide:
        assert wide[0].startswith(("from 8 nodes on", "from 16 nodes on"))
    if unchecked:
        assert unchecked[0].startswith(("at 8 nodes, ", "at 16 nodes, ", "from 8 to"))
    if wide and unchecked:  # never of the same count
        assert wide[0].startswith("from 16 nodes on")
        assert unchecked[0].startswith("at 8 nodes, ")
    assert "extrapolates in points" in captured.err
    assert _run([*argv, "--param", "clusters=4"]) == 2
    assert "not trained over 'clusters'" in capsys.readouterr().err

    report = folder / "report.md"
    argv = ["report", str(kmeans_results), "--output", str(report), "--model", "fim"]
    assert _run([*argv, "--model", "rbasp", "--cv", "extrapolation"]) == 0
    text = report.read_text()
    assert "| fim " in text
    assert "points 16384" in text
