"""Templates: Table 3 of Chen et al. 2018, the splitting rule, automorphisms, names."""

import itertools
import math

import numpy as np
import pytest
from scaleprobe.kernels.subgraph import Template, TemplateError, template_names

TABLE_3 = {
    "u3-1": (3, 6),
    "u5-2": (25, 70),
    "u7-2": (147, 434),
    "u10-2": (1047, 5610),
    "u12-1": (4082, 24552),
    "u12-2": (3135, 38016),
    "u13": (4823, 109603),
    "u14": (7371, 242515),
    "u15-1": (12383, 753375),
    "u15-2": (15773, 617820),
}
AUTOMORPHISMS = {"u3-1": 2, "u5-2": 2, "u7-2": 8, "u10-2": 12, "u12-1": 2, "u12-2": 144}
# Table 3's computation intensity, truncated as the paper prints it (u13: 22.7).
INTENSITY = {"u12-2": 12, "u13": 22, "u14": 32, "u15-1": 60, "u15-2": 39}


@pytest.mark.parametrize(("name", "expected"), sorted(TABLE_3.items()))
def test_complexity_reproduces_table_3(name, expected):
    assert Template.by_name(name).complexity() == expected


@pytest.mark.parametrize(("name", "expected"), sorted(AUTOMORPHISMS.items()))
def test_automorphisms_of_shipped_templates(name, expected):
    assert Template.by_name(name).automorphisms() == expected


@pytest.mark.parametrize(("name", "expected"), sorted(INTENSITY.items()))
def test_computation_intensity_of_table_3(name, expected):
    memory, computation = Template.by_name(name).complexity()
    assert math.floor(computation / memory) == expected


@pytest.mark.parametrize("name", ["u13", "u14", "u15-1", "u15-2"])
def test_largest_templates_are_trees_of_their_size(name):
    template = Template.by_name(name)
    assert template.k == int(name[1:3])
    # Post-order split tree: k leaves (single vertices) and k - 1 splits.
    assert len(template.subtemplates) == 2 * template.k - 1
    assert template.subtemplates[-1].size == template.k


def _brute_force_automorphisms(template):
    edges = {frozenset(e) for e in template.edges}
    return sum(
        all(frozenset((perm[u], perm[v])) in edges for u, v in template.edges)
        for perm in itertools.permutations(range(template.k))
    )


def _random_tree(k, rng):
    return [(int(rng.integers(0, v)), v) for v in range(1, k)]


@pytest.mark.parametrize("seed", range(12))
def test_automorphisms_match_permutation_count_on_random_trees(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 8))
    template = Template(_random_tree(k, rng), k)
    assert template.automorphisms() == _brute_force_automorphisms(template)


@pytest.mark.parametrize(
    ("name", "k", "automorphisms"),
    [
        ("path-2", 2, 2),
        ("path-6", 6, 2),
        ("star-6", 6, math.factorial(5)),
        ("spider-3-2", 7, 6),
        ("binary-7", 7, 8),
        ("binary-15", 15, 2**7),
    ],
)
def test_generated_trees(name, k, automorphisms):
    template = Template.by_name(name)
    assert template.k == k
    assert template.automorphisms() == automorphisms


def test_large_templates_are_prepared():
    # Their preparation time is printed by tests/benchmarks/subgraph.py --sections 5.
    for name in ("u12-2", "binary-15", "spider-7-2", "star-15"):
        memory, computation = Template.by_name(name).complexity()
        assert 0 < memory < computation
    assert Template.by_name("star-15").automorphisms() == math.factorial(14)
    assert Template.by_name("spider-7-2").automorphisms() == math.factorial(7)


def test_splitting_rule_on_u5_2():
    # 0-1, 0-2, 0-3, 3-4: cut 0-1 (first listed), then 0-2, then 0-3.
    subs = Template.by_name("u5-2").subtemplates
    whole = subs[-1]
    assert (whole.size, subs[whole.active].size, subs[whole.passive].size) == (5, 4, 1)
    four = subs[whole.active]
    assert (subs[four.active].size, subs[four.passive].size) == (3, 1)
    three = subs[four.active]
    assert (subs[three.active].size, subs[three.passive].size) == (1, 2)


def test_edge_order_changes_the_split():
    first = Template([(0, 1), (0, 2), (2, 3)], 4)
    second = Template([(0, 2), (2, 3), (0, 1)], 4)
    sizes = [(t.subtemplates[t.subtemplates[-1].active].size) for t in (first, second)]
    assert sizes == [3, 2]
    assert first.automorphisms() == second.automorphisms() == 2


def test_from_file_and_package_data(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("4\n3\n0 1\n1 2\n1 3\n")
    template = Template.from_file(path)
    assert (template.name, template.k, template.automorphisms()) == ("t", 4, 6)
    assert Template.by_name(str(path)).k == 4
    names = template_names()
    assert {"u3-1", "u5-2", "u7-2", "u10-2", "u12-1", "u12-2"} <= set(names)
    assert {"u13", "u14", "u15-1", "u15-2"} <= set(names)


@pytest.mark.parametrize(
    ("edges", "k", "message"),
    [
        ([(0, 1)], 3, "has 2 edges"),
        ([(0, 1), (2, 3), (2, 4)], 4, "distinct vertices"),
        ([(0, 1), (0, 1), (2, 3)], 4, "do not connect"),
    ],
)
def test_invalid_templates_are_rejected(edges, k, message):
    with pytest.raises(TemplateError, match=message):
        Template(edges, k)


def test_unknown_name_lists_the_choices():
    with pytest.raises(TemplateError, match="u7-2"):
        Template.by_name("no-such-template")


def test_bad_file_header(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("3\n2\n0 1\n")
    with pytest.raises(TemplateError, match="announces 2 edges"):
        Template.from_file(path)
