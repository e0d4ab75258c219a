r"""Analytic memory and communication-volume formulas for Graph500 BFS.

The 1D formulas are those of Suzumura et al. 2011 (Section II.B and III.A-B); the 2D
volume follows the edge-partitioned analysis behind the O(sqrt(p)) communication
term of Medya et al. 2017 (Section IV.A). All functions return bytes as floats and
never import mpi4py.

Communication volume of one BFS (:func:`graph500_comm_volume`), with
:math:`V = 2^{\mathrm{scale}}` vertices, :math:`M = \mathrm{edgefactor}\cdot V`
edges, :math:`n` ranks, :math:`D` bytes per identifier and :math:`d` levels:

``simple`` (Suzumura et al. 2011, Algorithm II): every edge is traversed in both
directions, a fraction :math:`(n-1)/n` of its endpoints live on another rank, and
each traversal sends a (vertex, parent) pair of two identifiers:

.. math:: C(n, M) = 2M \cdot \frac{n-1}{n} \cdot 2 \cdot D

``replicated-csr`` and ``replicated-csc`` (Algorithms III and IV): at each of the
:math:`d` levels every rank allgathers its :math:`V/n`-bit slice of the frontier
bitmap to the :math:`n-1` others, independent of the identifiers' size:

.. math::

    C(d, n, V) = \frac{V}{8n} \cdot (n-1) \cdot n \cdot d = \frac{V (n-1) d}{8}

``2d`` (edge partition on an :math:`R \times C` grid, :func:`graph500_grid`):
expand sends each vertex, once it enters the frontier, to the :math:`R-1` other
ranks of its processor column; fold sends the (vertex, parent) pairs discovered
along a processor row, of which a fraction :math:`(C-1)/C` leave the rank:

.. math:: C_{2D} = V (R-1) D + 2M \cdot \frac{C-1}{C} \cdot 2 \cdot D

Each rank talks to :math:`R-1 + C-1 = O(\sqrt{p})` partners per level instead of
:math:`p-1`, the O(sqrt(p)) message count behind the :math:`1/\sqrt{n}` term of
Medya et al. 2017 Eq. 1-2. Like the 1D formulas, both terms are upper bounds for a
top-down traversal that reaches every vertex and sends every discovered edge
without de-duplication.

Examples
--------
>>> round(graph500_comm_volume("simple", 32, 128) / 2**30)
2032
>>> round(graph500_comm_volume("replicated-csr", 32, 128, levels=12) / 2**30)
762
>>> graph500_memory(32) / 2**40
1.03125
"""

from __future__ import annotations

import math
from numbers import Integral, Real

__all__ = [
    "GRAPH500_VARIANTS",
    "graph500_comm_volume",
    "graph500_grid",
    "graph500_memory",
]

#: BFS variants :func:`graph500_comm_volume` knows.
GRAPH500_VARIANTS = ("simple", "replicated-csr", "replicated-csc", "2d")


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _positive_real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def graph500_memory(scale, edgefactor=16, bytes_per_entry=8):
    r"""Memory of a Graph500 graph held in CSR, in bytes.

    A CSR of an undirected graph stores each of the :math:`E` edges twice (both
    directions) plus one row offset per vertex, so with :math:`V = 2^{\mathrm{scale}}`
    and :math:`E = \mathrm{edgefactor} \cdot V`

    .. math::

        M(\mathrm{scale}) = (2E + V) \cdot b
                          = 2^{\mathrm{scale}} (2 \cdot \mathrm{edgefactor} + 1)\, b

    where :math:`b` is ``bytes_per_entry`` (Suzumura et al., Section II.B).

    Parameters
    ----------
    scale : int
        Base-2 logarithm of the number of vertices (Graph500 SCALE).
    edgefactor : int, default=16
        Edges per vertex.
    bytes_per_entry : float, default=8
        Bytes per stored vertex identifier or offset.

    Returns
    -------
    float
        Bytes needed for the whole graph (summed over all ranks).

    Raises
    ------
    ValueError
        If an argument is not positive.

    Examples
    --------
    >>> graph500_memory(32) / 2**40   # the paper's "1.03125 TB"
    1.03125
    >>> graph500_memory(26) / 2**30   # toy class, 17 GB ("17.71 GB" in CSC)
    16.5
    """
    scale = _positive_int("scale", scale)
    edgefactor = _positive_int("edgefactor", edgefactor)
    bytes_per_entry = _positive_real("bytes_per_entry", bytes_per_entry)
    return float(2**scale * (2 * edgefactor + 1) * bytes_per_entry)


def graph500_grid(ranks):
    """The most square R x C processor grid for ``ranks`` processes.

    R is the largest divisor of ``ranks`` not above its square root, C = ranks / R, so
    a perfect square gives R = C = sqrt(ranks) and 2 p**2 ranks give R = p, C = 2 p,
    the grids the ``square`` and ``two_p_squared`` admissible rules allow.

    Parameters
    ----------
    ranks : int
        Number of MPI processes.

    Returns
    -------
    tuple of int
        ``(rows, columns)`` with ``rows * columns == ranks`` and ``rows <= columns``.

    Examples
    --------
    >>> graph500_grid(16), graph500_grid(18), graph500_grid(7)
    ((4, 4), (3, 6), (1, 7))
    """
    ranks = _positive_int("ranks", ranks)
    rows = math.isqrt(ranks)
    while ranks % rows:
        rows -= 1
    return rows, ranks // rows


def graph500_comm_volume(variant, scale, ranks, edgefactor=16, levels=None, id_bytes=8):
    """Total bytes one Graph500 BFS sends between ranks, summed over all ranks.

    The formula of each variant is in :mod:`the module's description
    <scaleprobe.models.analytic.graph500>`.

    Parameters
    ----------
    variant : {"simple", "replicated-csr", "replicated-csc", "2d"}
        BFS algorithm.
    scale : int
        Base-2 logarithm of the number of vertices.
    ranks : int
        Number of MPI processes :math:`n`.
    edgefactor : int, default=16
        Edges per vertex.
    levels : int, optional
        BFS depth :math:`d` (levels from the root to the furthest vertex); required by
        the replicated variants, ignored by the others.
    id_bytes : int, default=8
        Bytes per vertex identifier (8 for the 64-bit identifiers of the reference).

    Returns
    -------
    float
        Bytes sent by all ranks together during one BFS.

    Raises
    ------
    ValueError
        For an unknown variant, a non-positive argument, or missing ``levels`` for a
        replicated variant.

    See Also
    --------
    graph500_memory : the size of the graph itself.

    Examples
    --------
    >>> graph500_comm_volume("simple", 32, 128) / 2**30
    2032.0
    >>> graph500_comm_volume("replicated-csc", 32, 128, levels=12) / 2**30
    762.0
    >>> graph500_comm_volume("2d", 20, 16) / graph500_comm_volume("simple", 20, 16)
    0.85
    """
    if variant not in GRAPH500_VARIANTS:
        raise ValueError(
            f"variant must be one of {', '.join(GRAPH500_VARIANTS)}, got {variant!r}"
        )
    scale = _positive_int("scale", scale)
    ranks = _positive_int("ranks", ranks)
    edgefactor = _positive_int("edgefactor", edgefactor)
    id_bytes = _positive_int("id_bytes", id_bytes)
    vertices = 2**scale
    edges = edgefactor * vertices
    if variant == "simple":
        return float(2 * edges * (ranks - 1) / ranks * 2 * id_bytes)
    if variant.startswith("replicated"):
        if levels is None:
            raise ValueError(
                f"levels is required for variant {variant!r} (the BFS depth d of the "
                "frontier allgather), got None"
            )
        levels = _positive_int("levels", levels)
        return float(vertices / (8 * ranks) * (ranks - 1) * ranks * levels)
    rows, columns = graph500_grid(ranks)
    expand = vertices * (rows - 1) * id_bytes
    fold = 2 * edges * (columns - 1) / columns * 2 * id_bytes
    return float(expand + fold)
