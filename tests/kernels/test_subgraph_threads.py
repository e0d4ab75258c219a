"""Subgraph counting over a rank's threads: the single-threaded counts, exactly."""

import json

import numpy as np
import pytest
from scaleprobe.kernels.comm.threads import ThreadTeam
from scaleprobe.kernels.schema import Record
from scaleprobe.kernels.subgraph import Template, count_subgraphs, erdos_renyi
from scaleprobe.kernels.subgraph.graphs import write_edge_list
from scaleprobe.kernels.subgraph.partition import NeighbourOperator

EMULATED = {
    "mode": "emulated",
    "ppn": 1,
    "bandwidth": 50.0,
    "link_bandwidth": 1.25e8,
    "latency": 5e-6,
    "core_slots": 0,
}


@pytest.fixture(scope="module")
def graph():
    return erdos_renyi(400, 1400, seed=31)


@pytest.mark.parametrize("task_size", [None, 3])
@pytest.mark.parametrize("threads", [2, 3])
def test_threaded_neighbour_sums_equal_the_serial_ones(graph, task_size, threads):
    matrix = graph.adjacency(np.float64)
    operator = NeighbourOperator(matrix, task_size, seed=2)
    table = np.random.default_rng(1).integers(0, 50, (10, 400)).astype(np.float64)
    serial = operator.apply_rows(table)
    assert np.array_equal(serial, (matrix @ table.T).T)  # the known answer
    with ThreadTeam(threads) as team:
        assert np.array_equal(operator.apply_rows(table, team), serial)
        out = np.ones_like(serial)
        operator.add_to(out, np.ascontiguousarray(table.T), team)
        assert np.array_equal(out, serial + 1)
        entries = [rows.nnz for _, _, rows, _ in operator.pieces(threads)]
    assert len(entries) == threads
    assert max(entries) - min(entries) <= max(3 if task_size else 20, 1)


def test_neighbour_lists_are_cut_into_pieces_of_equal_entries():
    import scipy.sparse as sp

    # degrees 6, 1, 1, 1, 1, 1, 1: the long list alone balances the six short ones
    rows = np.repeat(np.arange(7), [6, 1, 1, 1, 1, 1, 1])
    matrix = sp.csr_matrix((np.ones(12), (rows, np.arange(12) % 7)), shape=(7, 7))
    pieces = NeighbourOperator(matrix).pieces(2)
    assert [(lo, hi, part.nnz) for lo, hi, part, _ in pieces] == [(0, 1, 6), (1, 7, 6)]


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["pipeline", "alltoall"])
def test_ranks_of_two_threads_count_what_one_thread_does(
    mpi_run, tmp_path, graph, mode
):
    path = tmp_path / "er.txt"
    write_edge_list(graph, path)
    expected = count_subgraphs(graph, Template.by_name("u7-2"), iterations=3, seed=3)
    arguments = ["--graph", str(path), "--template", "u7-2", "--iterations", "3"]
    arguments += ["--seed", "3", "--mode", mode, "--threads", "2"]
    for ranks in (1, 3):
        done = mpi_run(
            ranks,
            "-m",
            "scaleprobe.kernels.subgraph",
            *arguments,
            env={"SCALEPROBE_LINK": json.dumps(EMULATED)},
        )
        record = Record.parse(done.stdout)
        assert record.threads == 2
        assert record.metrics["estimate"] == expected.estimate
        assert [
            t["iteration_estimate"] for t in record.trials
        ] == expected.estimates.tolist()
