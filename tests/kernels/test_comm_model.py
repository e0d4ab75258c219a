"""Pure tests of the link model, the collective schedules and their costs (no MPI)."""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pytest
from scaleprobe.kernels.comm import _collectives as algo
from scaleprobe.kernels.comm import (
    add_comm_arguments,
    inter_time,
    intra_time,
    rank_bandwidth,
    resolve_config,
)
from scaleprobe.kernels.schema import LinkConfig

SLOW_LINK = LinkConfig(
    link_bandwidth=100.0, latency=0.0, memory_latency=0.0, memory_bandwidth=1e12
)


def test_importing_the_package_does_not_import_mpi4py():
    import subprocess

    code = (
        "import sys, scaleprobe.kernels.comm, scaleprobe.kernels.commbench; "
        "print('mpi4py' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


def test_link_model_throttles_and_parses_units():
    link = LinkConfig.from_dict(
        {
            "link_bandwidth": "1 Gbit/s",
            "bandwidth": 25,
            "latency": "5 us",
            "memory_bandwidth": "5 GB/s",
        }
    )
    assert link.effective_bandwidth == pytest.approx(1.25e8 / 4)
    assert inter_time(link, 1.25e8 / 4) == pytest.approx(1 + 5e-6)
    assert intra_time(link, 5e9) == pytest.approx(1 + 5e-7)
    assert rank_bandwidth(link, 4) == pytest.approx(1.25e8 / 16)
    exclusive = LinkConfig(nic_sharing="exclusive")
    assert rank_bandwidth(exclusive, 4) == exclusive.effective_bandwidth
    assert LinkConfig.from_dict(link.to_dict()) == link
    assert LinkConfig.from_dict({"latency": 0}).latency == 0.0


@pytest.mark.parametrize(
    ("config", "message"),
    [
        # the schema names the percentage's bounds (0, 100]
        ({"bandwidth": 0}, "bandwidth: must be a number > 0 and <= 100"),
        ({"bandwidth": 150}, "bandwidth: must be a number > 0 and <= 100"),
        ({"link_bandwidth": "fast"}, "link_bandwidth"),
        ({"latency": "5 parsecs"}, "latency"),
        ({"nic_sharing": "greedy"}, "nic_sharing"),
        ({"bandwidth": "half"}, "percentage"),
    ],
)
def test_link_model_rejects_bad_values(config, message):
    with pytest.raises(ValueError, match=message):
        LinkConfig.from_dict(config)


def test_flags_override_the_environment():
    parser = argparse.ArgumentParser()
    add_comm_arguments(parser)
    args = parser.parse_args(["--bandwidth-percent", "10", "--core-slots", "0"])
    env = {
        "SCALEPROBE_LINK": '{"mode": "emulated", "ppn": 2, "bandwidth": 50, '
        '"link_bandwidth": "1 Gbit/s"}'
    }
    link = resolve_config(args, env)
    assert link.mode == "emulated"
    assert link.ppn == 2
    assert link.core_slots == 0
    assert link.effective_bandwidth == pytest.approx(1.25e7)
    assert resolve_config(None, {}).mode == "none"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not valid JSON"),
        ("[1]", "JSON object"),
        ('{"colour": 1}', "unknown key"),
        ('{"mode": "tc"}', "mode"),
        ('{"ppn": 0}', "ppn"),
        ('{"core_slots": -1}', "core_slots"),
    ],
)
def test_bad_environment_is_named(text, message):
    with pytest.raises(ValueError, match=message):
        resolve_config(None, {"SCALEPROBE_LINK": text})


def _received(schedule, size):
    return np.bincount(schedule.dst, schedule.nbytes, minlength=size)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 12])
@pytest.mark.parametrize("root", [0, 1])
def test_rooted_trees_move_every_block_once(size, root):
    root = root % size
    counts = np.arange(1.0, size + 1)
    gather = algo.gather_schedule(counts, root)
    assert _received(gather, size)[root] - gather.nbytes[gather.src == root].sum() == (
        counts.sum() - counts[root]
    )
    scatter = algo.scatter_schedule(counts, root)
    assert scatter.nbytes[scatter.src == root].sum() == counts.sum() - counts[root]
    for schedule in (
        algo.bcast_schedule(size, 10, root),
        algo.reduce_schedule(size, 10, root),
    ):
        assert len(schedule.step) == size - 1
        expected_steps = int(np.ceil(np.log2(size))) if size > 1 else 0
        assert (schedule.step.max() + 1 if size > 1 else 0) == expected_steps
    bcast = algo.bcast_schedule(size, 10, root)
    assert sorted(bcast.dst.tolist()) == sorted(set(range(size)) - {root})


@pytest.mark.parametrize("size", [2, 3, 4, 6, 7, 8])
@pytest.mark.parametrize("algorithm", ["ring", "bruck", "recursive_doubling"])
def test_allgather_delivers_every_other_block(size, algorithm):
    if algorithm == "recursive_doubling" and size & (size - 1):
        with pytest.raises(ValueError, match="power of two"):
            algo.allgather_schedule(np.ones(size), algorithm)
        return
    counts = np.arange(1.0, size + 1)
    schedule = algo.allgather_schedule(counts, algorithm)
    np.testing.assert_allclose(_received(schedule, size), counts.sum() - counts)


def test_allgather_and_allreduce_pick_algorithms_by_size():
    assert algo.allgather_schedule(np.full(8, 8.0)).step.max() + 1 == 3
    assert algo.allgather_schedule(np.full(6, 8.0)).step.max() + 1 == 3  # Bruck
    assert algo.allgather_schedule(np.full(8, 1e6)).step.max() + 1 == 7  # ring
    assert algo.allreduce_schedule(8, 8).step.max() + 1 == 3
    ring = algo.allreduce_schedule(4, 4096)
    assert ring.step.max() + 1 == 6
    np.testing.assert_allclose(np.bincount(ring.src, ring.nbytes), 2 * 3 * 1024)


def test_allreduce_folds_non_powers_of_two():
    schedule = algo.allreduce_schedule(6, 8)
    assert len(schedule.step) == 2 + 2 * 4 + 2
    assert schedule.step.max() + 1 == 4


def test_barrier_is_dissemination():
    schedule = algo.barrier_schedule(5)
    assert len(schedule.step) == 15
    assert set(schedule.nbytes.tolist()) == {0.0}
    link = LinkConfig(latency=1e-3, memory_latency=1e-6)
    assert algo.schedule_cost(schedule, [0, 1, 2, 3, 4], link) == pytest.approx(3e-3)


def test_alltoall_charges_the_busiest_nic_per_step():
    uniform = np.full((4, 4), 100.0)
    # one rank per node: 3 steps of one 100-byte message per NIC
    assert algo.schedule_cost(
        algo.alltoall_schedule(uniform), [0, 1, 2, 3], SLOW_LINK
    ) == pytest.approx(3.0)
    # two ranks per node: steps carry 100, 200, 100 inter-node bytes per NIC
    assert algo.schedule_cost(
        algo.alltoall_schedule(uniform), [0, 0, 1, 1], SLOW_LINK
    ) == pytest.approx(4.0)
    # everything on one node: only memory traffic
    link = LinkConfig(memory_bandwidth=100.0, memory_latency=0.0)
    assert algo.schedule_cost(
        algo.alltoall_schedule(uniform), [0, 0, 0, 0], link
    ) == pytest.approx(3.0)


def test_alltoallv_uses_the_full_matrix_and_skips_empty_pairs():
    counts = np.array([[0, 300, 0], [0, 0, 0], [100, 0, 0]], dtype=float)
    schedule = algo.alltoall_schedule(counts)
    assert len(schedule.step) == 2
    # both go in step s=1 (0->1 and 2->0), concurrently on different NICs
    assert schedule.step.tolist() == [0, 0]
    assert algo.schedule_cost(schedule, [0, 1, 2], SLOW_LINK) == pytest.approx(3.0)
    link = LinkConfig(link_bandwidth=100.0, latency=0.5, memory_latency=0.0)
    assert algo.schedule_cost(schedule, [0, 1, 2], link) == pytest.approx(3.5)
    # on one node with 1 and 2 sharing node 1, 0->1 and 2->0 share nothing either
    assert algo.schedule_cost(schedule, [0, 1, 1], SLOW_LINK) == pytest.approx(3.0)
    # 2->0 and 3->1 (same step s=2) both enter node 0: its ingress carries 200 B
    both = np.zeros((4, 4))
    both[2, 0] = both[3, 1] = 100
    assert algo.schedule_cost(
        algo.alltoall_schedule(both), [0, 0, 1, 1], SLOW_LINK
    ) == pytest.approx(2.0)
    assert algo.schedule_cost(
        algo.alltoall_schedule(both), [0, 1, 2, 3], SLOW_LINK
    ) == pytest.approx(1.0)


def test_rank_traffic_splits_inter_and_intra():
    schedule = algo.alltoall_schedule(np.full((4, 4), 10.0))
    traffic = algo.rank_traffic(schedule, 0, [0, 0, 1, 1])
    assert traffic == {
        "bytes_inter": 20,
        "bytes_intra": 10,
        "messages": 3,
        "messages_inter": 2,
    }


def test_bad_schedule_arguments_are_named():
    with pytest.raises(ValueError, match="square"):
        algo.alltoall_schedule(np.ones((2, 3)))
    with pytest.raises(ValueError, match="allreduce algorithm"):
        algo.allreduce_schedule(4, 8, "tree")
    with pytest.raises(ValueError, match="allgather algorithm"):
        algo.allgather_schedule(np.ones(4), "tree")


def test_every_summary_key_has_the_schemas_unit_and_a_long_name():
    from scaleprobe.kernels.comm import SUMMARY_LONG_NAMES
    from scaleprobe.kernels.schema import SUMMARY_UNITS

    assert set(SUMMARY_LONG_NAMES) == set(SUMMARY_UNITS)
    assert all(SUMMARY_LONG_NAMES.values())
