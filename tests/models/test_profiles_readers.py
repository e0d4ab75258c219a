"""Every profile reader on a small committed file: Caliper, Caliper JSON, Hatchet
JSON, Score-P CUBE, Extra-P and CSV, into one tidy table with repetitions kept."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scaleprobe.models.io.common import MeasurementFileError
from scaleprobe.models.profiles import ProfileTable, profile_format, read_profile
from scaleprobe.models.profiles.cube import folder_parameters

DATA = Path(__file__).parent / "data" / "profiles"


def _series(table, name):
    return next(s for s in table.series() if s.name == name)


def test_caliper_files_become_series_over_the_ranks_their_metadata_name():
    caliperreader = pytest.importorskip("caliperreader")
    table = read_profile(DATA / "caliper")
    assert profile_format(DATA / "caliper") == "caliper"
    assert table.axis == "ranks"
    assert table.kind == "ranks"
    assert table.source["runs"] == 3
    metric = "avg#inclusive#sum#time.duration"
    assert metric in table.metrics
    assert table.units[metric] == "sec"
    # every value is the file's own record: read one file independently
    path = next((DATA / "caliper").glob("cghRRN5HCwJacMr1l_1.cali"))
    reader = caliperreader.CaliperReader()
    reader.read(str(path))
    ranks = float(reader.globals["mpi.world.size"])
    records = [r for r in reader.records if "path" in r and metric in r]
    for record in records:
        region = record["path"]
        callpath = "->".join(region if isinstance(region, list) else [region])
        series = _series(table, f"{callpath} [{metric}]")
        at = list(series.x).index(ranks)
        assert series.values[at].tolist() == [float(record[metric])]
    main = _series(table, f"main [{metric}]")
    assert main.x.tolist() == [27.0, 64.0, 125.0]


def test_caliper_json_averages_the_rows_of_ranks_and_keeps_units(tmp_path):
    table = read_profile(DATA / "caliper-json")
    assert profile_format(DATA / "caliper-json") == "json"
    assert table.source["format"] == "caliper-json"
    assert table.axis == "ranks"
    assert table.units == {"time": "sec"}
    solve = _series(table, "main->solve")
    assert solve.x.tolist() == [4.0, 8.0, 16.0]
    # the two ranks are 2 % below and above 64 / p
    assert [v[0] for v in solve.values] == pytest.approx([16.0, 8.0, 4.0])
    assert all(v.size == 1 for v in solve.values)
    comm = _series(table, "main->comm")
    assert comm.values[2][0] == pytest.approx(0.5 + 0.25 * 4)
    single = read_profile(DATA / "caliper-json" / "run-8.json")
    assert [s.name for s in single.series()] == ["main", "main->solve", "main->comm"]


def test_hatchet_json_reads_its_graph_and_the_process_count_of_its_metadata():
    table = read_profile(DATA / "hatchet")
    assert table.source["format"] == "hatchet-json"
    assert table.axis == "ranks"  # ranks and nodes recorded: ranks vary
    assert set(table.metrics) == {"time (inc)", "time"}
    main = _series(table, "main [time (inc)]")
    expected = [64 / p + 0.5 + 0.25 * math.log2(p) + 1 for p in (4, 8, 16)]
    assert [v[0] for v in main.values] == pytest.approx(expected)


def test_cube_folders_give_parameters_and_repetitions_as_extrap_reads_them():
    pytest.importorskip("pycubexr")
    assert folder_parameters("mm.x10y1z25.r2") == ({"x": 10.0, "y": 1.0, "z": 25.0}, 2)
    assert profile_format(DATA / "cube") == "cube"
    table = read_profile(DATA / "cube", ranks="x")
    assert table.axis == "ranks"
    assert table.parameters == []
    assert {"time", "visits"} <= set(table.metrics)
    assert table.units["time"] == "sec"
    visits = _series(table, "main->mat_mul [visits]")
    assert visits.x.tolist() == [1.0, 10.0, 25.0]
    assert all(v.tolist() == [1.0] for v in visits.values)  # one call a run
    assert np.all(table.columns["run"] == 1)  # the .r1 of every folder
    default = read_profile(DATA / "cube")  # x is not named like a count
    assert default.kind == "parameter"
    assert default.axis == "x"


def test_extrap_text_json_and_jsonl_keep_every_repetition(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text(
        "PARAMETER p\nPARAMETER n\nPOINTS (4 10) (8 10) (4 20) (8 20)\n"
        "METRIC time\nREGION main\nDATA 2 2.2\nDATA 1.1 1\nDATA 4 4.4\nDATA 2.2 2\n"
    )
    table = read_profile(text)
    assert table.axis == "ranks"
    assert table.parameters == ["n"]
    names = [s.name for s in table.series()]
    assert names == ["main (n=10)", "main (n=20)"]
    assert [v.tolist() for v in table.series()[1].values] == [[4.0, 4.4], [2.2, 2.0]]
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text(
        "\n".join(
            json.dumps({"params": {"nodes": n}, "callpath": c, "value": [t, t * 1.1]})
            for n, c, t in ((2, "a", 3.0), (4, "a", 2.0), (2, "b", 1.0), (4, "b", 1.5))
        )
    )
    table = read_profile(jsonl)
    assert table.axis == "nodes"
    assert table.kind == "nodes"
    assert _series(table, "b").values[1].tolist() == [1.5, 1.5 * 1.1]
    current = tmp_path / "a.json"
    current.write_text(
        json.dumps(
            {
                "parameters": ["procs"],
                "measurements": {
                    "main": {
                        "time": [{"point": [p], "values": [1 / p]} for p in (2, 4)]
                    }
                },
            }
        )
    )
    assert read_profile(current).series()[0].x.tolist() == [2.0, 4.0]


def test_a_csv_table_keeps_its_text_labels_as_series(tmp_path):
    path = tmp_path / "runs.csv"
    rows = ["ranks,kernel,time [s]"]
    rows += [
        f"{p},{k},{t / p}" for p in (2, 4, 8) for k, t in (("cg", 8.0), ("ep", 4.0))
    ]
    path.write_text("\n".join(rows) + "\n")
    table = read_profile(path)
    assert table.axis == "ranks"
    assert table.units == {"time": "s"}
    assert [s.name for s in table.series()] == ["kernel=cg", "kernel=ep"]
    frame = table.to_frame()
    assert set(frame.columns) == {"callpath", "metric", "ranks", "run", "value"}
    assert len(frame) == 6


def test_a_text_note_on_each_measurement_does_not_split_its_series(tmp_path):
    # as Extra-P's mpi_data.csv: which interval was smallest, noted per point
    path = tmp_path / "collectives.csv"
    notes = {2: "IQR", 4: "SD", 8: "IQR", 16: "Med"}
    rows = ["ranks,mpi,variable,smallest,median"]
    for p, note in notes.items():
        for mpi in ("IntelMPI", "OpenMPI"):
            for op, c in (("MPI_Bcast", 1.0), ("MPI_Reduce", 2.0)):
                rows.append(f"{p},{mpi},{op},{note if mpi < 'O' else 'SD'},{c * p}")
    path.write_text("\n".join(rows) + "\n")
    series = read_profile(path).series()
    assert [s.name for s in series] == [
        "mpi=IntelMPI variable=MPI_Bcast",
        "mpi=IntelMPI variable=MPI_Reduce",
        "mpi=OpenMPI variable=MPI_Bcast",
        "mpi=OpenMPI variable=MPI_Reduce",
    ]
    assert all(s.x.tolist() == [2.0, 4.0, 8.0, 16.0] for s in series)
    # named as parameters, every text column is a key
    named = read_profile(path, parameters=["mpi", "variable", "smallest"])
    assert len(named.series()) == 8  # IntelMPI split by its three notes


def test_a_tidy_table_refuses_counts_that_are_no_counts():
    rows = [(0.5, "main", "time", 0, 1.0), (2, "main", "time", 0, 1.0)]
    with pytest.raises(MeasurementFileError, match="whole numbers >= 1"):
        ProfileTable.from_rows(["np"], rows, source={"path": "f.txt"})
    with pytest.raises(MeasurementFileError, match="pass ranks=NAME"):
        ProfileTable.from_rows(
            ["a", "b"], [(1, 2, "m", "t", 0, 1.0)], source={"path": "f.txt"}
        )


def test_unknown_files_and_missing_metadata_are_refused(tmp_path):
    with pytest.raises(ValueError, match="cannot tell the format"):
        read_profile(tmp_path)  # an empty folder
    broken = tmp_path / "run.json"
    broken.write_text(json.dumps({"graph": [], "dataframe": [], "metadata": {}}))
    with pytest.raises(MeasurementFileError, match="records no process count"):
        read_profile(broken)
