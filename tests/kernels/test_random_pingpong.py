"""commbench.random_pingpong: matchings, the quartile/max rule, and real MPI runs."""

from __future__ import annotations

import json

import pytest
from scaleprobe.kernels.comm.pattern import CommPattern, place_nodes
from scaleprobe.kernels.commbench.random_pingpong import kept_maximum, random_partners
from scaleprobe.kernels.schema import Record

GBIT = 1.25e8
MIB = 1 << 20


def test_matchings_are_symmetric_and_seeded():
    partners = random_partners(8, 4, seed=3)
    assert partners == random_partners(8, 4, seed=3)
    assert partners != random_partners(8, 4, seed=4)
    for rank, row in enumerate(partners):
        assert len(row) == 4
        for index, peer in enumerate(row):
            assert peer != rank
            assert partners[peer][index] == rank


def test_odd_ranks_leave_one_rank_out_per_message():
    partners = random_partners(5, 3, seed=0)
    for index in range(3):
        assert sum(row[index] == -1 for row in partners) == 1


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        ([5.0, 1.0, 2.0, 3.0], 3.0),  # drop 1 of 4
        ([float(i) for i in range(1, 101)], 75.0),  # third quartile of 1..100
        ([1.0, 2.0, 3.0], 3.0),  # floor(0.75) = 0 dropped
        ([7.0], 7.0),
    ],
)
def test_kept_maximum_drops_the_slowest_quarter(times, expected):
    assert kept_maximum(times) == expected


def test_kept_maximum_needs_times():
    with pytest.raises(ValueError, match="no timed"):
        kept_maximum([])


@pytest.fixture
def run(mpi_run):
    def launch(ranks, args, comm):
        done = mpi_run(
            ranks,
            "-m",
            "scaleprobe.kernels.commbench.random_pingpong",
            *args,
            env={"SCALEPROBE_LINK": json.dumps(comm)},
        )
        return Record.parse(done.stdout).to_dict()["metrics"]

    return launch


EMULATED = {
    "mode": "emulated",
    "link_bandwidth": GBIT,
    "latency": 5e-6,
    "core_slots": 0,
}


@pytest.mark.mpi
def test_exchange_time_is_the_link_models_known_answer(run):
    # one rank per node: each rank's M sends leave one after the other on its own
    # NIC, the last one lands one latency later: M * S / B + latency.
    metrics = run(
        4,
        ["--messages", "2", "--msg-bytes", "1 MiB", "--iterations", "8", "--seed", "5"],
        {**EMULATED, "ppn": 1},
    )
    # the Python work of posting the requests is charged as computation (CPU time)
    model = 2 * MIB / GBIT + 5e-6
    assert model <= metrics["exchange_time"] < 1.1 * model
    expected = CommPattern.from_partners(
        [[p for p in row if p >= 0] for row in random_partners(4, 2, 5)], MIB
    ).metrics(ppn=1)
    for name in ("S", "M", "PPN", "N", "I", "PT", "NT", "V", "NI", "VI"):
        assert metrics[name] == pytest.approx(expected[name]), name
    assert metrics["I"] == 1.0
    assert metrics["NT"] == 2 * MIB


@pytest.mark.mpi
@pytest.mark.parametrize("ppn", [1, 2])
def test_sharing_a_node_slows_the_phase(run, ppn):
    metrics = run(
        8,
        ["--messages", "1", "--msg-bytes", "1 MiB", "--iterations", "6", "--seed", "0"],
        {**EMULATED, "ppn": ppn},
    )
    assert metrics["PPN"] == ppn
    assert metrics["N"] == 8 // ppn
    # fair NIC sharing: an inter-node send gets B / ppn
    model = ppn * MIB / GBIT + 5e-6
    assert metrics["I"] == 1.0  # seed 0 pairs every rank across nodes at ppn 1 and 2
    assert model <= metrics["exchange_time"] < 1.1 * model


@pytest.mark.mpi
def test_compact_and_random_allocations_give_different_switch_counts(run):
    common = [
        "--messages",
        "2",
        "--msg-bytes",
        "4 KiB",
        "--iterations",
        "4",
        "--nodes-per-switch",
        "2",
        "--switches-per-rack",
        "2",
        "--machine-nodes",
        "64",
        "--seed",
        "7",
        "--allocation-seed",
        "7",
    ]
    compact = run(8, [*common, "--allocation", "compact"], {**EMULATED, "ppn": 2})
    spread = run(8, [*common, "--allocation", "random"], {**EMULATED, "ppn": 2})
    assert (compact["SW"], compact["R"]) == (2, 1)
    placement = place_nodes(4, allocation="random", machine_nodes=64, seed=7)
    assert spread["SW"] == len(set((placement // 2).tolist())) > compact["SW"]
    assert spread["R"] == len(set((placement // 4).tolist()))
    assert spread["NT"] == compact["NT"]  # same pattern, another mapping
