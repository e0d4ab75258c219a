"""CSV and Parquet tables with one row per measurement, and their use downstream."""

import sys

import numpy as np
import pandas as pd
import pytest
from scaleprobe.models import (
    MeasurementFileError,
    PMNFSearch,
    load_measurements,
    make_features,
    measurement_format,
)


def _law(nodes):
    """A known law in node counts: 50/n + 3/sqrt(n) seconds."""
    return 50 / nodes + 3 / np.sqrt(nodes)


def test_tidy_csv_keys_labels_runs_and_units(tmp_path):
    rows = [
        {
            "nodes": n,
            "scale": s,
            "kernel": k,
            "run": r,
            "time [s]": _law(n) * (s - 19) * (1 + 0.01 * r),
            "bytes_sent (B)": 1000 * n,
        }
        for n in (1, 2, 4)
        for s in (20, 21)
        for k in ("bfs", "sssp")
        for r in (0, 1)
    ]
    path = tmp_path / "sweep.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    ds = load_measurements(path)
    assert dict(ds.sizes) == {"nodes": 3, "scale": 2, "kernel": 2, "run": 2}
    assert set(ds.data_vars) == {"time", "bytes_sent"}
    assert ds["time"].attrs["units"] == "s"
    assert ds["bytes_sent"].attrs["units"] == "B"
    assert ds.attrs["format"] == "csv"
    assert ds["time"].sel(nodes=4, scale=21, kernel="bfs", run=1) == pytest.approx(
        _law(4) * 2 * 1.01
    )


def test_repetitions_numbered_when_no_run_column(tmp_path):
    path = tmp_path / "reps.csv"
    path.write_text("np,time\n2,1.0\n2,1.1\n4,0.6\n2,1.2\n")
    ds = load_measurements(path, units={"time": "s"})
    assert ds["ranks"].values.tolist() == [2, 4]
    assert ds["time"].sel(ranks=2).values.tolist() == [1.0, 1.1, 1.2]
    assert ds["time"].sel(ranks=4).values.tolist()[0] == 0.6


def test_explicit_roles_ignore_other_columns(tmp_path):
    # Shaped like a table of summary statistics: labels, a count and statistics.
    path = tmp_path / "stats.csv"
    path.write_text(
        "mpi,variable,Ranks,N,mean,median,chosen\n"
        "A,MPI_Bcast,32,1600,10.5,9.1,IQR\n"
        "A,MPI_Bcast,64,1998,14.7,12.9,Med\n"
        "B,MPI_Bcast,32,1500,11.0,9.5,IQR\n"
        "B,MPI_Bcast,64,1900,15.0,13.0,SD\n"
    )
    ds = load_measurements(
        path, parameters=["mpi", "variable"], metrics=["median"], units="us"
    )
    assert dict(ds.sizes) == {"ranks": 2, "mpi": 2, "variable": 1, "run": 1}
    assert list(ds.data_vars) == ["median"]
    assert ds.attrs["process_parameter"] == "Ranks"
    assert ds.attrs["ignored_columns"] == ["N", "mean", "chosen"]
    assert ds["median"].sel(mpi="B", ranks=64, run=0).item() == 13.0
    # A label that changes in every row is not a sweep parameter.
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "Ranks,label,t\n"
        + "".join(f"{2 ** (i % 8 + 1)},L{i},{i}\n" for i in range(400))
    )
    with pytest.raises(MeasurementFileError, match="too many for a sweep parameter"):
        load_measurements(labels)


def test_annotation_columns_are_not_taken_for_a_grid(tmp_path):
    rng = np.random.default_rng(1)
    rows = [
        {
            "ranks": r,
            "mpi": m,
            "variable": v,
            **{f"note{k}": rng.choice(["IQR", "Med", "SD"]) for k in range(3)},
            "median": 1.0,
        }
        for r in (2, 4, 8)
        for m in ("A", "B")
        for v in ("X", "Y", "Z")
    ]
    path = tmp_path / "notes.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    with pytest.raises(MeasurementFileError, match="do not cross"):
        load_measurements(path)
    ds = load_measurements(path, parameters=["mpi", "variable"])
    assert dict(ds.sizes) == {"ranks": 3, "mpi": 2, "variable": 3, "run": 1}


def test_csv_feeds_make_features_and_a_known_law(tmp_path):
    nodes = np.repeat([1, 2, 4, 8, 16, 32, 64], 3)
    path = tmp_path / "law.csv"
    pd.DataFrame({"nodes": nodes, "time": _law(nodes)}).to_csv(path, index=False)
    ds = load_measurements(path, ppn=1, units="s")
    X, y = make_features(ds)
    assert len(y) == nodes.size
    assert sorted(set(X["nodes"])) == [1, 2, 4, 8, 16, 32, 64]
    law = PMNFSearch(parameter="nodes").fit(X, y)
    assert set(law.terms_) == {"1/p", "1/sqrt(p)"}
    np.testing.assert_allclose(sorted(law.coef_), [3.0, 50.0], rtol=1e-6)


BAD_CSV = [
    ("np,time\n2,1.0\n4,0.5\n\n8,fast\n", "line 5", "column 'time' holds 'fast'"),
    ("np,time\n", None, "has no data rows"),
    ("np\n2\n", None, "has no metric column (a column of numbers"),
    (
        "np,time\n2,abc\n4,1.0\n",
        None,
        "has no metric column: 'time' is read as a label, most of its values are "
        "not numbers ('abc')",
    ),
    ("np,nodes,time\n2,1,1.0\n", None, "several parameters could count processes"),
    ("cores,time\n2,1.0\n", None, "no parameter is recognised as a process count"),
    ("np,run,time\n2,0,1.0\n2,0,1.1\n", None, "two rows have the same keys"),
    ("np,kernel,time\n2,a,1.0\n4,,1.0\n", "line 3", "column 'kernel' is empty"),
    ("np,time,time\n2,1,1\n", None, "appears twice"),
]


@pytest.mark.parametrize(("text", "where", "what"), BAD_CSV)
def test_csv_errors_say_where_and_what(tmp_path, text, where, what):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(MeasurementFileError) as error:
        load_measurements(path)
    assert str(error.value).startswith(str(path))
    assert what in str(error.value)
    if where:
        assert where in str(error.value)


def test_unknown_columns_and_options_are_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("np,time\n2,1.0\n")
    with pytest.raises(MeasurementFileError, match="no column 'rank' for metrics"):
        load_measurements(path, metrics=["rank"])
    with pytest.raises(ValueError, match="not metrics of"):
        load_measurements(path, units={"energy": "J"})
    with pytest.raises(ValueError, match="ppn must be a positive number"):
        load_measurements(path, ppn=0)
    with pytest.raises(ValueError, match="ranks= or nodes=, not both"):
        load_measurements(path, ranks="np", nodes="np")
    with pytest.raises(ValueError, match=r"allowed suffixes: \.csv"):
        load_measurements(tmp_path / "t.xlsx")
    with pytest.raises(FileNotFoundError, match="no measurement file"):
        load_measurements(tmp_path / "absent.csv")
    text = tmp_path / "t.txt"
    text.write_text("PARAMETER p\nPOINTS (1)\nDATA 1\n")
    with pytest.raises(ValueError, match="apply to CSV and Parquet tables"):
        load_measurements(text, metrics=["time"])


def test_format_from_suffix_or_argument(tmp_path):
    assert measurement_format("a/b.CSV") == "csv"
    assert measurement_format("a/b.pq") == "parquet"
    assert measurement_format("a/b.zarr") is None
    path = tmp_path / "data.dat"
    path.write_text("procs,time\n4,2.0\n")
    assert load_measurements(path, format="csv")["time"].item() == 2.0


def test_parquet_roundtrip(tmp_path):
    pytest.importorskip("pyarrow", reason="parquet needs the optional pyarrow")
    frame = pd.DataFrame(
        {"ranks": [4, 8, 16, 4], "callpath": ["main"] * 4, "time": [4.0, 2, 1, 4.2]}
    )
    path = tmp_path / "m.parquet"
    frame.to_parquet(path)
    ds = load_measurements(path)
    assert ds.attrs["format"] == "parquet"
    assert ds["callpath"].item() == "main"
    assert ds["time"].sel(ranks=4).values.tolist() == [4.0, 4.2]


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    path = tmp_path / "m.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match="pip install pyarrow"):
        load_measurements(path)
