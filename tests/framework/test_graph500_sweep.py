"""A throttled Graph500 sweep lands in the store with its per-level profile."""

import pytest
from scaleprobe.framework import run_sweep

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def test_graph500_sweep_communication_grows_as_bandwidth_shrinks(tmp_path, client):
    spec = {
        "name": "g500",
        "kernel": "graph500",
        "params": {"nbfs": 4, "variant": "simple"},
        "sweep": {
            "nodes": [2, 4],
            "ppn": [1],
            "scale": [10, 12],
            "bandwidth": [100, 10],
        },
        "admissible": "power_of_two",
        "throttle": {"mode": "emulated", "link_bandwidth": "1 Gbit/s"},
        "timeout": 300,
        "output": str(tmp_path / "g500.zarr"),
    }
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    assert ds.sizes["trial"] == 4
    assert ds.sizes["level"] >= 3
    assert (ds.valid == 1).all()
    comm = ds.bfs_comm_time.squeeze("run", drop=True)
    slow, fast = comm.sel(bandwidth=10), comm.sel(bandwidth=100)
    assert (slow > fast).all(), (slow.values, fast.values)
    # the per-level profile: frontier sizes over the levels of every search
    frontier = ds.frontier.sel(nodes=2, ppn=1, scale=12, bandwidth=100).squeeze()
    assert frontier.dims == ("trial", "level")
    assert (frontier.sum("level") > 0).all()
    # the traversed edges do not depend on bandwidth or the rank count
    nedge = ds.nedge.squeeze("run", drop=True)
    assert float(nedge.sel(scale=12).std(["nodes", "ppn", "bandwidth"]).max()) == 0
