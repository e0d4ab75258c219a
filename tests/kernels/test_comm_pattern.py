"""Descriptive metrics of hand-worked communication patterns."""

import numpy as np
import pytest
from scaleprobe.kernels.comm.pattern import METRICS, CommPattern, place_nodes


def test_ring_on_two_nodes_by_hand():
    # 4 ranks, ppn 2: rank r sends 1000 B to r+1 and r-1 (mod 4).
    partners = [[(r + 1) % 4, (r - 1) % 4] for r in range(4)]
    m = CommPattern.from_partners(partners, 1000).metrics(ppn=2)
    # 8 messages; 0->1, 1->0, 2->3, 3->2 stay on a node, the other 4 cross.
    assert m["S"] == 1000
    assert m["M"] == 2
    assert m["PPN"] == 2
    assert m["N"] == 2
    assert m["I"] == pytest.approx(0.5)
    assert m["PT"] == 2000
    assert m["NT"] == pytest.approx(2000 * 2 * 0.5)
    assert m["V"] == pytest.approx(4000)
    assert m["NI"] == pytest.approx(2 * 0.5 * 2)
    assert m["VI"] == pytest.approx(4)
    assert (m["SW"], m["R"], m["SWR"]) == (1, 1, 1)


def test_switches_and_racks_from_placement():
    pattern = CommPattern.from_partners([[1], [0], [3], [2]], 64)
    m = pattern.metrics(
        ppn=1, placement=[0, 5, 18, 40], nodes_per_switch=18, switches_per_rack=2
    )
    # switches 0, 0, 1, 2 -> 3 switches; racks 0, 0, 0, 1 -> 2 racks
    assert (m["SW"], m["R"], m["SWR"]) == (3, 2, 1.5)
    assert m["I"] == 1.0


def test_busiest_node_traffic_counts_what_a_node_sends_or_receives():
    # 4 nodes, ppn 1: ranks 1, 2, 3 each send 100 B to rank 0 (incast), 0 sends 50 B
    # to 1; the mean node sends 87.5 B, the busiest node receives 300 B
    sizes = np.zeros((4, 4))
    sizes[1:, 0] = 100.0
    sizes[0, 1] = 50.0
    m = CommPattern(sizes).metrics(ppn=1)
    assert m["NT"] == pytest.approx(350 / 4)
    assert m["NTmax"] == 300.0
    # two ranks per node: 1 -> 0 stays on node 0, node 0 receives 200 B from node 1
    assert CommPattern(sizes).metrics(ppn=2)["NTmax"] == 200.0


def test_busiest_switch_traffic_counts_what_leaves_or_enters_a_switch():
    # nodes on machine nodes 0, 1 (switch 0) and 16, 17 (switch 1), ppn 1: node 0
    # sends 100 B to node 2 and 70 B to node 1 (same switch), node 1 50 B to node 3,
    # node 3 30 B to node 0; switch 0 sends 150 B up, receives 30 B
    sizes = np.zeros((4, 4))
    sizes[0, 2], sizes[0, 1], sizes[1, 3], sizes[3, 0] = 100.0, 70.0, 50.0, 30.0
    pattern = CommPattern(sizes)
    m = pattern.metrics(ppn=1, placement=[0, 1, 16, 17], nodes_per_switch=16)
    assert (m["SWTmax"], m["NTmax"], m["SW"]) == (150.0, 170.0, 2)
    # one switch: nothing goes up, whatever the nodes send
    assert pattern.metrics(ppn=1, nodes_per_switch=16)["SWTmax"] == 0.0
    # every node a switch of its own: the busiest switch is the busiest node
    m = pattern.metrics(ppn=1, nodes_per_switch=1)
    assert m["SWTmax"] == m["NTmax"] == 170.0


def test_all_on_one_node_has_no_node_traffic():
    m = CommPattern.from_partners([[1], [0]], 4096).metrics(ppn=2)
    assert m["I"] == 0
    assert m["NT"] == 0
    assert m["V"] == 0
    assert m["PT"] == 4096


def test_repeated_partners_are_separate_messages():
    m = CommPattern.from_partners([[1, 1, 1], [0, 0, 0]], 100).metrics(ppn=1)
    assert m["M"] == 3
    assert m["S"] == 100
    assert m["NT"] == 300


def test_metric_vector_order():
    pattern = CommPattern.from_partners([[1], [0]], 10)
    vector = pattern.metric_vector(ppn=1)
    assert vector.tolist() == [pattern.metrics(ppn=1)[n] for n in METRICS]


def test_random_placement_is_seeded_and_spreads():
    a = place_nodes(16, allocation="random", machine_nodes=1404, seed=3)
    b = place_nodes(16, allocation="random", machine_nodes=1404, seed=3)
    assert a.tolist() == b.tolist()
    assert len(set(a.tolist())) == 16
    pattern = CommPattern.from_partners([[(r + 1) % 16] for r in range(16)], 1)
    compact = pattern.metrics(placement=place_nodes(16))
    spread = pattern.metrics(placement=a, switches_per_rack=4)
    assert compact["SW"] == 1
    assert spread["SW"] > compact["SW"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: CommPattern(np.zeros((2, 3))), "square"),
        (lambda: CommPattern([[0, -1], [0, 0]]), ">= 0"),
        (lambda: CommPattern([[0, 1], [1, 0]], [[0, 0], [1, 0]]), "counts"),
        (lambda: CommPattern.from_partners([[0]], 8), "other ranks"),
        (
            lambda: CommPattern.from_partners([[1], [0], [0]], 8).metrics(ppn=2),
            "divide",
        ),
        (lambda: place_nodes(4, machine_nodes=2), "machine_nodes"),
        (lambda: place_nodes(4, allocation="scatter"), "compact"),
    ],
)
def test_bad_input_says_what_is_allowed(call, message):
    with pytest.raises(ValueError, match=message):
        call()
