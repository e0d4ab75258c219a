"""Graph500 BFS levels expanded over a rank's threads: the same trees, validated."""

from __future__ import annotations

import numpy as np
import pytest
from _graph500_support import bfs_distances, self_comm
from scaleprobe.kernels.comm.threads import ThreadTeam
from scaleprobe.kernels.graph500._frontier import LevelProfile
from scaleprobe.kernels.graph500.bfs_2d import bfs_2d
from scaleprobe.kernels.graph500.bfs_replicated import (
    bfs_replicated_csc,
    bfs_replicated_csr,
)
from scaleprobe.kernels.graph500.bfs_simple import bfs_simple
from scaleprobe.kernels.graph500.construction import build_1d, build_2d
from scaleprobe.kernels.graph500.generator import kronecker_edges
from scaleprobe.kernels.graph500.validate import tree_levels, validate_bfs
from scaleprobe.kernels.schema import Record

SCALE = 14  # the large levels hold several pieces of 32768 adjacency entries


@pytest.fixture(scope="module")
def comm():
    return self_comm()


@pytest.fixture(scope="module")
def edges():
    return kronecker_edges(SCALE, 16, seed=5)


SEARCHES = {
    "simple": lambda c, g, r, p, f, t: bfs_simple(c, g, r, p, f, t),
    "replicated-csr": lambda c, g, r, p, f, t: bfs_replicated_csr(
        c, g, r, p, f, team=t
    ),
    "replicated-csc": lambda c, g, r, p, f, t: bfs_replicated_csc(c, g, r, p, f, t),
    "2d": lambda c, g, r, p, f, t: bfs_2d(c, g, r, p, f, team=t),
}


def _search(comm, graph, root, team, variant="simple"):
    pred = np.full(graph.degree.size, -1, dtype=np.int64)
    profile = LevelProfile(comm)
    SEARCHES[variant](comm, graph, root, pred, profile, team)
    return pred, profile.frontier


@pytest.mark.parametrize("variant", sorted(SEARCHES))
@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_levels_give_the_single_threaded_tree(comm, edges, threads, variant):
    if variant == "2d":
        graph = build_2d(comm, *edges, SCALE, transpose=True)
    else:
        graph = build_1d(comm, *edges, SCALE, transpose=variant == "replicated-csc")
    root = int(np.argmax(graph.degree))
    alone, alone_levels = _search(comm, graph, root, None, variant)
    with ThreadTeam(threads, comm) as team:
        pred, levels = _search(comm, graph, root, team, variant)
        assert team.last_region > 0  # a level did run over the threads
    assert np.array_equal(pred, alone)
    assert levels == alone_levels
    assert validate_bfs(comm, pred, root, *edges).valid
    level, tree_errors, level_errors = tree_levels(pred, root)
    assert (tree_errors, level_errors) == (0, 0)
    assert np.array_equal(level, bfs_distances(*edges, 1 << SCALE, root))


@pytest.mark.mpi
@pytest.mark.parametrize("variant", sorted(SEARCHES))
def test_two_ranks_of_two_threads_traverse_what_one_thread_does(mpi_run, variant):
    def run(threads):
        done = mpi_run(
            2,
            "-m",
            "scaleprobe.kernels.graph500",
            *("--scale", "13", "--nbfs", "3", "--variant", variant),
            *("--threads", str(threads)),
        )
        return Record.parse(done.stdout)

    one, two = run(1), run(2)
    assert (one.status, two.status) == ("ok", "ok")
    assert (one.threads, two.threads) == (1, 2)
    for a, b in zip(one.trials, two.trials, strict=True):
        assert (a["root"], a["nedge"], a["levels"]) == (
            b["root"],
            b["nedge"],
            b["levels"],
        )
        assert a["profiles"]["level"]["frontier"] == b["profiles"]["level"]["frontier"]
        assert b["valid"] is True
