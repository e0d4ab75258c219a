"""The opt-in variants of kernels/graph500/departures.py (Suzumura et al. 2011)."""

from __future__ import annotations

import numpy as np
import pytest
from scaleprobe.kernels.graph500.departures import (
    COLUMN_GROUP,
    DEPARTURES,
    PAIRS_PER_BUFFER,
    SUMMARY_WORD,
    SummarizedBitmap,
    grouped_columns,
)
from scaleprobe.kernels.graph500.runner import VARIANTS
from scaleprobe.kernels.schema import Record


@pytest.mark.parametrize("size", [1, 63, 64, 65, 1000])
def test_summarized_bitmap_reads_as_the_bitmap(size):
    rng = np.random.default_rng(size)
    bitmap = rng.random(size) < 0.02
    view = SummarizedBitmap(bitmap)
    index = rng.integers(0, size, 500)
    assert view[index].tolist() == bitmap[index].tolist()
    words = -(-size // SUMMARY_WORD)
    expected = [
        bitmap[w * SUMMARY_WORD : (w + 1) * SUMMARY_WORD].any() for w in range(words)
    ]
    assert view.summary.tolist() == expected


def test_departures_are_listed_variants():
    assert set(DEPARTURES) == {
        "simple-isend",
        "replicated-csr-summary",
        "replicated-csc-grouped",
    }
    assert set(DEPARTURES) <= set(VARIANTS)
    assert PAIRS_PER_BUFFER == 256


def test_grouped_columns_decode_to_the_transposed_rows():
    import scipy.sparse
    from scaleprobe.kernels.graph500.construction import Graph1D, VertexPartition

    rng = np.random.default_rng(3)
    nvertices, nrows = 200, 50
    dense = rng.random((nrows, nvertices)) < 0.05
    rows = scipy.sparse.csr_matrix(dense)
    partition = VertexPartition.create(nvertices, 4)
    graph = Graph1D(
        partition, 0, nrows, rows.indptr, rows.indices, np.diff(rows.indptr)
    )
    group_ptr, entries = grouped_columns(graph)
    assert group_ptr.size == -(-nvertices // COLUMN_GROUP) + 1
    decoded = np.zeros_like(dense)
    for group in range(group_ptr.size - 1):
        for entry in entries[group_ptr[group] : group_ptr[group + 1]]:
            decoded[entry >> 5, group * COLUMN_GROUP + (entry & 31)] = True
    assert np.array_equal(decoded, dense)
    assert grouped_columns(graph)[1] is entries  # kept with the graph


@pytest.fixture(scope="module")
def records(mpi_run):
    out = {}
    for variant in (
        "simple",
        "simple-isend",
        "replicated-csr",
        "replicated-csr-summary",
        "replicated-csc",
        "replicated-csc-grouped",
    ):
        done = mpi_run(
            3, "-m", "scaleprobe.kernels.graph500", "--scale", 11, "--nbfs", 4,
            "--seed", 4, "--variant", variant,
        )  # fmt: skip
        out[variant] = Record.parse(done.stdout).to_dict()
    return out


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "plain"),
    [
        ("simple-isend", "simple"),
        ("replicated-csr-summary", "replicated-csr"),
        ("replicated-csc-grouped", "replicated-csc"),
    ],
)
def test_departure_validates_and_traverses_the_same_edges(records, variant, plain):
    record = records[variant]
    assert record["status"] == "ok", record.get("reason")
    trials = record["trials"]
    assert [t["valid"] for t in trials] == [True] * 4
    assert [t["nedge"] for t in trials] == [
        t["nedge"] for t in records[plain]["trials"]
    ]


@pytest.mark.mpi
@pytest.mark.slow
def test_isend_sends_the_same_bytes_in_256_pair_messages(records):
    simple, isend = records["simple"], records["simple-isend"]
    for ours, theirs in zip(isend["trials"], simple["trials"], strict=True):
        # The same pairs and the same count exchange; only the messages differ.
        assert ours["bytes_sent"] == theirs["bytes_sent"]
        assert ours["messages"] > theirs["messages"]
    levels = isend["trials"][0]["profiles"]["level"]
    pair_bytes = 16 * PAIRS_PER_BUFFER
    # A level's pairs need at least bytes / 4 KiB messages; simple's two Alltoallv
    # per level are 2 x 3 x 2 messages, the bound leaves room for them.
    plain = simple["trials"][0]["profiles"]["level"]
    for sent, messages, base in zip(
        levels["bytes_sent"], levels["messages"], plain["messages"], strict=True
    ):
        assert messages - base >= sent // pair_bytes - 2 * 3 * 2
