"""Single-process color coding (Algorithm 1 of Chen et al. 2018), vectorized.

Each iteration colours every vertex uniformly with ``k`` colours, counts the colourful
maps of the template with the dynamic programme of :mod:`._dp`, and scales by the
inverse colourful probability ``k**k / k!`` and by ``1 / |Aut(T)|``: the expectation is
the number of non-induced embeddings (subgraphs of the graph isomorphic to the
template).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scaleprobe.kernels.subgraph._dp import colorful_total

__all__ = [
    "CountResult",
    "colorful_count",
    "coloring",
    "count_subgraphs",
    "estimate_scale",
    "iterations_for",
    "median_of_means",
]


def coloring(seed: int, iteration: int, n_vertices: int, k: int) -> np.ndarray:
    """The colouring of one iteration: the same on every process and in every mode.

    Parameters
    ----------
    seed, iteration, n_vertices, k : int

    Returns
    -------
    numpy.ndarray of int64, shape (n_vertices,)
    """
    rng = np.random.default_rng([int(seed), int(iteration)])
    return rng.integers(0, k, size=n_vertices, dtype=np.int64)


def estimate_scale(template) -> float:
    """``k**k / (k! * |Aut(T)|)``: colourful maps to expected embeddings."""
    k = template.k
    return k**k / (math.factorial(k) * template.automorphisms())


def iterations_for(k: int, epsilon: float, delta: float) -> int:
    """Iterations for an (epsilon, delta) approximation: ``e**k log(1/delta) / eps**2``.

    Parameters
    ----------
    k : int
        Template size.
    epsilon, delta : float
        Relative error and failure probability, both in (0, 1).

    Returns
    -------
    int

    Examples
    --------
    >>> iterations_for(3, 0.5, 0.1)
    185
    """
    if not (0 < epsilon < 1 and 0 < delta < 1):
        raise ValueError(
            f"epsilon and delta must lie in (0, 1), got {epsilon}, {delta}"
        )
    return math.ceil(math.exp(k) * math.log(1 / delta) / epsilon**2)


def median_of_means(values, groups: int) -> float:
    """Median of the means of ``groups`` equal consecutive groups of ``values``.

    Parameters
    ----------
    values : array-like
    groups : int
        Clipped to ``1 .. len(values)``; left-over values join the last group.

    Returns
    -------
    float
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        raise ValueError("median_of_means needs at least one value")
    groups = int(min(max(groups, 1), values.size))
    edges = np.linspace(0, values.size, groups + 1).astype(int)
    means = [values[lo:hi].mean() for lo, hi in itertools.pairwise(edges)]
    return float(np.median(means))


def colorful_count(adjacency: sp.csr_matrix, template, colors, dtype=np.float64):
    """Number of colourful maps of a template for one or several colourings.

    Parameters
    ----------
    adjacency : scipy.sparse.csr_matrix of shape (n, n)
        Symmetric 0/1 adjacency.
    template : Template
    colors : numpy.ndarray of int, shape (n,) or (batch, n)
        Several colourings are counted at once on a block-diagonal copy of the graph.
    dtype : numpy dtype, default=numpy.float64
        Count tables; float64 keeps counts below 2**53 exact.

    Returns
    -------
    float or numpy.ndarray of float
    """
    colors = np.asarray(colors)
    matrix = sp.csr_matrix(adjacency, dtype=dtype)
    if colors.ndim == 1:
        return colorful_total(template, colors, _neighbour_sum(matrix), dtype)
    batch = colors.shape[0]
    block = sp.kron(sp.identity(batch, dtype=dtype, format="csr"), matrix, format="csr")
    return colorful_total(
        template, colors.reshape(-1), _neighbour_sum(block), dtype, segments=batch
    )


def _neighbour_sum(matrix: sp.csr_matrix):
    def neighbour_sum(_index: int, table: np.ndarray) -> np.ndarray:
        return spmm_rows(matrix, table)

    return neighbour_sum


# Rows of a table multiplied together; few enough that the dense operand of the
# sparse product stays in cache while the adjacency is streamed.
_SPMM_ROWS = 16


def spmm_rows(matrix: sp.csr_matrix, table: np.ndarray) -> np.ndarray:
    """``(matrix @ table.T).T`` for a row-major ``(rows, n)`` table, in row chunks."""
    rows = table.shape[0]
    out = np.empty((rows, matrix.shape[0]), dtype=table.dtype)
    for lo in range(0, rows, _SPMM_ROWS):
        hi = min(rows, lo + _SPMM_ROWS)
        out[lo:hi] = (matrix @ np.ascontiguousarray(table[lo:hi].T)).T
    return out


@dataclass
class CountResult:
    """Outcome of :func:`count_subgraphs`.

    Attributes
    ----------
    estimate : float
        Median of means of the per-iteration estimates.
    estimates : numpy.ndarray
        One unbiased estimate of the embedding count per iteration.
    """

    estimate: float
    estimates: np.ndarray


def count_subgraphs(
    graph,
    template,
    iterations: int = 10,
    seed: int = 0,
    groups: int = 3,
    dtype=np.float64,
    batch: int = 1,
) -> CountResult:
    """Estimate the number of non-induced embeddings of a tree template.

    Parameters
    ----------
    graph : Graph
    template : Template
    iterations : int, default=10
    seed : int, default=0
        Colourings depend on ``(seed, iteration)`` only.
    groups : int, default=3
        Groups of the median-of-means estimate.
    dtype : numpy dtype, default=numpy.float64
    batch : int, default=1
        Colourings counted together on a block-diagonal copy (faster on small graphs).

    Returns
    -------
    CountResult

    Examples
    --------
    >>> from scaleprobe.kernels.subgraph import Graph, Template
    >>> triangle = Graph.from_edges(3, [(0, 1), (1, 2), (0, 2)])
    >>> result = count_subgraphs(triangle, Template.by_name("path-3"), iterations=200)
    >>> result.estimate > 0
    True
    """
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    adjacency = graph.adjacency(dtype)
    scale = estimate_scale(template)
    estimates = np.empty(iterations)
    for start in range(0, iterations, batch):
        stop = min(iterations, start + batch)
        colors = np.stack(
            [
                coloring(seed, it, graph.n_vertices, template.k)
                for it in range(start, stop)
            ]
        )
        if stop - start == 1:
            estimates[start] = (
                colorful_count(adjacency, template, colors[0], dtype) * scale
            )
        else:
            estimates[start:stop] = (
                colorful_count(adjacency, template, colors, dtype) * scale
            )
    return CountResult(median_of_means(estimates, groups), estimates)
