"""Each of the five Graph500 validation rules fires on its own kind of corruption."""

from __future__ import annotations

import numpy as np
import pytest
from _graph500_support import self_comm
from scaleprobe.kernels.graph500._frontier import LevelProfile
from scaleprobe.kernels.graph500.bfs_simple import bfs_simple
from scaleprobe.kernels.graph500.construction import build_1d
from scaleprobe.kernels.graph500.generator import kronecker_edges
from scaleprobe.kernels.graph500.validate import RULES, tree_levels, validate_bfs

SCALE = 10


@pytest.fixture(scope="module")
def setup():
    comm = self_comm()
    source, target = kronecker_edges(SCALE, 16, seed=11)
    graph = build_1d(comm, source, target, SCALE)
    root = int(np.argmax(graph.degree))
    pred = np.full(1 << SCALE, -1, dtype=np.int64)
    bfs_simple(comm, graph, root, pred, LevelProfile(comm))
    level, _, _ = tree_levels(pred, root)
    neighbours = {v: set() for v in range(1 << SCALE)}
    for u, v in zip(source.tolist(), target.tolist(), strict=False):
        neighbours[u].add(v)
        neighbours[v].add(u)
    children = np.bincount(pred[pred >= 0], minlength=1 << SCALE)
    children[root] -= 1
    return comm, source, target, root, pred, level, neighbours, children


def check(setup, pred):
    comm, source, target, root = setup[:4]
    return validate_bfs(comm, pred, root, source, target)


def leaves(setup, at_level):
    _, _, _, _root, _pred, level, _, children = setup
    return [int(v) for v in np.flatnonzero((level == at_level) & (children == 0))]


def test_the_untouched_tree_is_valid(setup):
    result = check(setup, setup[4])
    assert result.valid
    assert result.reason == ""
    assert result.violations == (0,) * 5


def test_rule_1_a_cycle(setup):
    pred, level = setup[4].copy(), setup[5]
    child = int(np.flatnonzero(level == 2)[0])
    parent = int(pred[child])
    pred[parent] = child  # parent -> child -> parent
    result = check(setup, pred)
    assert not result.valid
    assert result.failed_rules[0] == "tree"
    assert result.reason.startswith("rule 1 (tree)")


def test_rule_1_root_not_its_own_parent(setup):
    pred = setup[4].copy()
    root = setup[3]
    pred[root] = -1
    assert check(setup, pred).failed_rules[0] == "tree"


def test_rule_2_parent_outside_the_tree(setup):
    pred, level = setup[4].copy(), setup[5]
    outside = int(np.flatnonzero(level < 0)[0])
    vertex = leaves(setup, 2)[0]
    pred[vertex] = outside
    result = check(setup, pred)
    assert result.failed_rules[0] == "levels"
    assert result.violations[0] == 0


def test_rule_3_edge_spanning_more_than_one_level(setup):
    pred, level, neighbours = setup[4].copy(), setup[5], setup[6]
    for vertex in leaves(setup, 1):
        deeper = [w for w in neighbours[vertex] if level[w] >= 2]
        if deeper:
            pred[vertex] = deeper[0]  # now at level >= 3, still next to its old parent
            break
    else:
        pytest.fail("no level-1 leaf with a deeper neighbour in this graph")
    result = check(setup, pred)
    assert result.failed_rules == ["edge levels"]


def test_rule_4_tree_misses_part_of_the_component(setup):
    pred = setup[4].copy()
    pred[leaves(setup, 2)[0]] = -1
    result = check(setup, pred)
    assert result.failed_rules == ["component"]


def test_rule_5_tree_edge_not_in_the_graph(setup):
    pred, level, neighbours = setup[4].copy(), setup[5], setup[6]
    for vertex in leaves(setup, 3):
        strangers = [
            u
            for u in np.flatnonzero(level == 2).tolist()
            if u not in neighbours[vertex]
        ]
        if strangers:
            pred[vertex] = strangers[0]  # same level, but no such edge
            break
    result = check(setup, pred)
    assert result.failed_rules == ["tree edges"]
    assert RULES[4] in result.reason


def test_tree_levels_known_answer_and_out_of_range_parent():
    level, tree_errors, level_errors = tree_levels(np.array([0, 0, 1, 2, -1, 4]), 0)
    assert level.tolist() == [0, 1, 2, 3, -1, -1]
    assert (tree_errors, level_errors) == (0, 1)
    _, tree_errors, _ = tree_levels(np.array([0, 9, -1]), 0)
    assert tree_errors == 1
