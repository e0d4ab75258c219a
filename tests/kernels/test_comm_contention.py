"""Contention on the emulated network: max-min sharing, routes, replay, real MPI."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from scaleprobe.kernels.comm import Network
from scaleprobe.kernels.comm._clock import PATH_KEYS, RankClock, extend
from scaleprobe.kernels.comm._replay import (
    MARK,
    SEND,
    WAIT,
    WAIT_RECV,
    WAIT_SEND,
    FlowSet,
    max_min_rates,
    replay,
)
from scaleprobe.kernels.comm.pattern import place_nodes
from scaleprobe.kernels.schema import Allocation, LinkConfig, Topology

B = 100.0  # bytes/s of a NIC in the pure tests
S = 100.0  # bytes of a message: S / B is one second


def _row(code, a=0, b=0, c=0, after=0.0):
    """A log row; ``after`` seconds of computation before it."""
    return [code, after, after, 0, 0, 0, a, b, c]


def _send_and_wait(target, sequence=0, size=S):
    return [_row(SEND, target, size, sequence), _row(WAIT_SEND, sequence), _row(WAIT)]


def _receive(*senders):
    return [*(_row(WAIT_RECV, s, q) for s, q in senders), _row(WAIT)]


def _replay(logs, node_of, network, known=None):
    ranks = len(logs)
    return replay(
        [np.zeros(5)] * ranks,
        logs,
        [np.zeros(5)] * ranks,
        node_of=node_of,
        network=network,
        memory_bandwidth=1e12,
        memory_latency=0.0,
        known=known,
    )


def test_max_min_rates_share_the_bottleneck_and_give_the_rest_away():
    # flows 0, 1 leave NIC 0; flow 2 enters NIC 3 with flow 1... each link 100 B/s
    flow_of = np.array([0, 0, 1, 1, 2])
    link_of = np.array([0, 1, 0, 2, 2])
    capacity = np.array([100.0, 100.0, 30.0])
    # link 2 (30 B/s) holds flows 1 and 2 at 15 each; flow 0 takes the rest of link 0
    assert max_min_rates(flow_of, link_of, capacity, 3).tolist() == [85.0, 15.0, 15.0]


def test_a_flow_set_hands_freed_bandwidth_to_the_survivors():
    flows = FlowSet(np.full(3, B))
    flows.add("short", (0, 1), 50.0)
    flows.add("long", (0, 2), 150.0)
    assert flows.next_finish() == pytest.approx(1.0)  # 50 B/s each
    assert flows.advance(1.0) == ["short"]
    assert flows.next_finish() == pytest.approx(2.0)  # 100 left at the whole 100
    assert flows.advance(2.0) == ["long"]
    assert flows.next_finish() == np.inf


def test_one_flow_alone_gets_the_whole_nic():
    net = Network(2, B, 0.25)
    finals, _, _ = _replay([_send_and_wait(1), _receive((0, 0))], [0, 1], net)
    assert finals[0].tolist() == [1.0, 0.0, 0.0, 1.0, 0.0]  # bytes left: S / B
    assert finals[1].tolist() == [1.25, 0.0, 0.25, 1.0, 0.0]  # arrived a latency on


def test_two_flows_from_one_node_each_get_half():
    # ranks 0, 1 on node 0 send to ranks 2 and 4 on nodes 1 and 2
    net = Network(3, B, 0.0)
    logs = [
        _send_and_wait(2),
        _send_and_wait(4),
        _receive((0, 0)),
        [],
        _receive((1, 0)),
        [],
    ]
    finals, _, _ = _replay(logs, [0, 0, 1, 1, 2, 2], net)
    assert [f[0] for f in finals] == [2.0, 2.0, 2.0, 0.0, 2.0, 0.0]


def test_incast_of_k_senders_takes_k_times_the_size_over_b():
    for senders in (1, 2, 3, 5):
        net = Network(senders + 1, B, 0.0)
        logs = [_send_and_wait(senders) for _ in range(senders)]
        logs.append(_receive(*((s, 0) for s in range(senders))))
        finals, _, _ = _replay(logs, list(range(senders + 1)), net)
        assert finals[-1][0] == pytest.approx(senders * S / B)


def test_a_flow_that_starts_later_shares_only_while_both_run():
    # rank 1 computes 0.5 s before sending: rank 0 sends alone for 0.5 s (50 bytes),
    # then both share the NIC (50 B/s each): rank 0 finishes at 1.5 s, rank 1 at 2 s
    net = Network(3, B, 0.0)
    logs = [
        _send_and_wait(2),
        [_row(SEND, 4, S, 0, after=0.5), _row(WAIT_SEND, 0), _row(WAIT)],
        _receive((0, 0)),
        [],
        _receive((1, 0)),
        [],
    ]
    finals, _, _ = _replay(logs, [0, 0, 1, 1, 2, 2], net)
    assert finals[0][0] == pytest.approx(1.5)
    assert finals[1][0] == pytest.approx(2.0)
    assert finals[1][1] == pytest.approx(0.5)  # its computation is on its path
    assert finals[4][0] == pytest.approx(2.0)


def test_oversubscribed_uplinks_are_shared_by_the_switch():
    # 2 nodes per switch, uplinks 2:1 (one NIC's worth): nodes 0 and 1 both send
    # to the other switch and share its uplink; in one switch they would not
    topology = Topology(nodes_per_switch=2, oversubscription=2.0)
    net = Network(4, B, 0.0, topology)
    logs = [_send_and_wait(2), _send_and_wait(3), _receive((0, 0)), _receive((1, 0))]
    finals, _, _ = _replay(logs, [0, 1, 2, 3], net)
    assert [f[0] for f in finals] == [2.0, 2.0, 2.0, 2.0]
    flat, _, _ = _replay(logs, [0, 1, 2, 3], Network(4, B, 0.0))
    assert [f[0] for f in flat] == [1.0, 1.0, 1.0, 1.0]


def test_network_routes_capacities_and_hop_latency():
    topology = Topology(
        nodes_per_switch=2,
        switches_per_rack=2,
        oversubscription=2.0,
        rack_oversubscription=4.0,
        hop_latency=1e-3,
    )
    net = Network(8, B, 0.01, topology)
    assert net.switch.tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert net.rack.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert len(net.route(0, 1)) == 2  # one switch: the two NICs
    assert len(net.route(0, 2)) == 4  # leaf, rack switch, leaf
    assert len(net.route(0, 4)) == 6  # and the two rack links
    leaf = 2 * B / 2.0
    assert sorted(set(net.capacity.tolist())) == [2 * leaf / 4.0, B]
    assert net.latency(0, 1) == pytest.approx(0.01)
    assert net.latency(0, 4) == pytest.approx(0.01 + 4e-3)
    load = net.loads([0, 0], [1, 4], [10.0, 20.0])
    assert load[0] == 30.0  # node 0's NIC carries both
    assert load.sum() == 10.0 * 2 + 20.0 * 6


def test_without_oversubscription_uplinks_are_never_the_bottleneck():
    net = Network(40, B, 0.0, Topology(nodes_per_switch=4, switches_per_rack=2))
    assert len(net.capacity) == 80  # the NICs alone: no switch link can fill up
    assert not net.uplinks


def test_allocation_places_the_nodes_and_sets_the_mapping_metrics():
    compact = Network(
        8,
        B,
        0.0,
        Topology(nodes_per_switch=4, switches_per_rack=2),
        Allocation(machine_nodes=64),
    )
    spread = Network(
        8,
        B,
        0.0,
        Topology(nodes_per_switch=4, switches_per_rack=2),
        Allocation("random", machine_nodes=64, seed=3),
    )
    assert compact.mapping_metrics() == {"SW": 2.0, "R": 1.0, "SWR": 2.0}
    assert spread.mapping_metrics()["SW"] > 2
    assert (
        spread.placement.tolist()
        == place_nodes(8, Allocation("random", machine_nodes=64, seed=3)).tolist()
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Topology(nodes_per_switch=0), "nodes_per_switch"),
        (lambda: Topology(oversubscription=0.5), "oversubscription"),
        (lambda: Topology.from_dict({"switches": 2}), "unknown key"),
        (lambda: Allocation("scattered"), "placement"),
        (lambda: Allocation.from_dict({"machine_nodes": 0}), "machine_nodes"),
        (
            lambda: Network(8, B, 0.0, allocation=Allocation(machine_nodes=4)),
            "machine_nodes",
        ),
    ],
)
def test_bad_machines_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_marks_and_earlier_transfers_are_resolved():
    net = Network(2, B, 0.0)
    # epoch 1: rank 0 sends, nobody waits yet; epoch 2: both wait for it
    _, _, known = _replay([[_row(SEND, 1, S, 0)], []], [0, 1], net)
    assert (0, 0) in known
    logs = [
        [_row(WAIT_SEND, 0), _row(WAIT), _row(MARK, 0)],
        [_row(MARK, 0), *_receive((0, 0)), _row(MARK, 1)],
    ]
    _, marks, known = _replay(logs, [0, 1], net, known=known)
    assert marks[0] == {0: 1.0}
    assert marks[1] == {0: 0.0, 1: 1.0}
    assert known == {}  # both ends waited: forgotten


def test_replay_refuses_a_wait_for_a_transfer_never_sent():
    with pytest.raises(RuntimeError, match="never sent"):
        _replay([_receive((1, 7)), []], [0, 1], Network(2, B, 0.0))


def test_the_clock_logs_computation_and_other_waits_but_not_p2p_waits():
    cpu = [0.0]
    clock = RankClock("emulated", cpu_time=lambda: cpu[0])
    clock.replaying = True
    cpu[0] += 0.5
    clock.enter()
    clock.record(SEND, 1, 100, 0)
    clock.leave(extend(clock.stamp(), 2.0, PATH_KEYS.index("bandwidth")), p2p=True)
    clock.enter()  # a collective on a sub-communicator: kept in the log as it is
    clock.leave(extend(clock.stamp(), 1.0, PATH_KEYS.index("latency")))
    token = clock.mark()
    assert clock.log[0][:3] == [SEND, 0.5, 0.5]
    assert clock.log[1][0] == MARK
    assert clock.log[1][1:6] == [1.0, 0.0, 1.0, 0.0, 0.0]  # the collective only
    assert clock.marks[token] == pytest.approx(3.5)  # provisional: 0.5 + 2 + 1
    assert token in clock.unresolved


SCRIPT = r"""
import json
import numpy as np
from mpi4py import MPI
from scaleprobe.kernels.comm import InstrumentedComm

comm = InstrumentedComm.from_environment(MPI.COMM_WORLD)
r = comm.rank
size = 1 << 20
out, phases = {}, {
    # rank -> destination; nodes are pairs of ranks, switches pairs of nodes
    "alone": {0: 2},
    "injection": {0: 2, 1: 4},
    "incast": {2: 0, 4: 0, 6: 0},
    "uplink": {0: 4, 2: 6},
}
buffers = {True: np.zeros(size, np.uint8), False: np.empty(size, np.uint8)}
for name, sends in phases.items():
    comm.sync()
    start = comm.mark()
    requests = []
    if r in sends:
        requests.append(comm.Isend(buffers[True], sends[r]))
    for source in sorted(s for s, t in sends.items() if t == r):
        requests.append(comm.Irecv(buffers[False], source))
    comm.Waitall(requests)
    out[name] = (start, comm.mark())
comm.sync()
times = {name: comm.marked(b) - comm.marked(a) for name, (a, b) in out.items()}
summary = comm.summary()
record = comm.link_record().to_dict()
everything = comm.mpi.gather(times, root=0)
if r == 0:
    print("RESULT " + json.dumps({"times": everything, "summary": summary,
                                  "link": record,
                                  "placement": comm.network.placement.tolist()}))
comm.close()
"""


@pytest.mark.mpi
def test_contention_known_answers_under_real_mpi(mpi_run, tmp_path):
    script = tmp_path / "contention.py"
    script.write_text(SCRIPT)
    bandwidth, latency = 1.25e8, 5e-6
    env = {
        "SCALEPROBE_LINK": json.dumps(
            {
                "mode": "emulated",
                "ppn": 2,
                "core_slots": 0,
                "link_bandwidth": bandwidth,
                "latency": latency,
                "topology": {"nodes_per_switch": 2, "oversubscription": 2.0},
            }
        )
    }
    done = mpi_run(8, sys.executable, script, env=env, timeout=180)
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result = json.loads(line[len("RESULT ") :])
    times = result["times"]
    one = (1 << 20) / bandwidth
    cpu = 2.5e-3  # the Python of posting the requests is charged as computation

    def check(name, rank, expected):
        # a flow posted a little later finishes when the NIC has carried both
        assert times[rank][name] == pytest.approx(expected, abs=cpu), (name, rank)

    check("alone", 0, one)  # a flow alone: the whole NIC
    check("alone", 2, one + latency)
    for rank in (0, 1):  # two flows out of node 0: half each
        check("injection", rank, 2 * one)
    check("incast", 0, 3 * one + latency)  # three senders into node 0
    for rank in (0, 2):  # both cross switch 0's uplink, one NIC's worth
        check("uplink", rank, 2 * one)
    summary = result["summary"]
    assert (summary["SW"], summary["R"], summary["SWR"]) == (2, 1, 2)
    assert result["link"]["topology"]["oversubscription"] == 2.0
    assert result["placement"] == [0, 1, 2, 3]
    parts = ("cp_comp_time", "cp_latency_time", "cp_bandwidth_time", "cp_intra_time")
    assert sum(summary[k] for k in parts) == pytest.approx(summary["time"], rel=1e-9)


def test_collective_steps_are_charged_on_the_busiest_switch_link():
    from scaleprobe.kernels.comm import _collectives as algo

    link = LinkConfig(link_bandwidth=B, latency=0.0, memory_latency=0.0)
    # one step: 0->2 and 1->3 cross from switch 0 to switch 1
    schedule = algo.alltoall_schedule([[0, 0, S, 0], [0, 0, 0, S], [0] * 4, [0] * 4])
    nodes = [0, 1, 2, 3]
    flat = Network(4, B, 0.0)
    tight = Network(4, B, 0.0, Topology(nodes_per_switch=2, oversubscription=2.0))
    assert algo.schedule_cost(schedule, nodes, link, flat) == pytest.approx(1.0)
    assert algo.schedule_cost(schedule, nodes, link, tight) == pytest.approx(2.0)


def test_a_flow_too_small_for_the_clock_to_resolve_still_finishes():
    flows = FlowSet(np.full(2, B))
    flows.advance(1.0)
    flows.add("crumb", (0, 1), 1e-20)  # 1e-22 s: below the resolution of t = 1 s
    assert flows.advance(flows.next_finish()) == ["crumb"]
    assert len(flows) == 0
