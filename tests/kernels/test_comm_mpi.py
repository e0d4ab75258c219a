"""The instrumented communicator under real MPI (4 ranks, 2 emulated nodes)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from scaleprobe.kernels.comm import _collectives as algo
from scaleprobe.kernels.comm import inter_time
from scaleprobe.kernels.schema import LinkConfig

LINK = {
    "link_bandwidth": 1e7,
    "bandwidth": 100,
    "latency": 1e-4,
    "memory_bandwidth": 1e9,
    "memory_latency": 1e-6,
}
NODES = [0, 0, 1, 1]

SCRIPT = r"""
import json, sys, time
import numpy as np
from mpi4py import MPI
from scaleprobe.kernels.comm import InstrumentedComm

def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

comm = InstrumentedComm.from_environment(MPI.COMM_WORLD)
r, p = comm.rank, comm.size
out = {"rank": r, "node": comm.node, "nodes": comm.nodes}

# A. a known traffic pattern
start = comm.counters()
req = comm.Isend(np.zeros(1000, np.uint8), (r + 1) % p)
comm.Recv(np.empty(1000, np.uint8), (r - 1) % p)
req.Wait()
comm.Allreduce(np.ones(1), np.empty(1))
comm.Alltoall(np.zeros(400, np.int8), np.empty(400, np.int8))
out["pattern"] = comm.counters_since(start)

# B. collective costs from a synchronized start (buffers made before the clock
# starts: allocating them is computation, which a loaded host makes slow)
matrix = np.arange(16, dtype=np.int64).reshape(4, 4) * 1000
sendcounts = matrix[r]
recvcounts = matrix[:, r]
b = {"ones": np.ones(131072), "sum": np.empty(131072),
     "a2a_out": np.zeros(sendcounts.sum(), np.uint8),
     "a2a_in": np.empty(recvcounts.sum(), np.uint8),
     "bcast": np.zeros(262144, np.uint8), "ag_out": np.zeros(65536, np.uint8),
     "ag_in": np.empty(4 * 65536, np.uint8),
     "gv_out": np.zeros(1000 * (r + 1), np.uint8), "gv_in": np.empty(10000, np.uint8),
     "sc_out": np.zeros(4 * 50000, np.uint8), "sc_in": np.empty(50000, np.uint8),
     "red": np.ones(50000), "red_in": np.empty(50000)}
cases = {
    "allreduce": lambda: comm.Allreduce(b["ones"], b["sum"]),
    "alltoallv": lambda: comm.Alltoallv([b["a2a_out"], sendcounts],
                                        [b["a2a_in"], recvcounts]),
    "bcast": lambda: comm.Bcast(b["bcast"], root=1),
    "barrier": comm.Barrier,
    "allgather": lambda: comm.Allgather(b["ag_out"], b["ag_in"]),
    "gatherv": lambda: comm.Gatherv(
        b["gv_out"], [b["gv_in"], [1000, 2000, 3000, 4000]] if r == 0 else None,
        root=0),
    "scatter": lambda: comm.Scatter(b["sc_out"] if r == 2 else None, b["sc_in"],
                                    root=2),
    "reduce": lambda: comm.Reduce(b["red"], b["red_in"] if r == 3 else None, root=3),
}
out["elapsed"] = {}
out["paths"] = {}
out["rounds"] = {}
for name, call in cases.items():
    t0 = comm.sync()
    origin = comm.path()
    rounds = comm.collective_latency()
    call()
    out["elapsed"][name] = comm.elapsed_since(t0)
    out["paths"][name] = comm.critical_path_since(origin)
    out["rounds"][name] = {
        k: v - rounds[k] for k, v in comm.collective_latency().items()
    }

# F. a chain across nodes: rank 0 computes, sends 100 kB to rank 2, which computes
comm.sync()
origin = comm.path()
if r == 0:
    burn(0.1)
    comm.Send(np.zeros(100000, np.uint8), 2, tag=11)
elif r == 2:
    comm.Recv(np.empty(100000, np.uint8), 0, tag=11)
    burn(0.05)
comm.Barrier()
out["chain"] = comm.critical_path_since(origin)
out["calls"] = comm.collective_calls()

# C. a non-blocking 1 MB transfer from rank 0 (node 0) to rank 2 (node 1),
# overlapped with less and with more computation than it takes
for case, work in (("short_work", 0.02), ("long_work", 0.35)):
    comm.sync()
    if r == 0:
        out[case + "_send"] = comm.clock()
        req = comm.Isend(np.zeros(1000000, np.uint8), 2, tag=7)
        req.Wait()
        out[case + "_sender_done"] = comm.clock()
    elif r == 2:
        req = comm.Irecv(np.empty(1000000, np.uint8), 0, tag=7)
        burn(work)
        out[case + "_before"] = comm.clock()
        req.Wait()
        out[case + "_after"] = comm.clock()

# Test() polls in virtual time: 100 kB from rank 1 to rank 3
comm.sync()
if r == 1:
    message = np.zeros(100000, np.uint8)
    out["poll_send"] = comm.clock()
    comm.Send(message, 3, tag=9)
elif r == 3:
    req = comm.Irecv(np.empty(100000, np.uint8), 1, tag=9)
    polls, early = 0, None
    while True:
        before = comm.clock()
        if req.Test():
            break
        if req.completed:
            # the real message was there: only the modelled arrival was ahead
            early = before
        burn(0.001)
        polls += 1
    out["poll_done"] = comm.clock()
    out["poll_early"] = early
    # the modelled arrival it completed at (none in wall-clock mode)
    out["poll_arrival"] = None if req._done is None else float(req._done[0])
    out["polls"] = polls

# D. ANY_SOURCE with statuses reporting the payload
if r == 0:
    seen = {}
    status = MPI.Status()
    for _ in range(p - 1):
        buf = np.empty(100)
        comm.Recv(buf, tag=3, status=status)  # source defaults to ANY_SOURCE
        seen[status.Get_source()] = [status.Get_count(MPI.DOUBLE), float(buf[0])]
    out["any_source"] = seen
else:
    comm.Send(np.full(10 * r, float(r)), 0, tag=3)
out["sendrecv"] = float(
    (lambda buf: (comm.Sendrecv(np.full(3, float(r)), (r + 1) % p, recvbuf=buf,
                                source=(r - 1) % p), buf[0])[1])(np.empty(3)))

before = comm.counters()["messages"]
null = np.full(2, 5.0)
comm.Sendrecv(np.ones(2), MPI.PROC_NULL, recvbuf=null, source=MPI.PROC_NULL)
comm.Send(np.ones(2), MPI.PROC_NULL)
out["proc_null"] = [comm.counters()["messages"] - before, float(null[0])]

# E. Split shares clock and counters; nodes come from world ranks
before = comm.counters()["messages"]
sub = comm.Split(r % 2, key=r)
total = np.empty(1)
t0 = sub.sync()
rounds = comm.collective_latency()
sub.Allreduce(np.array([float(r)]), total)
out["split_rounds"] = {k: v - rounds[k] for k, v in comm.collective_latency().items()}
out["split"] = {"size": sub.size, "rank": sub.rank, "node": sub.node,
                "nodes": sub.nodes, "sum": float(total[0]),
                "elapsed": sub.elapsed_since(t0),
                "messages": comm.counters()["messages"] - before,
                "objects": sub.allgather(r)}
out["objects"] = {"allreduce": comm.allreduce(r), "bcast": comm.bcast("x" * r, root=3),
                  "gather": comm.gather(r, root=0)}

summary = comm.summary()
everything = comm.allgather([out, summary])
if r == 0:
    print("RESULT " + json.dumps(everything))
comm.close()
"""


def _run(mpi_run, tmp_path, mode, core_slots=0):
    script = tmp_path / "comm_script.py"
    script.write_text(SCRIPT)
    comm = {"mode": mode, "ppn": 2, "core_slots": core_slots, **LINK}
    if core_slots:
        comm["slot_dir"] = str(tmp_path / "slots")
    env = {"SCALEPROBE_LINK": json.dumps(comm)}
    done = mpi_run(4, sys.executable, script, env=env, timeout=180)
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


@pytest.fixture(scope="module")
def emulated(mpi_run, tmp_path_factory):
    return _run(mpi_run, tmp_path_factory.mktemp("emulated"), "emulated")


@pytest.fixture(scope="module")
def slotted(mpi_run, tmp_path_factory):
    """Emulated with one core slot: every wait goes through the idle waits."""
    return _run(mpi_run, tmp_path_factory.mktemp("slotted"), "emulated", core_slots=1)


@pytest.fixture(scope="module")
def wallclock(mpi_run, tmp_path_factory):
    return _run(mpi_run, tmp_path_factory.mktemp("none"), "none")


EXPECTED_PATTERN = {  # Isend 1000 B to rank+1, Allreduce 8 B, Alltoall 100 B per pair
    0: {"bytes_intra": 1108, "bytes_inter": 208, "messages": 6, "messages_inter": 3},
    1: {"bytes_intra": 108, "bytes_inter": 1208, "messages": 6, "messages_inter": 4},
    2: {"bytes_intra": 1108, "bytes_inter": 208, "messages": 6, "messages_inter": 3},
    3: {"bytes_intra": 108, "bytes_inter": 1208, "messages": 6, "messages_inter": 4},
}


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["emulated", "slotted", "wallclock"])
def test_byte_and_message_counters_are_exact(mode, request):
    results = request.getfixturevalue(mode)
    for out, _ in results:
        pattern = out["pattern"]
        expected = EXPECTED_PATTERN[out["rank"]]
        assert {key: pattern[key] for key in expected} == expected
        total = expected["bytes_intra"] + expected["bytes_inter"]
        assert pattern["bytes_sent"] == total
        assert out["node"] == out["rank"] // 2
        assert out["nodes"] == 2


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["emulated", "slotted", "wallclock"])
def test_data_and_statuses_are_delivered(mode, request):
    results = request.getfixturevalue(mode)
    outs = [out for out, _ in results]
    assert outs[0]["any_source"] == {"1": [10, 1.0], "2": [20, 2.0], "3": [30, 3.0]}
    assert [out["sendrecv"] for out in outs] == [3.0, 0.0, 1.0, 2.0]
    assert outs[0]["objects"]["gather"] == [0, 1, 2, 3]
    assert all(out["objects"]["allreduce"] == 6 for out in outs)
    assert all(out["objects"]["bcast"] == "xxx" for out in outs)
    assert all(out["proc_null"] == [0, 5.0] for out in outs)


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["emulated", "slotted", "wallclock"])
def test_summary_is_identical_everywhere(mode, request):
    results = request.getfixturevalue(mode)
    summaries = [summary for _, summary in results]
    assert all(summary == summaries[0] for summary in summaries)
    summary = summaries[0]
    assert summary["bytes_sent"] == summary["bytes_inter"] + summary["bytes_intra"]
    assert summary["peak_rss"] > 10 * 2**20
    assert summary["time"] >= summary["comm_time_max"] > 0
    assert summary["comp_time"] > 0


def _expected_costs():
    link = LinkConfig(**LINK)
    matrix = np.arange(16, dtype=float).reshape(4, 4) * 1000
    schedules = {
        "allreduce": algo.allreduce_schedule(4, 131072 * 8),
        "alltoallv": algo.alltoall_schedule(matrix),
        "bcast": algo.bcast_schedule(4, 262144, root=1),
        "barrier": algo.barrier_schedule(4),
        "allgather": algo.allgather_schedule([65536] * 4),
        "gatherv": algo.gather_schedule([1000, 2000, 3000, 4000], root=0),
        "scatter": algo.scatter_schedule([50000] * 4, root=2),
        "reduce": algo.reduce_schedule(4, 400000, root=3),
    }
    return {name: algo.schedule_cost(s, NODES, link) for name, s in schedules.items()}


@pytest.mark.mpi
def test_collectives_cost_what_the_schedules_say(emulated):
    expected = _expected_costs()
    for out, _ in emulated:
        for name, cost in expected.items():
            # a few microseconds of real CPU between the sync and the call remain
            assert out["elapsed"][name] == pytest.approx(cost, abs=2e-3), name
    assert expected["allreduce"] > 0.1  # the slow link dominates


@pytest.mark.mpi
def test_critical_path_splits_collectives_into_latency_and_bandwidth(emulated):
    link = LinkConfig(**LINK)
    matrix = np.arange(16, dtype=float).reshape(4, 4) * 1000
    parts = {
        "alltoallv": algo.schedule_cost_parts(
            algo.alltoall_schedule(matrix), NODES, link
        ),
        "barrier": algo.schedule_cost_parts(algo.barrier_schedule(4), NODES, link),
        "bcast": algo.schedule_cost_parts(
            algo.bcast_schedule(4, 262144, root=1), NODES, link
        ),
    }
    for out, _ in emulated:
        for name, (latency, bandwidth, intra) in parts.items():
            path = out["paths"][name]
            assert path["cp_latency_time"] == pytest.approx(latency, rel=1e-9), name
            assert path["cp_bandwidth_time"] == pytest.approx(bandwidth, rel=1e-9)
            assert path["cp_intra_time"] == pytest.approx(intra, abs=1e-12)
            assert path["cp_comp_time"] < 2e-3  # the CPU between sync and call
        assert out["calls"]["alltoallv"][0] == 1
        assert out["calls"]["barrier"][0] >= 2


@pytest.mark.mpi
def test_critical_path_follows_the_chain_across_ranks(emulated):
    link = LinkConfig(**LINK)
    barrier = algo.schedule_cost_parts(algo.barrier_schedule(4), NODES, link)
    alone = LINK["link_bandwidth"]  # the only transfer on the network: the whole NIC
    for out, summary in emulated:
        chain = out["chain"]
        # rank 0's 0.1 s and rank 2's 0.05 s of computation are both on the path
        assert chain["cp_comp_time"] == pytest.approx(0.15, abs=0.02)
        assert chain["cp_latency_time"] == pytest.approx(
            LINK["latency"] + barrier[0], rel=1e-9
        )
        assert chain["cp_bandwidth_time"] == pytest.approx(
            1e5 / alone + barrier[1], rel=1e-9
        )
        total = sum(
            summary[k]
            for k in (
                "cp_comp_time",
                "cp_latency_time",
                "cp_bandwidth_time",
                "cp_intra_time",
            )
        )
        assert total == pytest.approx(summary["time"], rel=1e-9)
        assert summary["wait_time"] >= 0


@pytest.mark.mpi
def test_non_blocking_transfers_overlap_computation(emulated):
    outs = {out["rank"]: out for out, _ in emulated}
    # rank 1, on rank 0's node, sends nothing: rank 0 has the whole NIC
    alone = LINK["link_bandwidth"]
    for case in ("short_work", "long_work"):
        sent = outs[0][case + "_send"]
        arrival = sent + 1e6 / alone + LINK["latency"]
        before, after = outs[2][case + "_before"], outs[2][case + "_after"]
        assert after == pytest.approx(max(before, arrival), abs=2e-3), case
        assert outs[0][case + "_sender_done"] == pytest.approx(
            sent + 1e6 / alone, abs=2e-3
        )
    # short work: the receiver waits for the wire (0.1 s); long work hides the
    # transfer, up to the CPU time of the calls (as above)
    assert outs[2]["short_work_after"] > outs[2]["short_work_before"] + 0.05
    assert outs[2]["long_work_after"] == pytest.approx(
        outs[2]["long_work_before"], abs=2e-3
    )


@pytest.mark.mpi
def test_test_reports_completion_in_virtual_time(emulated):
    outs = {out["rank"]: out for out, _ in emulated}
    alone = LINK["link_bandwidth"]
    arrival = outs[3]["poll_arrival"]
    # the message left rank 1 at poll_send and took the link's time (plus the CPU
    # time of the call before it left: tens of us, more on a loaded host)
    expected = outs[1]["poll_send"] + 1e5 / alone + LINK["latency"]
    assert expected <= arrival <= expected + 0.01
    # Test never reports a transfer before its modelled arrival
    assert arrival <= outs[3]["poll_done"]
    assert outs[3]["polls"] >= 10
    # A Test that already had the real message saw nothing only because the
    # modelled arrival was still ahead, and the first poll at or after the arrival
    # (one 1 ms step) reports it. On a loaded host the real message can also come
    # later than its modelled arrival; then no poll had it early.
    early = outs[3]["poll_early"]
    if early is not None:
        assert early < arrival
        assert outs[3]["poll_done"] <= arrival + 0.005


@pytest.mark.mpi
@pytest.mark.parametrize("mode", ["emulated", "slotted", "wallclock"])
def test_split_keeps_world_nodes_and_shares_counters(mode, request):
    results = request.getfixturevalue(mode)
    for out, _ in results:
        split, rank = out["split"], out["rank"]
        assert (split["size"], split["rank"]) == (2, rank // 2)
        assert split["node"] == rank // 2
        assert split["nodes"] == 2
        assert split["sum"] == (0 + 2 if rank % 2 == 0 else 1 + 3)
        assert split["objects"] == ([0, 2] if rank % 2 == 0 else [1, 3])
        # split (allgather of 8 B on 4 ranks: 2 messages) + 1 allreduce message
        assert split["messages"] == 3
        if mode != "wallclock":
            link = LinkConfig(**LINK)
            assert split["elapsed"] == pytest.approx(inter_time(link, 8), abs=1e-3)


@pytest.mark.mpi
def test_collective_latency_is_split_by_how_rounds_grow(emulated):
    # ring allreduce (1 MiB) and pairwise alltoallv take p - 1 rounds or more; the
    # rest (recursive doubling below 512 KiB, binomial trees, dissemination) log2 p
    linear = {"allreduce", "alltoallv"}
    for out, _ in emulated:
        for name, path in out["paths"].items():
            rounds = out["rounds"][name]
            tree, ring = (
                rounds["coll_tree_latency_time"],
                rounds["coll_linear_latency_time"],
            )
            # every collective of the world is on the path: it is all of its latency
            assert tree + ring == pytest.approx(path["cp_latency_time"], rel=1e-9)
            if name in linear:
                assert tree == 0, name
                assert ring > 0, name
            else:
                assert ring == 0, name
                assert tree > 0, name
        # a split communicator's calls are in neither part
        assert out["split_rounds"] == {
            "coll_tree_latency_time": 0.0,
            "coll_linear_latency_time": 0.0,
        }
