"""Real MPI runs of ``python -m scaleprobe.kernels.graph500`` on several ranks."""

from __future__ import annotations

import pytest
from scaleprobe.kernels.schema import Record

pytestmark = pytest.mark.mpi

VARIANTS = ("simple", "replicated-csr", "replicated-csc", "2d")


def _record(stdout: str) -> dict:
    return Record.parse(stdout).to_dict()


@pytest.fixture(scope="module")
def run(mpi_run):
    def graph500(ranks, *args, check=True):
        return mpi_run(ranks, "-m", "scaleprobe.kernels.graph500", *args, check=check)

    return graph500


@pytest.fixture(scope="module")
def one_rank_nedges(run):
    record = _record(run(1, "--scale", 11, "--nbfs", 6, "--seed", 4).stdout)
    return [t["nedge"] for t in record["trials"]]


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_four_ranks_validate_and_traverse_the_same_edges(run, variant, one_rank_nedges):
    out = run(4, "--scale", 11, "--nbfs", 6, "--seed", 4, "--variant", variant).stdout
    record = _record(out)
    assert record["status"] == "ok", record["reason"]
    trials = record["trials"]
    assert [t["valid"] for t in trials] == [True] * 6
    assert [t["nedge"] for t in trials] == one_rank_nedges
    assert record["placement"]["ranks"] == 4
    assert record["metrics"]["bytes_sent"] > 0
    level = trials[0]["profiles"]["level"]
    assert sum(level["bytes_sent"]) == trials[0]["bytes_sent"] > 0


@pytest.mark.slow
def test_emulated_bandwidth_throttle_slows_communication(run):
    records = {}
    for percent in (100, 5):
        out = run(
            2,
            "--scale",
            10,
            "--nbfs",
            3,
            "--variant",
            "2d",
            "--throttle",
            "emulated",
            "--ppn",
            1,
            "--bandwidth-percent",
            percent,
            "--link-bandwidth",
            "10 Mbit/s",
            "--core-slots",
            0,
        ).stdout
        records[percent] = _record(out)
    fast, slow = records[100], records[5]
    assert fast["status"] == slow["status"] == "ok"
    assert slow["metrics"]["comm_time"] > 2 * fast["metrics"]["comm_time"]
    assert slow["metrics"]["time"] > fast["metrics"]["time"]
    slow_levels = slow["trials"][0]["profiles"]["level"]["comm_time"]
    fast_levels = fast["trials"][0]["profiles"]["level"]["comm_time"]
    assert sum(slow_levels) > sum(fast_levels)


def test_command_line_flags_and_reference_block(run):
    result = run(
        1,
        "--scale",
        8,
        "--nbfs",
        3,
        "--no-validate",
        "--graph500-output",
        "--variant",
        "replicated-csc",
    )
    record = _record(result.stdout)
    assert [t["valid"] for t in record["trials"]] == [None] * 3
    assert "bfs  harmonic_mean_TEPS:     !" in result.stdout
    assert "NBFS:                           3" in result.stdout
    bad = run(1, "--scale", 8, "--variant", "3d", check=False)
    assert bad.returncode == 2
    assert "invalid choice: '3d'" in bad.stderr
    bad = run(1, "--scale", 0, check=False)
    assert bad.returncode == 2
    assert "scale must be in [1, 40], got 0" in bad.stderr
