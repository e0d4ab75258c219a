"""Vertex ownership (1D blocks) and the 2D rank grid shared by all BFS variants."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_ALIGN = 64  # blocks are whole 64-bit words of a bitmap, so packed bitmaps concatenate


@dataclass(frozen=True)
class VertexPartition:
    """Contiguous blocks of vertices, one per rank, each a multiple of 64 vertices.

    Rank ``r`` owns ``[r * block, min((r + 1) * block, nvertices))``; the last ranks
    may own fewer (or no) vertices. Every variant, the validation and the root
    selection use this ownership, so parent arrays are comparable across variants.

    Examples
    --------
    >>> part = VertexPartition.create(1000, 3)
    >>> part.block, part.bounds(2)
    (384, (768, 1000))
    """

    nvertices: int
    size: int
    block: int

    @classmethod
    def create(cls, nvertices: int, size: int) -> VertexPartition:
        """Partition ``nvertices`` over ``size`` ranks."""
        per_rank = -(-nvertices // size)
        block = max(_ALIGN, -(-per_rank // _ALIGN) * _ALIGN)
        return cls(int(nvertices), int(size), int(block))

    def bounds(self, rank: int) -> tuple[int, int]:
        """The owned range ``[lo, hi)`` of ``rank``."""
        lo = min(rank * self.block, self.nvertices)
        return lo, min(lo + self.block, self.nvertices)

    def owner(self, vertices: np.ndarray) -> np.ndarray:
        """The owning rank of each vertex."""
        return vertices // self.block

    def counts(self) -> np.ndarray:
        """Number of vertices owned by each rank."""
        return np.array([hi - lo for lo, hi in map(self.bounds, range(self.size))])


def grid_shape(size: int) -> tuple[int, int]:
    """The R x C processor grid of the 2D algorithm for ``size`` ranks.

    ``square`` rank counts (``q**2``) give ``q x q``; ``two_p_squared`` counts
    (``2 q**2``, the IBM code's rule) give ``2q x q`` (R = 2C). Any other count gets the
    most nearly square factorization with R >= C (a prime count degenerates to a
    column of ranks, which is still correct).

    Examples
    --------
    >>> grid_shape(16), grid_shape(8), grid_shape(18), grid_shape(6)
    ((4, 4), (4, 2), (6, 3), (3, 2))
    """
    if size < 1:
        raise ValueError(f"the rank count must be positive, got {size}")
    root = math.isqrt(size)
    if root * root == size:
        return root, root
    half = size // 2
    root = math.isqrt(half)
    if size % 2 == 0 and root * root == half:
        return 2 * root, root
    cols = max(c for c in range(1, math.isqrt(size) + 1) if size % c == 0)
    return size // cols, cols
