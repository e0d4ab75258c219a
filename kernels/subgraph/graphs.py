"""Input graphs: edge-list files and Erdős-Rényi, R-MAT and Kronecker generators.

Graphs are simple and undirected: self loops and repeated edges are dropped. A graph
given on the command line is either a path to an edge-list file (first line ``n``,
second line ``m``, then one ``u v`` edge a line, vertices ``0 .. n - 1``) or a generator
spec:

``er:N:M[:SEED]``
    Erdős-Rényi ``G(n, m)``: ``M`` distinct edges drawn uniformly.
``rmat:N:M[:SKEW[:SEED]]``
    R-MAT on ``N`` vertices (rounded up to a power of two, then vertices beyond ``N``
    dropped) with quadrant probabilities ``a = SKEW / (SKEW + 3)``,
    ``b = c = d = 1 / (SKEW + 3)``; ``SKEW = 1`` is uniform, larger is more skewed
    (the RMAT-k datasets of Chen et al. 2018 use k = 1, 3, 8).
``graph500:SCALE:EDGEFACTOR[:SEED]`` (or ``kronecker:...``)
    The Graph500 Kronecker graph of :mod:`scaleprobe.kernels.graph500.generator`
    (``A, B, C, D = 0.57, 0.19, 0.19, 0.05``; seed 1 by default): ``2**SCALE``
    vertices and ``EDGEFACTOR * 2**SCALE`` edge draws, loops and repeats dropped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = ["Graph", "GraphError", "erdos_renyi", "load_graph", "read_edge_list", "rmat"]


class GraphError(ValueError):
    """A graph file or generator spec that cannot be read."""


@dataclass
class Graph:
    """A simple undirected graph.

    Attributes
    ----------
    n_vertices : int
    edges : numpy.ndarray of shape (m, 2)
        Each undirected edge once, ``u < v``, sorted.
    name : str
    """

    n_vertices: int
    edges: np.ndarray
    name: str = "graph"

    @classmethod
    def from_edges(cls, n_vertices: int, pairs, name: str = "graph") -> Graph:
        """Build a graph from any ``(m, 2)`` pairs, dropping loops and duplicates.

        Parameters
        ----------
        n_vertices : int
        pairs : array-like of shape (m, 2)
        name : str, default="graph"

        Returns
        -------
        Graph
        """
        pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
        if pairs.size and (pairs.min() < 0 or pairs.max() >= n_vertices):
            raise GraphError(
                f"edge endpoints must lie in 0..{n_vertices - 1}, got "
                f"{pairs.min()}..{pairs.max()}"
            )
        low = np.minimum(pairs[:, 0], pairs[:, 1])
        high = np.maximum(pairs[:, 0], pairs[:, 1])
        keep = low != high
        codes = np.unique(low[keep] * n_vertices + high[keep])
        edges = np.stack([codes // n_vertices, codes % n_vertices], axis=1)
        return cls(int(n_vertices), edges, name)

    @property
    def n_edges(self) -> int:
        """Number of undirected edges."""
        return len(self.edges)

    def adjacency(self, dtype=np.float64) -> sp.csr_matrix:
        """Symmetric adjacency matrix with sorted column indices.

        Parameters
        ----------
        dtype : numpy dtype, default=numpy.float64

        Returns
        -------
        scipy.sparse.csr_matrix
        """
        u, v = self.edges[:, 0], self.edges[:, 1]
        rows = np.concatenate([u, v])
        cols = np.concatenate([v, u])
        data = np.ones(len(rows), dtype=dtype)
        matrix = sp.csr_matrix((data, (rows, cols)), shape=(self.n_vertices,) * 2)
        matrix.sort_indices()
        return matrix

    def degrees(self) -> np.ndarray:
        """Vertex degrees."""
        return np.bincount(self.edges.ravel(), minlength=self.n_vertices)


def read_edge_list(path) -> Graph:
    """Read an ``n``, ``m``, ``u v`` edge-list file.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    Graph
    """
    with open(path) as handle:
        text = handle.read()
    try:
        numbers = np.array(text.split(), dtype=np.int64)
    except ValueError as error:
        raise GraphError(
            f"{path}: an edge list holds integers only ({error})"
        ) from None
    if numbers.size < 2:
        raise GraphError(f"{path}: expected 'n', 'm' and m edges")
    n, m = int(numbers[0]), int(numbers[1])
    pairs = numbers[2:]
    if pairs.size != 2 * m:
        raise GraphError(
            f"{path}: the header announces {m} edges, {pairs.size / 2:g} follow"
        )
    name = os.path.splitext(os.path.basename(str(path)))[0]
    return Graph.from_edges(n, pairs.reshape(-1, 2), name=name)


def write_edge_list(graph: Graph, path) -> None:
    """Write a graph as an ``n``, ``m``, ``u v`` edge-list file."""
    with open(path, "w") as handle:
        handle.write(f"{graph.n_vertices}\n{graph.n_edges}\n")
        np.savetxt(handle, graph.edges, fmt="%d")


def erdos_renyi(n_vertices: int, n_edges: int, seed: int = 0) -> Graph:
    """Erdős-Rényi ``G(n, m)``: ``n_edges`` distinct edges drawn uniformly.

    Parameters
    ----------
    n_vertices, n_edges : int
    seed : int, default=0

    Returns
    -------
    Graph
    """
    possible = n_vertices * (n_vertices - 1) // 2
    if n_edges > possible:
        raise GraphError(
            f"{n_vertices} vertices admit at most {possible} edges, got {n_edges}"
        )
    rng = np.random.default_rng(seed)
    codes = np.empty(0, dtype=np.int64)
    while len(codes) < n_edges:
        draw = rng.integers(0, n_vertices, size=(2 * (n_edges - len(codes)) + 16, 2))
        low, high = draw.min(axis=1), draw.max(axis=1)
        fresh = (low * n_vertices + high)[low != high]
        codes = np.concatenate([codes, fresh])
        _, first = np.unique(codes, return_index=True)
        codes = codes[np.sort(first)]
    codes = codes[:n_edges]
    pairs = np.stack([codes // n_vertices, codes % n_vertices], axis=1)
    return Graph.from_edges(n_vertices, pairs, name=f"er-{n_vertices}-{n_edges}")


def rmat(
    n_vertices: int,
    n_edges: int,
    probabilities=(0.45, 0.15, 0.15),
    seed: int = 0,
    name: str | None = None,
) -> Graph:
    """R-MAT graph from ``n_edges`` recursive quadrant draws (duplicates dropped).

    Parameters
    ----------
    n_vertices, n_edges : int
    probabilities : tuple of float, default=(0.45, 0.15, 0.15)
        Quadrant probabilities ``a, b, c`` (``d = 1 - a - b - c``).
    seed : int, default=0
    name : str, optional

    Returns
    -------
    Graph
    """
    a, b, c = probabilities
    if min(a, b, c) < 0 or a + b + c > 1:
        raise GraphError(
            "R-MAT probabilities a, b, c must be >= 0 with sum <= 1, "
            f"got {probabilities}"
        )
    scale = max(1, int(np.ceil(np.log2(max(n_vertices, 2)))))
    rng = np.random.default_rng(seed)
    rows = np.zeros(n_edges, dtype=np.int64)
    cols = np.zeros(n_edges, dtype=np.int64)
    for _ in range(scale):
        draw = rng.random(n_edges)
        right = (draw >= a) & (draw < a + b) | (draw >= a + b + c)
        down = draw >= a + b
        rows = 2 * rows + down
        cols = 2 * cols + right
    # A random relabelling hides the bit structure, as Graph500 does.
    perm = rng.permutation(2**scale)
    rows, cols = perm[rows], perm[cols]
    keep = (rows < n_vertices) & (cols < n_vertices)
    pairs = np.stack([rows[keep], cols[keep]], axis=1)
    return Graph.from_edges(
        n_vertices, pairs, name=name or f"rmat-{n_vertices}-{n_edges}"
    )


_GENERATORS = {
    # kind: the types of its fields (two required) and the defaults of the others
    "er": ((int, int, int), (0,)),
    "rmat": ((int, int, float, int), (3.0, 0)),
    "kronecker": ((int, int, int), (1,)),
    "graph500": ((int, int, int), (1,)),
}
_REQUIRED_FIELDS = 2


def _generator(spec: str) -> tuple[str, list]:
    """Kind and numbers of a generator spec (defaults filled in), or GraphError if it
    is not one."""
    kind, _, rest = spec.partition(":")
    fields = rest.split(":") if rest else []
    types, defaults = _GENERATORS.get(kind, ((), ()))
    if not types or not _REQUIRED_FIELDS <= len(fields) <= len(types):
        raise GraphError(
            f"graph {spec!r} is neither a file nor a generator spec; use a path, "
            "'er:N:M[:SEED]', 'rmat:N:M[:SKEW[:SEED]]' or "
            "'graph500:SCALE:EDGEFACTOR[:SEED]'"
        )
    try:
        numbers = [kind_of(text) for kind_of, text in zip(types, fields, strict=False)]
    except ValueError as error:
        raise GraphError(f"cannot read graph spec {spec!r}: {error}") from None
    return kind, numbers + list(defaults[len(numbers) - _REQUIRED_FIELDS :])


def check_graph(spec: str) -> str:
    """Why ``spec`` names no graph (``""`` if it names one), without making it.

    Parameters
    ----------
    spec : str
        A file path or a generator spec (see :func:`load_graph`).

    Returns
    -------
    str

    Examples
    --------
    >>> check_graph("er:100:300"), check_graph("er:100:lots")[:26]
    ('', "cannot read graph spec 'er")
    """
    if os.path.isfile(spec):
        return ""
    try:
        _generator(spec)
    except GraphError as error:
        return str(error)
    return ""


def load_graph(spec: str) -> Graph:
    """A graph from a file path or a generator spec (see the module docstring).

    Parameters
    ----------
    spec : str

    Returns
    -------
    Graph
    """
    if os.path.isfile(spec):
        return read_edge_list(spec)
    kind, numbers = _generator(spec)
    try:
        if kind == "er":
            graph = erdos_renyi(*numbers)
            graph.name = spec
            return graph
        if kind == "rmat":
            n, m, skew, seed = numbers
            other = 1.0 / (skew + 3.0)
            return rmat(n, m, (skew * other, other, other), seed, name=spec)
        from scaleprobe.kernels.graph500.generator import kronecker_edges

        scale, factor, seed = numbers
        source, target = kronecker_edges(scale, factor, seed=seed)
        pairs = np.stack([source, target], axis=1)
        return Graph.from_edges(2**scale, pairs, name=spec)
    except ValueError as error:
        raise GraphError(f"cannot read graph spec {spec!r}: {error}") from None
