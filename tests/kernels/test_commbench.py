"""The commbench kernels under real MPI: pingpong accuracy and compute scaling."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import pytest

from scaleprobe.kernels.record import parse_record

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
GBIT = 1.25e8


def _kernel(name, ranks, args, comm, tmp_path=None):
    env = dict(os.environ, SCALEPROBE_COMM=json.dumps(comm))
    done = subprocess.run(
        [MPIEXEC, "-n", str(ranks), sys.executable, "-m",
         f"scaleprobe.kernels.commbench.{name}", *args],
        capture_output=True, text=True, env=env, timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return parse_record(done.stdout)


@pytest.mark.mpi
@pytest.mark.parametrize("msg_bytes", ["1 MiB", "16 MiB"])
@pytest.mark.parametrize("bandwidth", [100, 50, 25, 10])
def test_pingpong_achieves_the_throttled_bandwidth(bandwidth, msg_bytes):
    record = _kernel("pingpong", 2, ["--msg-bytes", msg_bytes, "--iterations", "3",
                                     "--warmup", "1"],
                     {"mode": "emulated", "link_bandwidth": "1 Gbit/s",
                      "bandwidth": bandwidth, "latency": "5 us", "core_slots": 0})
    metrics = record["metrics"]
    target = GBIT * bandwidth / 100
    assert metrics["achieved_bandwidth"] == pytest.approx(target, rel=0.05)
    assert metrics["inter_node"] == 1
    assert metrics["bytes_inter"] == 2 * 4 * metrics["msg_bytes"]
    assert metrics["time"] >= 4 * metrics["rtt"]


@pytest.mark.mpi
def test_pingpong_on_one_node_uses_memory_bandwidth():
    record = _kernel("pingpong", 2, ["--msg-bytes", "4 MiB", "--iterations", "3"],
                     {"mode": "emulated", "ppn": 2, "memory_bandwidth": "1 GB/s",
                      "memory_latency": 0, "core_slots": 0})
    metrics = record["metrics"]
    assert metrics["inter_node"] == 0
    assert metrics["bytes_intra"] == metrics["bytes_sent"] > 0
    assert metrics["achieved_bandwidth"] == pytest.approx(1e9, rel=0.05)


@pytest.mark.mpi
def test_pingpong_goes_to_the_next_node_and_accepts_flags():
    # 4 ranks, 2 per node: rank 0 talks to rank 2; flags override the environment
    record = _kernel("pingpong", 4, ["--msg-bytes", "1048576", "--iterations", "2",
                                     "--throttle", "emulated", "--bandwidth-percent",
                                     "50", "--ppn", "2", "--core-slots", "0"],
                     {"mode": "none", "link_bandwidth": GBIT, "latency": 0})
    metrics = record["metrics"]
    assert metrics["inter_node"] == 1
    # two ranks per node share the NIC fairly: each gets half of the 50 % link
    assert metrics["achieved_bandwidth"] == pytest.approx(GBIT / 4, rel=0.05)


@pytest.mark.mpi
def test_pingpong_in_wall_clock_mode_and_needs_two_ranks():
    record = _kernel("pingpong", 2, ["--msg-bytes", "64 KiB", "--iterations", "5",
                                     "--trials"], {"mode": "none"})
    assert record["metrics"]["rtt"] > 0
    assert len(record["trials"]) == 5
    rtts = sorted(trial["rtt"] for trial in record["trials"])
    assert record["metrics"]["rtt"] == rtts[2]
    assert record["metrics"]["wall_time"] >= record["metrics"]["time"] * 0.99
    alone = _kernel("pingpong", 1, [], {"mode": "none"})
    assert alone["status"] == "invalid"
    assert "2 ranks" in alone["reason"]


@pytest.mark.mpi
@pytest.mark.slow
def test_compute_scales_in_virtual_time(tmp_path):
    # default core slots (one per core), in a private directory so that other
    # kernels running on this host do not take turns with this test
    comm = {"mode": "emulated", "latency": "5 us", "slot_dir": str(tmp_path)}
    times = {}
    # 1 and 8 ranks twice, interleaved (medians), 2 and 4 once
    for ranks in (1, 8, 2, 4, 1, 8):
        record = _kernel("compute", ranks, ["--work", "cache", "--total-work", "400"],
                         comm)
        metrics = record["metrics"]
        assert metrics["work_units"] == 400
        assert metrics["comp_time_max"] <= metrics["time"]
        times.setdefault(ranks, []).append(metrics["time"])
    base = statistics.median(times[1])
    speedup = {ranks: base / statistics.median(value) for ranks, value in times.items()}
    # CPU times of co-scheduled ranks are a little inflated (shared caches), so
    # the bar is below ideal; the 6.5x acceptance bar at 8 ranks is checked on five
    # runs in tests/framework/test_acceptance.py, this one guards against regressions
    assert speedup[2] >= 1.6, speedup
    assert speedup[4] >= 3.0, speedup
    assert speedup[8] >= 6.0, speedup


@pytest.mark.mpi
def test_compute_memory_work_with_one_core_slot(tmp_path):
    record = _kernel("compute", 3, ["--work", "memory", "--total-work", "12"],
                     {"mode": "emulated", "core_slots": 1, "slot_dir": str(tmp_path)})
    metrics = record["metrics"]
    assert metrics["slot_wait_time"] > 0  # ranks took turns on the single slot
    assert metrics["time"] < metrics["wall_time"]
    assert metrics["checksum"] > 0
