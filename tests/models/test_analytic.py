"""Known-answer tests of the Graph500 formulas against the numbers of the paper."""

import math

import pytest
from scaleprobe.models.analytic.graph500 import (
    graph500_comm_volume,
    graph500_grid,
    graph500_memory,
)

GIB = 2**30


def test_simple_volume_matches_paper():
    # 2^32 * 16 * 2 * (127/128) * 2 * 8 = 2032 GB (2 TB) in Suzumura et al.
    volume = graph500_comm_volume("simple", 32, 128)
    assert volume == 2**32 * 16 * 2 * (127 / 128) * 2 * 8
    assert volume / GIB == 2032.0
    assert volume == pytest.approx(2.18e12, rel=2e-3)


@pytest.mark.parametrize("variant", ["replicated-csr", "replicated-csc"])
def test_replicated_volume_matches_paper(variant):
    # V (n-1) d / 8 with V = 2^32, n = 128, d = 12: 762 GB in the paper.
    volume = graph500_comm_volume(variant, 32, 128, levels=12)
    assert volume == 2**32 * 127 * 12 / 8
    assert volume / GIB == 762.0


def test_memory_matches_paper():
    # M(32) = 2^32 * (2 * 16 + 1) * 8 bytes = 1.03125 TB.
    assert graph500_memory(32) / 2**40 == 1.03125
    assert graph500_memory(32, edgefactor=8, bytes_per_entry=4) == 2**32 * 17 * 4


def test_simple_volume_is_twice_the_graph_at_scale():
    ratio = graph500_comm_volume("simple", 32, 128) / graph500_memory(32)
    assert ratio == pytest.approx(2 * 127 / 128 * 32 / 33)


def test_single_rank_sends_nothing():
    for variant in ("simple", "replicated-csr", "2d"):
        assert graph500_comm_volume(variant, 10, 1, levels=5) == 0.0


def test_replicated_volume_grows_with_levels_and_ranks():
    base = graph500_comm_volume("replicated-csr", 20, 8, levels=6)
    assert graph500_comm_volume("replicated-csr", 20, 8, levels=12) == 2 * base
    assert graph500_comm_volume("replicated-csr", 20, 15, levels=6) == 2 * base
    # bitmaps: identifier width does not matter
    assert graph500_comm_volume("replicated-csr", 20, 8, levels=6, id_bytes=4) == base


@pytest.mark.parametrize(
    ("ranks", "grid"),
    [(1, (1, 1)), (16, (4, 4)), (18, (3, 6)), (8, (2, 4)), (13, (1, 13))],
)
def test_grid_is_most_square(ranks, grid):
    assert graph500_grid(ranks) == grid


def test_2d_volume_known_answer():
    # R = C = 4: expand V*3*8, fold 2*16V*(3/4)*2*8.
    vertices = 2**20
    expected = vertices * 3 * 8 + 2 * 16 * vertices * 0.75 * 16
    assert graph500_comm_volume("2d", 20, 16) == expected


def test_2d_partners_grow_as_sqrt_p():
    # partners per rank R-1 + C-1 grow like 2 sqrt(p), not p - 1
    for p in (4, 16, 64, 256, 1024):
        rows, columns = graph500_grid(p)
        assert rows - 1 + columns - 1 == 2 * math.isqrt(p) - 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"variant": "one-sided", "scale": 10, "ranks": 4}, "variant must be one of"),
        ({"variant": "simple", "scale": 0, "ranks": 4}, "scale must be a positive"),
        ({"variant": "simple", "scale": 10, "ranks": 2.5}, "ranks must be a positive"),
        ({"variant": "replicated-csr", "scale": 10, "ranks": 4}, "levels is required"),
        (
            {"variant": "replicated-csc", "scale": 10, "ranks": 4, "levels": -1},
            "levels must be a positive",
        ),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        graph500_comm_volume(**kwargs)


def test_memory_rejects_bad_scale():
    with pytest.raises(ValueError, match="scale must be a positive integer, got True"):
        graph500_memory(True)
