"""Color coding against exact counts by an independent method."""

import math

import numpy as np
import pytest
from scaleprobe.kernels.subgraph import (
    Graph,
    Template,
    colorful_count,
    coloring,
    count_subgraphs,
    erdos_renyi,
    estimate_scale,
    exact_count,
    iterations_for,
    median_of_means,
    rmat,
)
from scaleprobe.kernels.subgraph.exact import exact_maps

SMALL = ["u3-1", "u5-2", "u7-2", "path-4", "star-5", "spider-3-2", "binary-7", "u10-2"]


def _complete(n):
    return Graph.from_edges(n, [(u, v) for u in range(n) for v in range(u + 1, n)])


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_colorful_count_equals_enumeration(name, dtype):
    graph = erdos_renyi(40, 90, seed=11)
    template = Template.by_name(name)
    colors = np.stack(
        [coloring(5, it, graph.n_vertices, template.k) for it in range(3)]
    )
    adjacency = graph.adjacency(dtype)
    expected = [exact_maps(graph, template, c) for c in colors]
    assert colorful_count(adjacency, template, colors[0], dtype) == expected[0]
    assert colorful_count(adjacency, template, colors, dtype).tolist() == expected


def test_colorful_count_on_skewed_graph():
    graph = rmat(64, 200, (0.7, 0.1, 0.1), seed=3)
    template = Template.by_name("u7-2")
    colors = coloring(0, 0, graph.n_vertices, template.k)
    assert colorful_count(graph.adjacency(), template, colors) == exact_maps(
        graph, template, colors
    )


@pytest.mark.parametrize(
    "name", ["u3-1", "u5-2", "u7-2", "star-4", "path-5", "binary-7"]
)
def test_exact_count_in_complete_graph(name):
    template = Template.by_name(name)
    n = 8
    expected = math.perm(n, template.k) // template.automorphisms()
    assert exact_count(_complete(n), template) == expected


def test_exact_count_formulas_for_paths_and_stars():
    graph = erdos_renyi(50, 120, seed=2)
    degrees = graph.degrees()
    for k in (3, 4, 5):
        expected = sum(math.comb(int(d), k - 1) for d in degrees)
        assert exact_count(graph, Template.by_name(f"star-{k}")) == expected
    cycle = Graph.from_edges(30, [(i, (i + 1) % 30) for i in range(30)])
    for k in (3, 5, 7):
        assert exact_count(cycle, Template.by_name(f"path-{k}")) == 30


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "iterations"), [("u3-1", 1000), ("u5-2", 2000), ("u7-2", 4000)]
)
def test_estimate_converges_within_one_percent(name, iterations):
    graph = erdos_renyi(300, 600, seed=23)
    template = Template.by_name(name)
    exact = exact_count(graph, template)
    result = count_subgraphs(graph, template, iterations=iterations, seed=4, batch=100)
    assert abs(result.estimates.mean() / exact - 1) < 0.01
    assert abs(result.estimate / exact - 1) < 0.02


def test_count_is_deterministic_and_batch_independent():
    graph = erdos_renyi(60, 150, seed=1)
    template = Template.by_name("u5-2")
    one = count_subgraphs(graph, template, iterations=6, seed=9)
    batched = count_subgraphs(graph, template, iterations=6, seed=9, batch=4)
    np.testing.assert_array_equal(one.estimates, batched.estimates)
    assert one.estimate == batched.estimate
    other = count_subgraphs(graph, template, iterations=6, seed=10)
    assert not np.array_equal(one.estimates, other.estimates)


def test_estimate_scale_and_iterations():
    template = Template.by_name("u3-1")
    assert estimate_scale(template) == pytest.approx(27 / 6 / 2)
    assert iterations_for(3, 0.5, 0.1) == math.ceil(math.e**3 * math.log(10) / 0.25)
    with pytest.raises(ValueError, match="epsilon and delta"):
        iterations_for(3, 1.5, 0.1)


def test_median_of_means():
    assert median_of_means([1, 1, 5, 5, 9, 9], 3) == 5.0
    assert median_of_means([1, 2, 3], 10) == 2.0
    assert median_of_means([4.0], 3) == 4.0
    with pytest.raises(ValueError, match="at least one"):
        median_of_means([], 3)


def test_single_vertex_template():
    graph = erdos_renyi(10, 12, seed=0)
    result = count_subgraphs(graph, Template([], 1), iterations=2)
    assert result.estimate == 10


def test_importing_the_package_does_not_import_mpi4py():
    import subprocess
    import sys

    code = (
        "import sys, scaleprobe.kernels.subgraph, "
        "scaleprobe.kernels.subgraph.distributed; "
        "assert 'mpi4py' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--graph", "er:10:10", "--template", "nope"], "unknown template"),
        (["--graph", "missing.txt", "--template", "u3-1"], "neither a file"),
        (["--graph", "er:10:10", "--template", "u3-1", "--task-size", "-1"], ">= 0"),
        (
            ["--graph", "er:10:10", "--template", "u3-1", "--mode", "ring"],
            "invalid choice",
        ),
    ],
)
def test_command_line_errors(arguments, message, capsys):
    from scaleprobe.kernels.subgraph import main

    with pytest.raises(SystemExit):
        main(arguments)
    assert message in capsys.readouterr().err


# Table 3's largest templates (Chen et al. 2018) on a graph small enough to enumerate:
# one colouring each whose colourful count is not zero (found by trying iterations).
LARGEST = [("u13", 6, 13776), ("u14", 6, 480), ("u15-1", 11, 288), ("u15-2", 0, 4608)]


@pytest.mark.parametrize(("name", "iteration", "maps"), LARGEST)
def test_largest_templates_colorful_count_equals_enumeration(name, iteration, maps):
    graph = erdos_renyi(40, 90, seed=11)
    template = Template.by_name(name)
    colors = coloring(5, iteration, graph.n_vertices, template.k)
    enumerated = exact_maps(graph, template, colors)
    assert enumerated == maps
    assert colorful_count(graph.adjacency(), template, colors) == enumerated
    assert enumerated % template.automorphisms() == 0


@pytest.mark.parametrize("name", [name for name, _, _ in LARGEST])
def test_largest_templates_in_themselves_and_in_a_complete_graph(name):
    template = Template.by_name(name)
    k = template.k
    tree = Graph.from_edges(k, template.edges)
    # The maps of a tree into itself are its automorphisms: one embedding.
    assert exact_maps(tree, template) == template.automorphisms()
    assert exact_count(tree, template) == 1
    # Every bijection onto K_k with k distinct colours is a colourful map: k! of them.
    assert colorful_count(_complete(k).adjacency(), template, np.arange(k)) == (
        math.factorial(k)
    )
