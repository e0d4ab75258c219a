"""Exact counts by enumeration, the independent reference for small graphs.

Every injective map of the template's vertices into the graph's that sends edges to
edges is enumerated (vectorized, vertex by vertex in breadth-first order from the root).
Each embedding is hit by exactly ``|Aut(T)|`` maps.
"""

from __future__ import annotations

import numpy as np

__all__ = ["exact_count", "exact_maps"]


def _parents(template) -> list[int]:
    parents = [-1] * template.k
    for vertex, children in enumerate(template._children):
        for child in children:
            parents[child] = vertex
    return parents


def exact_maps(graph, template, colors=None, chunk: int = 256) -> int:
    """Number of injective edge-preserving maps of ``template`` into ``graph``.

    Parameters
    ----------
    graph : Graph
    template : Template
    colors : numpy.ndarray of int, optional
        If given, count only colourful maps (all images of distinct colours).
    chunk : int, default=256
        Root vertices expanded together (bounds memory).

    Returns
    -------
    int
    """
    adjacency = graph.adjacency()
    indptr, indices = adjacency.indptr, adjacency.indices
    degrees = np.diff(indptr)
    parents = _parents(template)
    total = 0
    for lo in range(0, graph.n_vertices, chunk):
        maps = np.arange(lo, min(graph.n_vertices, lo + chunk), dtype=np.int64)[:, None]
        for vertex in range(1, template.k):
            anchors = maps[:, parents[vertex]]
            counts = degrees[anchors]
            rows = np.repeat(np.arange(len(maps)), counts)
            starts = np.repeat(indptr[anchors] - np.cumsum(counts) + counts, counts)
            images = indices[starts + np.arange(len(rows))]
            maps = np.concatenate([maps[rows], images[:, None]], axis=1)
            fresh = np.all(maps[:, :-1] != maps[:, -1:], axis=1)
            if colors is not None:
                used = colors[maps]
                fresh &= np.all(used[:, :-1] != used[:, -1:], axis=1)
            maps = maps[fresh]
            if len(maps) == 0:
                break
        total += len(maps)
    return int(total)


def exact_count(graph, template) -> int:
    """Number of non-induced embeddings of ``template`` in ``graph``, exactly.

    Parameters
    ----------
    graph : Graph
    template : Template

    Returns
    -------
    int

    Examples
    --------
    >>> from scaleprobe.kernels.subgraph import Graph, Template
    >>> k4 = Graph.from_edges(4, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)])
    >>> exact_count(k4, Template.by_name("path-3"))  # 4 * 3 * 2 / 2
    12
    """
    maps = exact_maps(graph, template)
    automorphisms = template.automorphisms()
    if maps % automorphisms:
        raise ArithmeticError(
            f"{maps} maps is not a multiple of |Aut| = {automorphisms}; the template's "
            "symmetry count is wrong"
        )
    return maps // automorphisms
