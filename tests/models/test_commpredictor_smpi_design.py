"""The training design and the uplink share of ``bench_commpredictor_smpi.py``.

Known answers: the allocations spread over leaf switches hold the asked nodes on
the leaves that can hold them, and the uplink share of hand-made patterns on a
16-host-per-leaf, 4-uplink fat tree.
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from scaleprobe.kernels.comm.pattern import CommPattern

BENCH = (
    Path(__file__).resolve().parents[1] / "benchmarks" / "bench_commpredictor_smpi.py"
)


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_commpredictor_smpi", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("nodes", [1, 4, 16, 17, 64, 256])
def test_leaf_allocations_hold_the_nodes_on_leaves_that_fit(bench, nodes):
    """Distinct hosts, at most 16 a leaf, on ceil(n/16) to min(n, 16) leaves."""
    counts = set()
    for seed in range(40):
        hosts = bench.leaf_allocation(nodes, seed)
        assert len(hosts) == nodes == len(set(hosts.tolist()))
        assert np.all(np.diff(hosts) > 0)
        assert hosts[0] >= 0
        assert hosts[-1] < 256
        per_leaf = Counter((hosts // 16).tolist())
        assert max(per_leaf.values()) <= 16
        assert -(-nodes // 16) <= len(per_leaf) <= min(nodes, 16)
        counts.add(len(per_leaf))
        assert np.array_equal(hosts, bench.leaf_allocation(nodes, seed))
    if 4 <= nodes <= 16:
        # the number of leaves is drawn: several occur, one leaf and many leaves too
        assert len(counts) >= 3


def test_leaf_allocations_load_some_leaves_with_several_nodes(bench):
    """Over the design's 16-node draws, many put 4 or more nodes on one leaf."""
    busiest = [
        max(Counter((bench.leaf_allocation(16, seed) // 16).tolist()).values())
        for seed in range(100)
    ]
    assert sum(b >= 4 for b in busiest) >= 30
    assert min(busiest) < 4


def test_the_design_adds_spread_runs_and_keeps_the_first(bench):
    """The first design's runs keep their seeds; spread runs are on 4-16 nodes."""
    first = bench.train_points(False, design="grid")
    points = bench.train_points(False)
    assert len(first) == 576
    assert points[:576] == first
    spread = points[576:]
    assert len(spread) == 432
    assert {p[4] for p in spread} == {"leaves"}
    assert {p[0] for p in spread} == {4, 8, 16}
    assert len({p[5] for p in points}) == len(points)


def test_uplink_share_of_known_patterns(bench):
    """Pairs (r, r + n/2), one rank per host, 1000 B each way.

    Inside one leaf nothing goes up: 0. With 8 nodes on leaf 0 and 8 on leaf 1, each
    leaf sends 8 x 1000 B over 4 uplinks, 2000 B each, against NTmax 1000: 2. With
    the 16 nodes one to a leaf, each leaf sends 1000 B over 4 uplinks: 0.25.
    """
    n = 16
    pattern = CommPattern.from_partners([[(r + n // 2) % n] for r in range(n)], 1000)
    share = bench.uplink_share
    assert share(pattern, 1, np.arange(16)) == 0.0
    two_leaves = [*range(8), *range(16, 24)]
    assert share(pattern, 1, two_leaves) == pytest.approx(2.0)
    assert share(pattern, 1, np.arange(16) * 16) == pytest.approx(0.25)
    # two ranks a node, 4 nodes a leaf: NTmax 2000 B, a leaf 8000 B over 4 uplinks
    assert share(pattern, 2, [*range(4), *range(16, 20)]) == pytest.approx(1.0)
