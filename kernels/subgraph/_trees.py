"""Generated tree templates by name: paths, stars, spiders and complete binary trees."""

from __future__ import annotations

import re

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
