"""The foundation's acceptance checks, as sweeps through the whole dataflow."""

import numpy as np
import pytest
from scaleprobe.framework import run_sweep

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


def test_pingpong_sweep_achieves_the_throttled_bandwidth(tmp_path, client):
    spec = {
        "name": "pingpong",
        "kernel": "commbench.pingpong",
        "params": {"iterations": 5},
        "sweep": {
            "nodes": [2],
            "bandwidth": [100, 50, 25, 10],
            "msg_bytes": ["1 MiB", "16 MiB"],
        },
        "throttle": {
            "mode": "emulated",
            "link_bandwidth": "1 Gbit/s",
            "latency": "5 us",
        },
        "timeout": 120,
        "output": str(tmp_path / "pp.zarr"),
    }
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    achieved = ds.achieved_bandwidth.squeeze(drop=True)
    expected = 1.25e8 * ds.bandwidth / 100
    ratio = (achieved / expected).values
    assert np.all(np.abs(ratio - 1) <= 0.05), ratio
    assert ds.achieved_bandwidth.attrs["units"] == "bytes/s"
    assert ds.bandwidth.attrs["link_bandwidth"] == pytest.approx(1.25e8)
    assert ds.bandwidth.attrs["latency"] == pytest.approx(5e-6)


def test_virtual_time_sweep_on_more_ranks_than_cores(tmp_path, client):
    # 8 ranks on a 2-core host: virtual time charges each rank its own CPU time and
    # the modelled communication. The speedups this gives are measured and printed
    # by tests/benchmarks/bench_fidelity.py (no timing is asserted here).
    spec = {
        "name": "compute",
        "kernel": "commbench.compute",
        "params": {"work": "cache", "total_work": 80},
        "sweep": {"nodes": [1, 8]},
        "throttle": {"mode": "emulated"},
        "timeout": 300,
        "output": str(tmp_path / "compute.zarr"),
    }
    ds = run_sweep(spec, client, progress=False)
    assert (ds.status.values == "ok").all(), ds.error.values
    one = ds.squeeze(drop=True)
    assert (one.work_units == 80).all()
    assert (one.comp_time_max <= one.time).all()
    parts = one.cp_comp_time + one.cp_latency_time + one.cp_bandwidth_time
    np.testing.assert_allclose((parts + one.cp_intra_time).values, one.time.values)
    assert float(one.bytes_sent.sel(nodes=1)) == 0
    assert float(one.bytes_inter.sel(nodes=8)) > 0
    assert one.time.attrs["units"] == "s"
