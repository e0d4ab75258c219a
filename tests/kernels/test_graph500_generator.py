"""Known-answer and property tests of the Kronecker generator and the partitions."""

from __future__ import annotations

import numpy as np
import pytest
from scaleprobe.kernels.graph500.construction import VertexPartition, grid_shape
from scaleprobe.kernels.graph500.generator import (
    edge_range,
    kronecker_edges,
    relabel,
    vertex_dtype,
)


def test_known_first_edges_are_stable():
    # Pinned output: a change here changes every graph the benchmark has measured.
    source, target = kronecker_edges(10, 16, seed=1)
    assert source[:4].tolist() == [227, 459, 748, 154]
    assert target[:4].tolist() == [854, 582, 150, 863]


def test_slices_concatenate_to_the_whole_graph_for_any_rank_count():
    source, target = kronecker_edges(9, 16, seed=5)
    assert source.size == 16 << 9
    for size in (1, 3, 7):
        parts = [
            kronecker_edges(9, 16, 5, *edge_range(r, size, source.size))
            for r in range(size)
        ]
        assert np.array_equal(np.concatenate([p[0] for p in parts]), source)
        assert np.array_equal(np.concatenate([p[1] for p in parts]), target)


def test_seed_changes_the_graph_and_ids_stay_in_range():
    a = kronecker_edges(8, 8, seed=1)
    b = kronecker_edges(8, 8, seed=2)
    assert not np.array_equal(a[0], b[0])
    assert a[0].dtype == vertex_dtype(8) == np.int32
    assert min(a[0].min(), a[1].min()) >= 0
    assert max(a[0].max(), a[1].max()) < 256


@pytest.mark.parametrize("scale", [1, 5, 13, 31])
def test_relabel_is_a_bijection(scale):
    n = min(1 << scale, 1 << 13)
    ids = (
        np.arange(n, dtype=np.uint64)
        if scale <= 13
        else np.arange(n, dtype=np.uint64) * 7919
    )
    out = relabel(ids.copy(), scale, seed=3)
    assert out.max() < 1 << scale
    assert np.unique(out).size == n


def test_relabel_scatters_neighbouring_ids():
    out = relabel(np.arange(1024, dtype=np.uint64), 20, seed=1).astype(np.int64)
    # consecutive ids land far apart (no locality survives)
    assert np.median(np.abs(np.diff(out))) > 2**16


def test_initiator_quadrants_fix_source_and_target_bits():
    scale = 6
    zero, ones = (
        int(relabel(np.array([v], dtype=np.uint64), scale, 4)[0]) for v in (0, 63)
    )
    s, t = kronecker_edges(scale, 2, seed=4, initiator=(1.0, 0.0, 0.0, 0.0))
    assert set(s.tolist()) == {zero}
    assert set(t.tolist()) == {zero}
    s, t = kronecker_edges(scale, 2, seed=4, initiator=(0.0, 1.0, 0.0, 0.0))
    assert set(s.tolist()) == {zero}
    assert set(t.tolist()) == {ones}
    s, t = kronecker_edges(scale, 2, seed=4, initiator=(0.0, 0.0, 1.0, 0.0))
    assert set(s.tolist()) == {ones}
    assert set(t.tolist()) == {zero}


def test_degree_distribution_is_skewed_like_a_kronecker_graph():
    s, t = kronecker_edges(12, 16, seed=1)
    loops = s == t
    degree = np.bincount(np.concatenate((s[~loops], t[~loops])), minlength=4096)
    assert degree.max() > 50 * degree.mean()  # hubs
    assert 0.05 < (degree == 0).mean() < 0.5  # many isolated vertices
    assert 0 < loops.sum() < 0.01 * s.size  # self-loops stay in the list


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="scale"):
        kronecker_edges(0)
    with pytest.raises(ValueError, match="initiator"):
        kronecker_edges(4, initiator=(0.5, 0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="outside"):
        kronecker_edges(4, 16, start=0, stop=10**6)


def test_partition_blocks_are_word_aligned_and_cover_all_vertices():
    part = VertexPartition.create(1 << 10, 3)
    assert part.block % 64 == 0
    assert part.counts().sum() == 1 << 10
    assert part.owner(np.array([0, part.block, 1023])).tolist() == [0, 1, 2]
    tiny = VertexPartition.create(16, 4)
    assert tiny.counts().tolist() == [16, 0, 0, 0]


@pytest.mark.parametrize(
    ("size", "shape"),
    [
        (1, (1, 1)),
        (2, (2, 1)),
        (4, (2, 2)),
        (8, (4, 2)),
        (9, (3, 3)),
        (18, (6, 3)),
        (32, (8, 4)),
        (50, (10, 5)),
        (12, (4, 3)),
        (7, (7, 1)),
    ],
)
def test_grid_shapes_for_square_and_two_p_squared_counts(size, shape):
    assert grid_shape(size) == shape
