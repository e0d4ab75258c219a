"""The commbench kernels under real MPI: pingpong accuracy and compute scaling."""

from __future__ import annotations

import json

import pytest
from scaleprobe.kernels.schema import Record

GBIT = 1.25e8


@pytest.fixture
def kernel(mpi_run):
    def run(name, ranks, args, comm):
        done = mpi_run(
            ranks,
            "-m",
            f"scaleprobe.kernels.commbench.{name}",
            *args,
            env={"SCALEPROBE_LINK": json.dumps(comm)},
        )
        return Record.parse(done.stdout).to_dict()

    return run


@pytest.mark.mpi
@pytest.mark.parametrize("msg_bytes", ["1 MiB", "16 MiB"])
@pytest.mark.parametrize("bandwidth", [100, 50, 25, 10])
def test_pingpong_achieves_the_throttled_bandwidth(kernel, bandwidth, msg_bytes):
    record = kernel(
        "pingpong",
        2,
        ["--msg-bytes", msg_bytes, "--iterations", "3", "--warmup", "1"],
        {
            "mode": "emulated",
            "link_bandwidth": "1 Gbit/s",
            "bandwidth": bandwidth,
            "latency": "5 us",
            "core_slots": 0,
        },
    )
    metrics = record["metrics"]
    target = GBIT * bandwidth / 100
    assert metrics["achieved_bandwidth"] == pytest.approx(target, rel=0.05)
    assert metrics["inter_node"] == 1
    # 1 warm-up and 3 timed round trips: 8 messages, each charged exactly the
    # link model's bytes / bandwidth on the critical path; the virtual clock adds
    # only the ranks' CPU time on top. The path is the last rank's: rank 0 receives
    # the 8th message (8 latencies), rank 1 finishes when it has sent it (7), and
    # which one ends last depends on microseconds of CPU after the loop.
    assert metrics["messages_inter"] == 8
    assert metrics["bytes_inter"] == 8 * metrics["msg_bytes"]
    transfer = metrics["msg_bytes"] / target
    assert metrics["cp_bandwidth_time"] == pytest.approx(8 * transfer, rel=1e-9)
    latencies = metrics["cp_latency_time"] / 5e-6
    assert latencies == pytest.approx(round(latencies), abs=1e-6)
    assert round(latencies) in (7, 8)
    assert metrics["rtt"] >= 2 * (transfer + 5e-6) * (1 - 1e-12)
    parts = ("cp_comp_time", "cp_latency_time", "cp_bandwidth_time", "cp_intra_time")
    assert sum(metrics[k] for k in parts) == pytest.approx(metrics["time"], rel=1e-9)


@pytest.mark.mpi
def test_pingpong_on_one_node_uses_memory_bandwidth(kernel):
    record = kernel(
        "pingpong",
        2,
        ["--msg-bytes", "4 MiB", "--iterations", "3"],
        {
            "mode": "emulated",
            "ppn": 2,
            "memory_bandwidth": "1 GB/s",
            "memory_latency": 0,
            "core_slots": 0,
        },
    )
    metrics = record["metrics"]
    assert metrics["inter_node"] == 0
    assert metrics["bytes_intra"] == metrics["bytes_sent"] > 0
    assert metrics["achieved_bandwidth"] == pytest.approx(1e9, rel=0.05)


@pytest.mark.mpi
def test_pingpong_goes_to_the_next_node_and_accepts_flags(kernel):
    # 4 ranks, 2 per node: rank 0 talks to rank 2; flags override the environment
    record = kernel(
        "pingpong",
        4,
        [
            "--msg-bytes",
            "1048576",
            "--iterations",
            "2",
            "--throttle",
            "emulated",
            "--bandwidth-percent",
            "50",
            "--ppn",
            "2",
            "--core-slots",
            "0",
        ],
        {"mode": "none", "link_bandwidth": GBIT, "latency": 0},
    )
    metrics = record["metrics"]
    assert metrics["inter_node"] == 1
    # ranks 1 and 3 send nothing: a message alone gets the whole NIC, 50 % of it
    assert metrics["achieved_bandwidth"] == pytest.approx(GBIT / 2, rel=0.05)


@pytest.mark.mpi
def test_pingpong_in_wall_clock_mode_and_needs_two_ranks(kernel):
    record = kernel(
        "pingpong",
        2,
        ["--msg-bytes", "64 KiB", "--iterations", "5", "--trials"],
        {"mode": "none"},
    )
    assert record["metrics"]["rtt"] > 0
    assert len(record["trials"]) == 5
    rtts = sorted(trial["rtt"] for trial in record["trials"])
    assert record["metrics"]["rtt"] == rtts[2]
    # the real interconnect: no link model acts, so none is charged
    assert (record["link"]["mode"], record["link"]["ppn"]) == ("none", 1)
    assert not any(key.startswith("cp_") for key in record["metrics"])
    alone = kernel("pingpong", 1, [], {"mode": "none"})
    assert alone["status"] == "invalid"
    assert "2 ranks" in alone["reason"]


@pytest.mark.mpi
def test_compute_splits_the_work_and_times_it_virtually(kernel, tmp_path):
    # Private core slots, so that other kernels running on this host do not take
    # turns with this test. The speedups themselves are measured and printed by
    # tests/benchmarks/bench_fidelity.py; RankClock's tests check virtual time.
    comm = {"mode": "emulated", "latency": "5 us", "slot_dir": str(tmp_path)}
    for ranks in (1, 4):
        metrics = kernel(
            "compute", ranks, ["--work", "cache", "--total-work", "40"], comm
        )["metrics"]
        assert metrics["work_units"] == 40
        assert metrics["comp_time_max"] <= metrics["time"]
        parts = (
            "cp_comp_time",
            "cp_latency_time",
            "cp_bandwidth_time",
            "cp_intra_time",
        )
        assert sum(metrics[k] for k in parts) == pytest.approx(metrics["time"])
        assert metrics["checksum"] > 0
        # one rank sends nothing; four exchange the checksums (Allreduce) and pay
        # the link's latency for it
        assert (metrics["bytes_sent"] > 0) == (ranks > 1)
        assert (metrics["cp_latency_time"] > 0) == (ranks > 1)


@pytest.mark.mpi
def test_compute_memory_work_with_one_core_slot(kernel, tmp_path):
    record = kernel(
        "compute",
        3,
        ["--work", "memory", "--total-work", "12"],
        {"mode": "emulated", "core_slots": 1, "slot_dir": str(tmp_path)},
    )
    metrics = record["metrics"]
    assert metrics["slot_wait_time"] > 0  # ranks took turns on the single slot
    assert metrics["checksum"] > 0
