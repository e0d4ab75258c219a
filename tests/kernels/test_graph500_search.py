"""One-rank tests of construction, the four BFS variants and the runner record."""

from __future__ import annotations

import numpy as np
import pytest
from _graph500_support import bfs_distances, self_comm
from scaleprobe.kernels.graph500 import KERNEL
from scaleprobe.kernels.graph500._frontier import LevelProfile
from scaleprobe.kernels.graph500.bfs_2d import bfs_2d
from scaleprobe.kernels.graph500.bfs_replicated import (
    bfs_replicated_csc,
    bfs_replicated_csr,
)
from scaleprobe.kernels.graph500.bfs_simple import bfs_simple
from scaleprobe.kernels.graph500.construction import build_1d, build_2d
from scaleprobe.kernels.graph500.generator import kronecker_edges
from scaleprobe.kernels.graph500.runner import Graph500Config, run_graph500
from scaleprobe.kernels.graph500.validate import tree_levels, validate_bfs

SCALE = 10


@pytest.fixture(scope="module")
def comm():
    return self_comm()


@pytest.fixture(scope="module")
def edges():
    return kronecker_edges(SCALE, 16, seed=3)


def test_csr_holds_both_directions_without_loops_and_counts_duplicates(comm, edges):
    source, target = edges
    graph = build_1d(comm, source, target, SCALE, transpose=True)
    keep = source != target
    pairs = set(zip(source[keep].tolist(), target[keep].tolist(), strict=False))
    pairs |= {(v, u) for u, v in pairs}
    rows = np.repeat(np.arange(1 << SCALE), np.diff(graph.indptr))
    assert set(zip(rows.tolist(), graph.indices.tolist(), strict=False)) == pairs
    assert graph.indices.size == len(pairs)  # merged duplicates
    expected_degree = np.bincount(
        np.concatenate((source[keep], target[keep])), minlength=1 << SCALE
    )
    assert np.array_equal(graph.degree, expected_degree)
    assert graph.csc_indptr is graph.indptr  # symmetric at one rank


def test_2d_block_at_one_rank_equals_the_1d_graph(comm, edges):
    g1 = build_1d(comm, *edges, SCALE)
    g2 = build_2d(comm, *edges, SCALE)
    assert g2.grid == (1, 1)
    assert np.array_equal(g1.indptr, g2.indptr)
    assert np.array_equal(g1.indices, g2.indices)
    assert np.array_equal(g1.degree, g2.degree)


SEARCHES = {
    "simple": (bfs_simple, {}),
    "replicated-csr": (bfs_replicated_csr, {}),
    "replicated-csr-bottom-up": (bfs_replicated_csr, {"direction_optimizing": False}),
    "replicated-csc": (bfs_replicated_csc, {}),
    "2d": (bfs_2d, {}),
    "2d-top-down": (bfs_2d, {"direction_optimizing": False}),
}


@pytest.mark.parametrize("name", list(SEARCHES))
def test_bfs_levels_match_scipy_distances(comm, edges, name):
    search, options = SEARCHES[name]
    source, target = edges
    if name.startswith("2d"):
        graph = build_2d(comm, source, target, SCALE, transpose=True)
    else:
        graph = build_1d(
            comm, source, target, SCALE, transpose=name == "replicated-csc"
        )
    degree = graph.degree
    for root in np.flatnonzero(degree)[[0, 7, 100]]:
        pred = np.full(1 << SCALE, -1, dtype=np.int64)
        profile = LevelProfile(comm)
        search(comm, graph, int(root), pred, profile, **options)
        level, tree_errors, level_errors = tree_levels(pred, int(root))
        assert (tree_errors, level_errors) == (0, 0)
        assert np.array_equal(level, bfs_distances(source, target, 1 << SCALE, root))
        assert validate_bfs(comm, pred, int(root), source, target).valid
        levels = profile.result()
        assert levels["frontier"][0] == 1
        assert sum(levels["frontier"]) == int((pred >= 0).sum())
        if name == "replicated-csr-bottom-up":
            assert all(levels["bottom_up"])
        if name in ("simple", "replicated-csc", "2d-top-down"):
            assert not any(levels["bottom_up"])


@pytest.mark.parametrize("variant", ["replicated-csr", "2d"])
def test_direction_optimizing_search_uses_both_directions(comm, variant):
    source, target = kronecker_edges(13, 16, seed=1)
    if variant == "2d":
        graph, search = build_2d(comm, source, target, 13, transpose=True), bfs_2d
    else:
        graph, search = build_1d(comm, source, target, 13), bfs_replicated_csr
    root = int(np.argmax(graph.degree))
    pred = np.full(1 << 13, -1, dtype=np.int64)
    profile = LevelProfile(comm)
    search(comm, graph, root, pred, profile)
    steps = profile.result()["bottom_up"]
    assert steps[0] == 0
    assert 1 in steps
    assert validate_bfs(comm, pred, root, source, target).valid


def test_runner_record_has_trials_levels_and_reference_statistics(comm, capsys):
    config = Graph500Config(scale=9, variant="replicated-csr", nbfs=5, seed=2)
    import sys

    record = KERNEL.record(run_graph500(comm, config, block_stream=sys.stdout))
    block = capsys.readouterr().out
    assert record.status == "ok"
    assert record.reason == ""
    metrics = record.metrics
    for key in (
        "time",
        "generation_time",
        "construction_time",
        "harmonic_mean_teps",
        "comm_time",
        "comp_time",
        "bytes_sent",
        "messages",
        "peak_rss",
    ):
        assert key in metrics
    trials = record.trials
    assert len(trials) == 5
    assert len({t["root"] for t in trials}) == 5
    for trial in trials:
        assert trial["valid"] is True
        assert trial["teps"] == pytest.approx(trial["nedge"] / trial["time"])
        level = trial["profiles"]["level"]
        assert len(level["frontier"]) == trial["levels"] == len(level["comm_time"])
    hm = len(trials) / sum(t["time"] / t["nedge"] for t in trials)
    assert metrics["harmonic_mean_teps"] == pytest.approx(hm)
    assert "bfs  harmonic_mean_TEPS:     !  " in block
    assert f"NBFS:{' ' * 27}5" in block


def test_runner_reports_an_invalid_search(comm, monkeypatch):
    import scaleprobe.kernels.graph500.runner as runner

    real = runner._search

    def broken(comm, config, graph, root, pred, profile, team=None):
        real(comm, config, graph, root, pred, profile, team)
        pred[pred >= 0] = root  # every reached vertex claims the root as parent

    monkeypatch.setattr(runner, "_search", broken)
    record = KERNEL.record(run_graph500(comm, Graph500Config(scale=8, nbfs=2, seed=1)))
    assert record.status == "invalid"
    assert "rule" in record.reason
    assert "root" in record.reason
    assert [t["valid"] for t in record.trials] == [False, False]


def test_no_validate_leaves_trials_unchecked(comm):
    record = KERNEL.record(
        run_graph500(comm, Graph500Config(scale=7, nbfs=2, validate=False))
    )
    assert record.status == "ok"
    assert [t["valid"] for t in record.trials] == [None, None]
    with pytest.raises(ValueError, match="variant must be one of"):
        run_graph500(comm, Graph500Config(scale=7, variant="3d"))
