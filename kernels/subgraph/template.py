"""Tree templates: reading, naming, splitting into sub-templates, complexity, symmetry.

A template is a tree on ``k`` vertices rooted at vertex 0. The order in which the edges
are listed matters: the template is split by cutting the edge from the root to the first
child listed for it, recursively, and each part is renumbered breadth-first (children in
their listed order). The part that keeps the root is the *active* part, the other one,
rooted at the cut child, the *passive* part.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from importlib import resources

__all__ = ["SubTemplate", "Template", "TemplateError", "template_names"]


_PATTERNS = {
    "path": re.compile(r"^path-(\d+)$"),
    "star": re.compile(r"^star-(\d+)$"),
    "spider": re.compile(r"^spider-(\d+)-(\d+)$"),
    "binary": re.compile(r"^binary-(\d+)$"),
}


def generated_tree_edges(name: str):
    """Vertex count and ordered edges of a generated tree, or ``None`` if not one.

    ``path-K``: K vertices in a line, rooted at an end. ``star-K``: a centre (the root)
    and K - 1 leaves. ``spider-L-D``: L legs of D vertices from a centre root
    (1 + L * D vertices). ``binary-K``: the complete binary tree on K vertices in
    breadth-first (heap) numbering.
    """
    for kind, pattern in _PATTERNS.items():
        match = pattern.match(name)
        if match is None:
            continue
        numbers = [int(g) for g in match.groups()]
        if kind == "path":
            k = numbers[0]
            return k, [(i, i + 1) for i in range(k - 1)]
        if kind == "star":
            k = numbers[0]
            return k, [(0, i) for i in range(1, k)]
        if kind == "binary":
            k = numbers[0]
            return k, [((i - 1) // 2, i) for i in range(1, k)]
        legs, length = numbers
        edges = []
        for leg in range(legs):
            first = 1 + leg * length
            edges.append((0, first))
            edges.extend((first + j, first + j + 1) for j in range(length - 1))
        return 1 + legs * length, edges
    return None


class TemplateError(ValueError):
    """A template file or name that cannot be turned into a tree template."""


@dataclass(frozen=True)
class SubTemplate:
    """One node of a template's split tree.

    Attributes
    ----------
    size : int
        Number of vertices of the sub-template.
    active : int or None
        Index (in :attr:`Template.subtemplates`) of the part that keeps the root, or
        ``None`` for the single vertex.
    passive : int or None
        Index of the part rooted at the cut child, or ``None`` for the single vertex.
    shape : tuple
        Canonical form of the rooted tree: equal shapes have equal count tables.
    """

    size: int
    active: int | None
    passive: int | None
    shape: tuple


def _bfs_children(
    k: int, edges: list[tuple[int, int]], root: int = 0
) -> list[list[int]]:
    """Children lists (listed order) of a tree given by an ordered edge list."""
    adjacency: list[list[int]] = [[] for _ in range(k)]
    for u, v in edges:
        adjacency[u].append(v)
        adjacency[v].append(u)
    children: list[list[int]] = [[] for _ in range(k)]
    seen = [False] * k
    seen[root] = True
    order = [root]
    for vertex in order:
        for other in adjacency[vertex]:
            if not seen[other]:
                seen[other] = True
                children[vertex].append(other)
                order.append(other)
    if len(order) != k:
        raise TemplateError(
            f"the template's {len(edges)} edges do not connect its {k} vertices; "
            "a template must be a tree"
        )
    return children


def _renumber(children: list[list[int]], root: int) -> tuple[tuple[int, ...], ...]:
    """Renumber the subtree at ``root`` breadth-first; return its children lists."""
    order = [root]
    for vertex in order:
        order.extend(children[vertex])
    new_id = {old: new for new, old in enumerate(order)}
    return tuple(tuple(new_id[c] for c in children[old]) for old in order)


def _rooted_shape(children, vertex: int = 0) -> tuple:
    """Canonical form of a rooted tree (sorted tuple of the children's forms)."""
    return tuple(sorted(_rooted_shape(children, c) for c in children[vertex]))


def _rooted_automorphisms(children, vertex: int = 0) -> int:
    """Automorphisms of a rooted tree that fix the root, from canonical forms."""
    total = 1
    groups: dict[tuple, int] = {}
    for child in children[vertex]:
        total *= _rooted_automorphisms(children, child)
        shape = _rooted_shape(children, child)
        groups[shape] = groups.get(shape, 0) + 1
    for multiplicity in groups.values():
        total *= math.factorial(multiplicity)
    return total


class Template:
    """A tree template for color-coding subgraph counting.

    Parameters
    ----------
    edges : list of (int, int)
        The ``k - 1`` edges, in the order that drives the splitting rule.
    n_vertices : int
        The number of vertices ``k``; vertex 0 is the root.
    name : str, default="template"
        A label used in records.

    Attributes
    ----------
    k : int
        Number of vertices (and of colours).
    subtemplates : list of SubTemplate
        The split tree in computation order: every part comes after its two halves, the
        whole template last.

    Examples
    --------
    >>> t = Template.by_name("u5-2")
    >>> t.complexity()
    (25, 70)
    >>> t.automorphisms()
    2
    """

    def __init__(self, edges, n_vertices: int, name: str = "template"):
        if n_vertices < 1:
            raise TemplateError(f"a template needs at least 1 vertex, got {n_vertices}")
        edges = [(int(u), int(v)) for u, v in edges]
        if len(edges) != n_vertices - 1:
            raise TemplateError(
                f"a tree on {n_vertices} vertices has {n_vertices - 1} edges, "
                f"got {len(edges)}"
            )
        for u, v in edges:
            if not (0 <= u < n_vertices and 0 <= v < n_vertices) or u == v:
                raise TemplateError(
                    f"edge ({u}, {v}) is not between two distinct vertices of "
                    f"0..{n_vertices - 1}"
                )
        self.name = name
        self.k = n_vertices
        self.edges = edges
        self._children = _renumber(_bfs_children(n_vertices, edges), 0)
        self.subtemplates: list[SubTemplate] = []
        self._split(self._children)

    # construction ---------------------------------------------------------------
    @classmethod
    def from_file(cls, path, name: str | None = None) -> Template:
        """Read a template file: ``k``, then ``k - 1``, then one ``u v`` edge a line.

        Parameters
        ----------
        path : str or path-like
            The file.
        name : str, optional
            Label; the file name without extension by default.

        Returns
        -------
        Template
        """
        with open(path) as handle:
            tokens = handle.read().split()
        try:
            numbers = [int(t) for t in tokens]
        except ValueError as error:
            raise TemplateError(
                f"{path}: template files hold integers only ({error})"
            ) from None
        if len(numbers) < 2:
            raise TemplateError(
                f"{path}: expected 'k', 'k - 1' and edges, got {tokens}"
            )
        k, m = numbers[0], numbers[1]
        pairs = numbers[2:]
        if len(pairs) != 2 * m:
            raise TemplateError(
                f"{path}: the header announces {m} edges but {len(pairs) / 2:g} follow"
            )
        edges = list(zip(pairs[0::2], pairs[1::2], strict=True))
        label = name or os.path.splitext(os.path.basename(str(path)))[0]
        return cls(edges, k, name=label)

    @classmethod
    def by_name(cls, name: str) -> Template:
        """A shipped template (``u7-2``), a generated tree (``path-5``, ``star-6``,
        ``spider-3-2``, ``binary-7``), or a path to a template file.

        Parameters
        ----------
        name : str
            See :func:`template_names` for the shipped names.

        Returns
        -------
        Template
        """
        shipped = resources.files("scaleprobe.kernels.subgraph") / "templates"
        candidate = shipped / f"{name}.txt"
        if candidate.is_file():
            with resources.as_file(candidate) as path:
                return cls.from_file(path, name=name)
        generated = generated_tree_edges(name)
        if generated is not None:
            k, edges = generated
            return cls(edges, k, name=name)
        if os.path.isfile(name):
            return cls.from_file(name)
        raise TemplateError(
            f"unknown template {name!r}: use one of {', '.join(template_names())}, "
            "a generated tree (path-K, star-K, spider-LEGS-LENGTH, binary-K) "
            "or a file path"
        )

    # splitting --------------------------------------------------------------------
    def _split(self, children) -> int:
        """Append the split tree of ``children`` (post-order); return its index."""
        size = len(children)
        if size == 1:
            entry = SubTemplate(1, None, None, ())
        else:
            cut = children[0][0]
            passive_old = _subtree_vertices(children, cut)
            keep = [v for v in range(size) if v not in passive_old]
            active_children = [
                [c for c in children[v] if not (v == 0 and c == cut)]
                for v in range(size)
            ]
            active = _relabel(active_children, keep)
            passive = _renumber([list(c) for c in children], cut)
            active_index = self._split(active)
            passive_index = self._split(passive)
            entry = SubTemplate(
                size, active_index, passive_index, _rooted_shape(children)
            )
        self.subtemplates.append(entry)
        return len(self.subtemplates) - 1

    # properties -------------------------------------------------------------------
    def complexity(self) -> tuple[int, int]:
        """Memory and computation complexity (Table 3 of Chen et al. 2018).

        Sums over the sub-templates of at least 2 vertices other than the whole
        template: memory ``sum C(k, |T_i|)``, computation
        ``sum C(k, |T_i|) * C(|T_i|, |T_i'|)`` with ``T_i'`` the active part.

        Returns
        -------
        tuple of int
            ``(memory, computation)``.
        """
        memory = computation = 0
        for sub in self.subtemplates[:-1]:
            if sub.size >= 2:
                active_size = self.subtemplates[sub.active].size
                memory += math.comb(self.k, sub.size)
                computation += math.comb(self.k, sub.size) * math.comb(
                    sub.size, active_size
                )
        return memory, computation

    def automorphisms(self) -> int:
        """Number of automorphisms of the (unrooted) tree, from canonical forms.

        Returns
        -------
        int
        """
        adjacency: list[list[int]] = [[] for _ in range(self.k)]
        for u, v in self.edges:
            adjacency[u].append(v)
            adjacency[v].append(u)
        centers = _centers(adjacency)
        if len(centers) == 1:
            return _rooted_automorphisms(
                _bfs_children(self.k, self.edges, centers[0]), centers[0]
            )
        u, v = centers
        rest = [e for e in self.edges if set(e) != {u, v}]
        # Remove the central edge: two rooted halves, swapped if they are alike.
        children = _children_without_edge(self.k, rest, u, v)
        total = _rooted_automorphisms(children, u) * _rooted_automorphisms(children, v)
        if _rooted_shape(children, u) == _rooted_shape(children, v):
            total *= 2
        return total

    def __repr__(self) -> str:
        return f"Template({self.name!r}, k={self.k})"


def _subtree_vertices(children, root: int) -> set[int]:
    stack, found = [root], set()
    while stack:
        vertex = stack.pop()
        found.add(vertex)
        stack.extend(children[vertex])
    return found


def _relabel(children, keep: list[int]):
    """Children lists restricted to ``keep`` (holding the root 0), BFS-renumbered."""
    local = {old: new for new, old in enumerate(keep)}
    restricted = [[local[c] for c in children[old]] for old in keep]
    return _renumber(restricted, 0)


def _centers(adjacency) -> list[int]:
    """The one or two centers of a tree, by peeling leaves."""
    degree = [len(n) for n in adjacency]
    remaining = len(adjacency)
    leaves = [v for v, d in enumerate(degree) if d <= 1]
    while remaining > 2:
        remaining -= len(leaves)
        next_leaves = []
        for leaf in leaves:
            degree[leaf] = 0
            for other in adjacency[leaf]:
                if degree[other] > 0:
                    degree[other] -= 1
                    if degree[other] == 1:
                        next_leaves.append(other)
        leaves = next_leaves
    return sorted(leaves)


def _children_without_edge(k, edges, u, v):
    adjacency: list[list[int]] = [[] for _ in range(k)]
    for a, b in edges:
        adjacency[a].append(b)
        adjacency[b].append(a)
    children: list[list[int]] = [[] for _ in range(k)]
    seen = [False] * k
    for root in (u, v):
        seen[root] = True
        order = [root]
        for vertex in order:
            for other in adjacency[vertex]:
                if not seen[other]:
                    seen[other] = True
                    children[vertex].append(other)
                    order.append(other)
    return children


def template_names() -> list[str]:
    """Names of the templates shipped with the package.

    Returns
    -------
    list of str
    """
    shipped = resources.files("scaleprobe.kernels.subgraph") / "templates"
    return sorted(p.name[:-4] for p in shipped.iterdir() if p.name.endswith(".txt"))
