"""Input graphs, partitioning and neighbour-list tasks of the subgraph kernel."""

import numpy as np
import pytest
from scaleprobe.kernels.subgraph import Graph, GraphError, erdos_renyi, load_graph, rmat
from scaleprobe.kernels.subgraph.graphs import read_edge_list, write_edge_list
from scaleprobe.kernels.subgraph.partition import (
    LocalGraph,
    NeighbourOperator,
    partition_vertices,
)


def test_from_edges_drops_loops_and_duplicates():
    graph = Graph.from_edges(4, [(0, 1), (1, 0), (2, 2), (3, 1)])
    assert graph.edges.tolist() == [[0, 1], [1, 3]]
    assert graph.degrees().tolist() == [1, 2, 0, 1]
    with pytest.raises(GraphError, match=r"0\.\.3"):
        Graph.from_edges(4, [(0, 4)])


def test_erdos_renyi_has_exactly_m_distinct_edges():
    graph = erdos_renyi(100, 700, seed=3)
    assert graph.n_edges == 700
    assert np.all(graph.edges[:, 0] < graph.edges[:, 1])
    assert np.array_equal(graph.edges, erdos_renyi(100, 700, seed=3).edges)
    with pytest.raises(GraphError, match="at most 6 edges"):
        erdos_renyi(4, 7)


def test_rmat_skew_raises_the_maximum_degree():
    flat = load_graph("rmat:1024:8000:1:2")
    skewed = load_graph("rmat:1024:8000:8:2")
    assert flat.n_vertices == skewed.n_vertices == 1024
    assert skewed.degrees().max() > 2 * flat.degrees().max()
    kron = load_graph("graph500:8:4")
    assert kron.n_vertices == 256
    assert 0 < kron.n_edges <= 1024
    assert np.array_equal(load_graph("kronecker:8:4:1").edges, kron.edges)


def test_edge_list_round_trip(tmp_path):
    graph = erdos_renyi(30, 60, seed=1)
    path = tmp_path / "g.txt"
    write_edge_list(graph, path)
    again = load_graph(str(path))
    assert again.n_vertices == 30
    assert np.array_equal(again.edges, graph.edges)
    bad = tmp_path / "bad.txt"
    bad.write_text("3\n2\n0 1\n")
    with pytest.raises(GraphError, match="announces 2 edges"):
        read_edge_list(bad)


@pytest.mark.parametrize("spec", ["nope", "er:10", "rmat:a:b"])
def test_bad_graph_specs(spec):
    with pytest.raises(GraphError, match=r"spec|neither"):
        load_graph(spec)


@pytest.mark.parametrize("task_size", [None, 1, 4])
def test_partitioned_neighbour_sums_equal_the_whole_graph(task_size):
    graph = rmat(300, 2500, (0.6, 0.15, 0.15), seed=4)
    table = np.random.default_rng(0).integers(0, 9, (graph.n_vertices, 5)).astype(float)
    expected = graph.adjacency() @ table
    owner = partition_vertices(graph.n_vertices, 3, seed=2)
    assert np.bincount(owner).tolist() == [100, 100, 100]
    parts = [
        LocalGraph.build(graph, owner, r, 3, task_size=task_size) for r in range(3)
    ]
    for rank, part in enumerate(parts):
        got = part.local.apply(table[part.vertices])
        for source, operator in part.ghosts.items():
            sender = parts[source]
            got += operator.apply(table[sender.vertices[sender.send_index[rank]]])
        np.testing.assert_array_equal(got, expected[part.vertices])
        if task_size is not None:
            assert part.local.max_task <= task_size


def test_tasks_split_long_neighbour_lists():
    star = Graph.from_edges(11, [(0, i) for i in range(1, 11)]).adjacency()
    operator = NeighbourOperator(star, task_size=3)
    assert operator.n_tasks == 4 + 10
    assert operator.max_task == 3
    table = np.arange(22.0).reshape(2, 11)
    np.testing.assert_array_equal(operator.apply_rows(table), (star @ table.T).T)
