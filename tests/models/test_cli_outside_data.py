"""``scaleprobe fit``, ``project`` and ``report`` on one series of data measured
outside scaleprobe (a CSV over nodes, JSON Lines over ranks): the counts asked for,
the options such data take, and no variable of a scaleprobe kernel."""

import json

import pytest
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
