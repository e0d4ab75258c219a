"""Extra-P's text, JSON and JSON Lines formats, on files written from its docs."""

import json
from pathlib import Path

import numpy as np
import pytest
from scaleprobe.models import MeasurementFileError, load_measurements, make_features

# The example of Extra-P's quick-start guide (docs/quick-start.md).
QUICK_START = """PARAMETER p
POINTS (4) (8) (16) (32) (64)

REGION example
METRIC time
DATA 8.31 8.02 8.14
DATA 22.74 22.66 23.20
DATA 65.79 64.74 66.62
DATA 186.78 184.68 181.58
DATA 528.86 522.44 531.78
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_text_quick_start_example(tmp_path):
    path = _write(tmp_path, "input.txt", QUICK_START)
    ds = load_measurements(path, units="s")
    assert dict(ds.sizes) == {"ranks": 5, "run": 3}
    assert ds["ranks"].values.tolist() == [4, 8, 16, 32, 64]
    assert ds["time"].sel(ranks=32).values.tolist() == [186.78, 184.68, 181.58]
    assert ds["time"].attrs["units"] == "s"
    assert ds["callpath"].item() == "example"
    assert ds.attrs["format"] == "extrap-text"
    assert ds.attrs["source"] == str(path)
    assert ds.attrs["process_parameter"] == "p"
    assert len(ds.attrs["source_sha256"]) == 64


def test_text_two_parameters_regions_metrics_and_comments(tmp_path):
    # Both orders the grammar allows: METRIC then REGIONs, and REGION then METRICs;
    # several POINTS and PARAMETER lines; repetitions of different counts.
    text = """# a comment before the parameters
PARAMETER procs
PARAMETER size
POINTS ( 2 10 ) ( 4 10 )
POINTS ((2) (20)) ((4) (20))

METRIC time
REGION main
DATA 10 11
DATA 5 6
DATA 20 21
DATA 10
# comments may sit between DATA lines
REGION main->solve
DATA 9 9
DATA 4 4
DATA 18 18
DATA 9 9
REGION main->io
METRIC bytes
DATA 100
DATA 100
DATA 200
DATA 200
METRIC time
DATA 1
DATA 2
DATA 3
DATA 4
"""
    ds = load_measurements(_write(tmp_path, "two.txt", text))
    assert dict(ds.sizes) == {"ranks": 2, "size": 2, "callpath": 3, "run": 2}
    assert set(ds.data_vars) == {"time", "bytes"}
    main = ds["time"].sel(callpath="main")
    assert main.sel(ranks=4, size=20).values.tolist()[0] == 10.0
    assert np.isnan(main.sel(ranks=4, size=20).values[1])  # one repetition only
    assert ds["time"].sel(callpath="main->io", ranks=2, size=20, run=0) == 3.0
    assert ds["bytes"].sel(callpath="main->io", ranks=4, size=10, run=0) == 100.0
    # main->solve has no bytes
    assert ds["bytes"].sel(callpath="main->solve").isnull().all()
    assert "units" not in ds["time"].attrs  # the file does not say


def test_text_points_without_parentheses_metric_and_region_optional(tmp_path):
    text = "PARAMETER np\nPOINTS 1000 2000 4000\nDATA 4.1 3.9\nDATA 4.0\nDATA 4.3\n"
    ds = load_measurements(_write(tmp_path, "bare.txt", text))
    assert ds["ranks"].values.tolist() == [1000, 2000, 4000]
    assert list(ds.data_vars) == ["value"]
    assert "callpath" not in ds.coords
    assert ds["value"].sel(ranks=1000).values.tolist() == [4.1, 3.9]


def test_text_nodes_parameter_and_ppn(tmp_path):
    text = "PARAMETER nodes\nPOINTS (1) (2) (4)\nMETRIC time\nDATA 3\nDATA 2\nDATA 1\n"
    ds = load_measurements(_write(tmp_path, "nodes.txt", text), ppn=8)
    assert ds["nodes"].values.tolist() == [1, 2, 4]
    assert ds["ppn"].item() == 8
    assert "ranks" not in ds.dims


def test_text_unrecognised_process_parameter_names_the_way_out(tmp_path):
    path = _write(tmp_path, "x.txt", "PARAMETER x\nPOINTS (20) (30)\nDATA 1\nDATA 2\n")
    with pytest.raises(MeasurementFileError, match=r"ranks=NAME.*--ranks-from"):
        load_measurements(path)
    ds = load_measurements(path, ranks="x")
    assert ds["ranks"].values.tolist() == [20, 30]
    assert ds.attrs["process_parameter"] == "x"


BAD_TEXT = [
    ("PARAMETER p\nPOINTS (1) (2)\nDAT 1\n", 3, "unknown field 'DAT'"),
    ("PARAMETER p\nDATA 1\n", 2, "DATA before any POINTS"),
    ("POINTS (1) (2)\n", 1, "POINTS before any PARAMETER"),
    ("PARAMETER p\nPOINTS (1) (2)\nDATA 1\nDATA 2\nDATA 3\n", 5, "more DATA lines"),
    ("PARAMETER p\nPOINTS (1) (2)\nDATA 1 x2\n", 3, "value 'x2' is not a number"),
    ("PARAMETER p q\nPOINTS (1 2) (3)\n", 2, "has 1 coordinates"),
    ("PARAMETER p\nPOINTS (1)\nPARAMETER q\n", 3, "PARAMETER after POINTS"),
    ("PARAMETER p\nPOINTS (1) (1)\n", 2, "defined twice"),
    ("PARAMETER p\nPOINTS (1) (2\n", 2, "unbalanced"),
    ("PARAMETER p\nPOINTS (1) (2)\nDATA\n", 3, "DATA without values"),
    ("PARAMETER p\nPOINTS (1) (2)\nREGION a\nDATA 1\nREGION b\n", 3, "1 DATA lines"),
    ("PARAMETER p\nPOINTS (0) (2)\nDATA 1\nDATA 1\n", None, "whole numbers >= 1"),
    ("PARAMETER p\nPOINTS (1.5) (2)\nDATA 1\nDATA 1\n", None, "value 1.5"),
    ("# nothing\n", None, "holds no DATA"),
]


@pytest.mark.parametrize(("text", "line", "what"), BAD_TEXT)
def test_text_errors_say_where_and_what(tmp_path, text, line, what):
    path = _write(tmp_path, "bad.txt", text)
    with pytest.raises(MeasurementFileError) as error:
        load_measurements(path)
    message = str(error.value)
    assert message.startswith(str(path))
    assert what in message
    if line is not None:
        assert f"line {line}" in message


CURRENT_JSON = {
    "parameters": ["p", "n"],
    "measurements": {
        "sweep": {
            "time": [
                {"point": [4, 10], "values": [3.5, 3.6]},
                {"point": [8, 10], "values": [2.0, 2.1]},
                {"point": ["16", "10"], "values": [1.2, 1.1]},
            ],
            "flops": [{"point": [4, 10], "values": [100]}],
        },
        "solve": {"time": [{"point": [4, 10], "values": [1.0, 1.0]}]},
    },
}


def test_json_current_layout(tmp_path):
    path = _write(tmp_path, "input.json", json.dumps(CURRENT_JSON))
    ds = load_measurements(path)
    assert dict(ds.sizes) == {"ranks": 3, "n": 1, "callpath": 2, "run": 2}
    assert ds.attrs["format"] == "extrap-json"
    assert ds["time"].sel(callpath="sweep", ranks=16, n=10).values.tolist() == [
        1.2,
        1.1,
    ]
    assert ds["flops"].sel(callpath="sweep", ranks=4, n=10, run=0) == 100
    assert ds["flops"].sel(callpath="solve").isnull().all()


def test_json_legacy_layout_aggregates_repetitions(tmp_path):
    def coordinate(ident, value):
        pairs = [{"parameter_id": 1, "parameter_value": value}]
        return {"id": ident, "parameter_value_pairs": pairs}

    def measurement(ident, coordinate_id, value):
        return {
            "callpath_id": 1,
            "coordinate_id": coordinate_id,
            "id": ident,
            "metric_id": 1,
            "value": value,
        }

    data = {
        "callpaths": [{"id": 1, "name": "sweep"}],
        "coordinates": [coordinate(2, 8), coordinate(1, 4)],
        "measurements": [
            measurement(1, 1, 3.0),
            measurement(2, 1, 3.2),
            measurement(3, 2, 2.0),
        ],
        "metrics": [{"id": 1, "name": "time"}],
        "parameters": [{"id": 1, "name": "processes"}],
    }
    ds = load_measurements(_write(tmp_path, "legacy.json", json.dumps(data)))
    assert ds.attrs["format"] == "extrap-json-legacy"
    assert ds["time"].sel(ranks=4).values.tolist() == [3.0, 3.2]
    assert ds["time"].sel(ranks=8, run=0) == 2.0
    assert ds["callpath"].item() == "sweep"


BAD_JSON = [
    ('{"parameters": ["p"],\n "measurements": {', "line 2", "not valid JSON"),
    ('{"parameters": ["p"]}', "top level", "missing 'measurements'"),
    (
        '{"parameters": ["p"], "measurements": {"a": {"t": [{"point": [1, 2], '
        '"values": [1]}]}}}',
        "measurements['a']['t'][0]",
        "has 2 coordinates",
    ),
    (
        '{"parameters": ["p"], "measurements": {"a": {"t": [{"point": [1], '
        '"values": ["fast"]}]}}}',
        "measurements['a']['t'][0]",
        "'fast' is not a number",
    ),
    (
        '{"parameters": [{"id": 1, "name": "p"}], "callpaths": [{"id": 1, "name": '
        '"a"}], "metrics": [{"id": 1, "name": "t"}], "coordinates": [], '
        '"measurements": [{"callpath_id": 1, "coordinate_id": 7, "metric_id": 1, '
        '"value": 1}]}',
        "measurements[0]",
        "coordinate_id 7 is not defined",
    ),
]


@pytest.mark.parametrize(("text", "where", "what"), BAD_JSON)
def test_json_errors_say_where_and_what(tmp_path, text, where, what):
    path = _write(tmp_path, "bad.json", text)
    with pytest.raises(MeasurementFileError) as error:
        load_measurements(path)
    assert where in str(error.value)
    assert what in str(error.value)


def test_jsonl_values_lists_and_optional_fields(tmp_path):
    lines = [
        {"params": {"p": 4, "n": 100}, "value": 2.0},
        {"params": {"n": 100, "p": 4}, "value": [2.1, 2.2]},
        {"params": {"p": 8, "n": 100}, "value": 1.0},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\n\n"
    ds = load_measurements(_write(tmp_path, "in.jsonl", text))
    assert ds.attrs["format"] == "extrap-jsonl"
    assert "callpath" not in ds.coords
    assert ds["value"].sel(ranks=4, n=100).values.tolist() == [2.0, 2.1, 2.2]
    assert ds["value"].sel(ranks=8, n=100).values.tolist()[0] == 1.0


def test_jsonl_callpaths_and_metrics(tmp_path):
    lines = [
        {"params": {"p": p}, "callpath": c, "metric": m, "value": v * p}
        for p in (2, 4)
        for c, v in (("main", 1.0), ("main->comm", 0.5))
        for m in ("time", "visits")
    ]
    path = _write(tmp_path, "in.jsonl", "\n".join(map(json.dumps, lines)))
    ds = load_measurements(path)
    assert dict(ds.sizes) == {"ranks": 2, "callpath": 2, "run": 1}
    assert ds["visits"].sel(callpath="main->comm", ranks=4, run=0) == 2.0
    one = load_measurements(path, callpath="main->comm")
    assert one["callpath"].item() == "main->comm"
    assert one["time"].sel(run=0).values.tolist() == [1.0, 2.0]


BAD_JSONL = [
    ('{"params": {"p": 1}, "value": 1}\n{"params": {"p": 2}, "value": 1', 2, "JSON"),
    ('{"params": {"p": 1}, "value": 1}\n{"value": 2}', 2, "missing 'params'"),
    ('{"params": {"p": 1}, "value": 1}\n{"params": {"q": 2}, "value": 2}', 2, "line 1"),
    ('{"params": {"p": 1}}', 1, "missing 'value'"),
    ('{"params": {"p": 1}, "value": []}', 1, "no values"),
    ('{"params": {"p": 1}, "value": true}', 1, "is not a number"),
]


@pytest.mark.parametrize(("text", "line", "what"), BAD_JSONL)
def test_jsonl_errors_say_where_and_what(tmp_path, text, line, what):
    path = _write(tmp_path, "bad.jsonl", text)
    with pytest.raises(MeasurementFileError) as error:
        load_measurements(path)
    assert f"line {line}" in str(error.value)
    assert what in str(error.value)


def test_jsonl_mixed_callpaths_refused(tmp_path):
    text = (
        '{"params": {"p": 1}, "value": 1, "callpath": "a"}\n'
        '{"params": {"p": 2}, "value": 1}\n'
    )
    with pytest.raises(MeasurementFileError, match="some lines name a callpath"):
        load_measurements(_write(tmp_path, "mixed.jsonl", text))


def test_selection_and_single_series(tmp_path):
    text = """PARAMETER p n
POINTS (2 10) (2 20) (4 10) (4 20)
METRIC time
REGION main
DATA 1
DATA 2
DATA 3
DATA 4
REGION io
DATA 5
DATA 6
DATA 7
DATA 8
"""
    path = _write(tmp_path, "series.txt", text)
    with pytest.raises(ValueError, match="several series") as error:
        load_measurements(path, single_series=True)
    assert "--callpath NAME" in str(error.value)
    assert "--select n=VALUE" in str(error.value)
    ds = load_measurements(path, callpath="io", select={"n": "20"}, single_series=True)
    assert ds["time"].sel(run=0).values.tolist() == [6.0, 8.0]
    assert ds["n"].item() == 20
    with pytest.raises(ValueError, match="has no callpath 'solve'; it has: io, main"):
        load_measurements(path, callpath="solve")
    with pytest.raises(ValueError, match="has no 'size'"):
        load_measurements(path, select={"size": 1})


def test_a_real_extrap_file_relearn():
    """RELeARN's main() from Extra-P's test data (BSD-3-Clause, notice in the file)."""
    path = Path(__file__).parent / "data" / "relearn_main.txt"
    ds = load_measurements(path, units="s")
    assert dict(ds.sizes) == {"ranks": 5, "n": 5, "run": 2}
    assert ds["ranks"].values.tolist() == [32, 64, 128, 256, 512]
    assert ds["n"].values.tolist() == [5000, 6000, 7000, 8000, 9000]
    assert ds["callpath"].item() == "main()"
    assert ds["time"].sel(ranks=32, n=5000).values.tolist() == [406.498, 405.58]
    assert ds["time"].sel(ranks=512, n=9000).values.tolist() == [2536.75, 2536.75]
    X, y = make_features(ds.sel(n=7000))
    assert sorted(set(X["ranks"])) == [32, 64, 128, 256, 512]
    assert len(y) == 10
