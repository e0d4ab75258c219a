"""The 3D process grid, block decomposition and halo pattern of the stencil kernels.

Ranks form a ``(px, py, pz)`` grid (:func:`process_grid`, row-major), the global
domain ``(Nx, Ny, Nz)`` is split into near-equal blocks (:func:`block`), and the
communication pattern of one halo exchange (:func:`halo_pattern`) follows from the
two, ahead of execution. This module imports only numpy.
"""

from __future__ import annotations

import numpy as np
from scaleprobe.kernels.comm.pattern import CommPattern

__all__ = [
    "DIRECTIONS",
    "block",
    "coordinates",
    "halo_pattern",
    "initial_field",
    "jacobi_reference",
    "neighbour",
    "process_grid",
]

DIRECTIONS = ((-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1))


def process_grid(ranks):
    """Most balanced ``(px, py, pz)`` with ``px * py * pz == ranks``, px >= py >= pz.

    Examples
    --------
    >>> process_grid(8), process_grid(12), process_grid(7)
    ((2, 2, 2), (3, 2, 2), (7, 1, 1))
    """
    if int(ranks) < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks!r}")
    best = None
    for px in range(1, ranks + 1):
        if ranks % px:
            continue
        for py in range(1, ranks // px + 1):
            if (ranks // px) % py:
                continue
            dims = tuple(sorted((px, py, ranks // px // py), reverse=True))
            if best is None or (max(dims) - min(dims), dims) < (
                max(best) - min(best),
                best,
            ):
                best = dims
    return best


def coordinates(rank, dims):
    """Grid coordinates of a rank (row-major: the last dimension varies fastest)."""
    return tuple(int(c) for c in np.unravel_index(rank, dims))


def neighbour(rank, dims, direction):
    """Rank next to ``rank`` in ``direction``, or None at the domain boundary."""
    coords = [c + d for c, d in zip(coordinates(rank, dims), direction, strict=True)]
    if any(not 0 <= c < n for c, n in zip(coords, dims, strict=True)):
        return None
    return int(np.ravel_multi_index(coords, dims))


def block(rank, dims, shape):
    """``(start, stop)`` of the rank's block along each axis of the global domain."""
    spans = []
    for coord, parts, size in zip(coordinates(rank, dims), dims, shape, strict=True):
        edges = np.linspace(0, size, parts + 1).astype(int)
        spans.append((int(edges[coord]), int(edges[coord + 1])))
    return spans


def halo_pattern(shape, ranks, itemsize=8, *, downstream=False):
    """:class:`CommPattern` of one halo exchange of a 3D domain over ``ranks``.

    With ``downstream=True`` a rank sends only to its neighbours in the +x, +y and
    +z directions: the pattern of one step of a wavefront (``stencil.advection3d``).

    Examples
    --------
    Eight 4x4x4 blocks: each rank sends one 4x4 face of doubles to 3 neighbours.

    >>> m = halo_pattern((8, 8, 8), 8).metrics(ppn=1)
    >>> m["M"], m["S"]
    (3.0, 128.0)
    >>> halo_pattern((8, 8, 8), 8, downstream=True).metrics(ppn=1)["M"]
    1.5
    """
    dims = process_grid(ranks)
    sizes = np.zeros((ranks, ranks))
    for rank in range(ranks):
        extent = [stop - start for start, stop in block(rank, dims, shape)]
        for direction in DIRECTIONS:
            if downstream and min(direction) < 0:
                continue
            peer = neighbour(rank, dims, direction)
            if peer is not None:
                axis = next(i for i, d in enumerate(direction) if d)
                sizes[rank, peer] = itemsize * np.prod(extent) / extent[axis]
    return CommPattern(sizes)


def initial_field(spans):
    """A deterministic initial value on the global points of a block."""
    axes = [np.arange(start, stop) for start, stop in spans]
    x, y, z = np.meshgrid(*axes, indexing="ij")
    return ((7 * x + 13 * y + 31 * z) % 101) / 101.0


def jacobi_reference(shape, iterations):
    """Serial 3D Jacobi (6-point average, zero outside the domain): the reference."""
    field = initial_field([(0, n) for n in shape])
    for _ in range(iterations):
        padded = np.pad(field, 1)
        field = (
            padded[:-2, 1:-1, 1:-1]
            + padded[2:, 1:-1, 1:-1]
            + padded[1:-1, :-2, 1:-1]
            + padded[1:-1, 2:, 1:-1]
            + padded[1:-1, 1:-1, :-2]
            + padded[1:-1, 1:-1, 2:]
        ) / 6.0
    return field
