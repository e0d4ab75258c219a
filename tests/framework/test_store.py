import json
import os

import numpy as np
import pytest
from scaleprobe.framework.store import ResultStore, StoreError, open_results


def _campaign(kernel="k"):
    return {
        "identity": {"kernel": kernel, "params": {}, "throttle": {}},
        "sweep": {"nodes": [1, 2], "ppn": [1], "bandwidth": [100, 50], "run": [0]},
        "attrs": {"title": "t", "spec": "name: t\n"},
    }


def _result(nodes, bandwidth, status="ok", trials=2, levels=3):
    record = {
        "metrics": {
            "time": nodes / bandwidth,
            "bytes_sent": 10 * nodes,
            "label": f"n{nodes}",
        },
        "trials": [
            {
                "time": t + nodes,
                "valid": True,
                "profiles": {"level": {"frontier": list(range(levels))}},
            }
            for t in range(trials)
        ],
        "profiles": {"rank": {"load": [1.0] * nodes}},
        "units": {"frontier": "vertices"},
    }
    coords = {"nodes": nodes, "ppn": 1, "bandwidth": bandwidth, "run": 0}
    from scaleprobe.framework.planning import point_key

    return {
        "key": point_key(coords),
        "coords": coords,
        "status": status,
        "error": "",
        "record": record if status == "ok" else None,
        "launch_time": 0.5,
        "returncode": 0,
        "started": 1.0,
        "finished": 2.0,
        "command": ["x"],
        "stdout": "out",
        "stderr": "err",
    }


def test_counts_added_to_a_campaign_are_an_increasing_index(tmp_path):
    # a campaign extended by suggest stores counts in the order they were measured
    store = ResultStore(tmp_path / "c.zarr")
    campaign = _campaign()
    campaign["sweep"]["nodes"] = [4, 1]
    store.start(campaign)
    for nodes in (4, 1, 16, 2):
        store.write_point(_result(nodes, 100))
    ds = store.consolidate()
    assert ds["nodes"].values.tolist() == [1, 2, 4, 16]
    assert ds["bandwidth"].values.tolist() == [100, 50]  # as the spec lists them
    assert ds["ranks"].sel(ppn=1).values.tolist() == [1, 2, 4, 16]
    assert ds.run_time.sel(
        nodes=slice(2, 4), bandwidth=100
    ).squeeze().values.tolist() == [
        pytest.approx(0.02),
        pytest.approx(0.04),
    ]


def test_points_assemble_into_a_labelled_dataset(tmp_path):
    store = ResultStore(tmp_path / "c.zarr")
    store.start(_campaign())
    store.write_point(_result(1, 100))
    store.write_point(_result(2, 50, trials=3, levels=4))
    store.write_point(_result(2, 100, status="failed"))
    ds = store.consolidate()
    assert dict(ds.sizes) == {
        "nodes": 2,
        "ppn": 1,
        "bandwidth": 2,
        "run": 1,
        "trial": 3,
        "level": 4,
        "rank": 2,
    }
    assert ds.status.sel(nodes=2, bandwidth=100).item() == "failed"
    assert ds.status.sel(nodes=1, bandwidth=50).item() == ""
    # per-trial 'time' keeps the name; the point-level one becomes run_time
    assert ds.time.dims == ("nodes", "ppn", "bandwidth", "run", "trial")
    assert ds.run_time.sel(nodes=2, bandwidth=50).item() == pytest.approx(0.04)
    assert np.isnan(ds.time.sel(nodes=1, bandwidth=100, trial=2)).all()
    assert ds.frontier.dims[-2:] == ("trial", "level")
    assert ds.frontier.attrs["units"] == "vertices"
    assert ds.bytes_sent.attrs["units"] == "bytes"
    assert ds.label.sel(nodes=1, bandwidth=100).item() == "n1"
    assert ds.ranks.sel(nodes=2, ppn=1).item() == 2
    assert ds.attrs["spec"] == "name: t\n"
    for name, var in ds.data_vars.items():
        assert "units" in var.attrs, name
        assert "long_name" in var.attrs, name
    with open(os.path.join(store.logs_dir, f"{_result(1, 100)['key']}.log")) as f:
        log = f.read()
    assert "err" in log
    assert "out" in log


def test_open_results_rebuilds_a_stale_dataset(tmp_path):
    store = ResultStore(tmp_path / "c.zarr")
    store.start(_campaign())
    store.write_point(_result(1, 100))
    store.consolidate()
    store.write_point(_result(2, 100))  # killed before the next consolidation
    ds = open_results(tmp_path / "c.zarr")
    assert ds.attrs["points"] == 2
    assert (ds.status.values == "ok").sum() == 2
    assert open_results(tmp_path / "c.zarr").attrs["points"] == 2


def test_a_different_campaign_is_refused(tmp_path):
    store = ResultStore(tmp_path / "c.zarr")
    store.start(_campaign())
    with pytest.raises(StoreError, match="kernel changed"):
        store.start(_campaign(kernel="other"))


def test_point_files_are_complete_json_and_netcdf_works(tmp_path):
    store = ResultStore(tmp_path / "c.nc")
    store.start(_campaign())
    store.write_point(_result(1, 50))
    names = os.listdir(store.points_dir)
    assert not [n for n in names if ".tmp" in n]
    for name in names:
        with open(os.path.join(store.points_dir, name)) as f:
            json.load(f)
    ds = open_results(tmp_path / "c.nc")
    assert ds.status.sel(nodes=1, bandwidth=50).item() == "ok"


def test_missing_results_are_reported(tmp_path):
    with pytest.raises(FileNotFoundError, match="no scaleprobe results"):
        open_results(tmp_path / "nothing.zarr")


def _small_store(tmp_path):
    store = ResultStore(tmp_path / "c.zarr")
    store.start(_campaign())
    store.write_point(_result(1, 100))
    store.consolidate()
    return str(tmp_path / "c.zarr")


def test_show_answers_an_unknown_metric_with_one_line(tmp_path, capsys):
    from scaleprobe.framework.cli import main

    path = _small_store(tmp_path)
    assert main(["show", path, "--metric", "tme"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert "has no metric 'tme'; did you mean 'time'?" in lines[0]
    assert "bytes_sent" in lines[0]
    assert main(["show", path, "--metric", "bytes_sent"]) == 0
    assert "median bytes_sent" in capsys.readouterr().out
