"""``scaleprobe fit`` and ``report`` read measurement files as well as results."""

import argparse

import numpy as np
import pandas as pd
from scaleprobe.framework._cli_models import register


def _run(argv):
    parser = argparse.ArgumentParser(prog="scaleprobe")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def _extrap_text(path, callpaths):
    nodes = [1, 2, 4, 8, 16, 32]
    lines = ["PARAMETER procs", "POINTS " + " ".join(f"({n})" for n in nodes)]
    lines.append("METRIC time")
    for name, scale in callpaths.items():
        lines.append(f"REGION {name}")
        for n in nodes:
            t = scale * (40 / n + 2 / np.sqrt(n))
            lines.append(f"DATA {t:.6f} {t * 1.01:.6f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_fit_reads_an_extrap_text_file(tmp_path, capsys):
    path = _extrap_text(tmp_path / "app.txt", {"main": 1.0, "main->solve": 0.5})
    model_file = tmp_path / "models.json"
    argv = ["fit", str(path), "--model", "base", "--cv", "kfold:3"]
    code = _run([*argv, "--callpath", "main->solve", "--output", str(model_file)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "base" in out
    assert model_file.exists()


def test_fit_refuses_several_callpaths_and_says_what_to_choose(tmp_path, capsys):
    path = _extrap_text(tmp_path / "app.txt", {"main": 1.0, "main->solve": 0.5})
    code = _run(["fit", str(path), "--model", "base", "--cv", "kfold:3"])
    err = capsys.readouterr().err
    assert code == 2
    assert "several series" in err
    assert "--callpath NAME" in err


def test_fit_reads_a_csv_and_reports_bad_select(tmp_path, capsys):
    nodes = np.repeat([1, 2, 4, 8, 16], 2)
    path = tmp_path / "runs.csv"
    frame = pd.DataFrame({"nodes": nodes, "input": "small", "time [s]": 30 / nodes + 1})
    frame.to_csv(path, index=False)
    code = _run(["fit", str(path), "--model", "base", "--cv", "kfold:3"])
    assert code == 2
    assert "pass ppn=" in capsys.readouterr().err  # nodes without ranks per node
    code = _run(["fit", str(path), "--ppn", "4", "--model", "base", "--cv", "kfold:3"])
    assert code == 0, capsys.readouterr()
    code = _run(["fit", str(path), "--select", "input=large", "--model", "base"])
    err = capsys.readouterr().err
    assert code == 2
    assert "has no input 'large'; it has: small" in err
    code = _run(["fit", str(path), "--select", "input"])
    assert code == 2
    assert "use NAME=VALUE" in capsys.readouterr().err


def test_report_reads_a_jsonl_file(tmp_path, capsys):
    lines = [
        f'{{"params": {{"p": {n}}}, "metric": "time", "value": {20 / n + 1}}}'
        for n in (1, 2, 4, 8, 16, 32)
        for _ in range(2)
    ]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(lines))
    output = tmp_path / "report.md"
    code = _run(
        [
            "report",
            str(path),
            "--model",
            "base",
            "--cv",
            "kfold:3",
            "--output",
            str(output),
        ]
    )
    assert code == 0, capsys.readouterr()
    assert output.exists()
    text = output.read_text()
    assert "base" in text
    assert "time" in text
