"""NPB LU's Jacobians and its two triangular sweeps, vectorised over hyperplanes.

LU's SSOR step solves ``(D + omega L) D^-1 (D + omega U) du = dt rsd`` at the
interior points: ``L`` couples a point to its neighbours at ``k-1``, ``j-1``, ``i-1``
(NPB's ``jacld`` blocks ``a``, ``b``, ``c``), ``U`` to those at ``k+1``, ``j+1``,
``i+1`` (``jacu``), ``D`` is the point's own block. The lower sweep (NPB's
``blts``) gives a point its final value once its three lower neighbours have
theirs; the upper sweep (``buts``) likewise from above. All points of a hyperplane
``k + j + i = s`` are independent of each other, so a sweep is a loop over ``s``,
each step a batched 5 x 5 product and solve over the hyperplane's points: the same
values as NPB's loop over the points in order.

The neighbour blocks are BT's: ``-dt t2 F - dt t1 (N + d I)`` below and ``+dt t2 F
- dt t1 (N + d I)`` above, with ``F`` and ``N`` the flux and viscous Jacobians of
the neighbour's field (:func:`scaleprobe.kernels.npb.bt.jacobians`) and ``d`` the
axis's second-order dissipation; ``D = I + 2 dt sum over axes of t1 (N + d I)`` of
the point's own field.
"""

from __future__ import annotations

import itertools

import numpy as np
from scaleprobe.kernels.npb._adi import Constants
from scaleprobe.kernels.npb.bt import jacobians

__all__ = ["Box", "diagonal_block", "lower_sweep", "neighbour_block", "upper_sweep"]

_EYE = np.eye(5)


def neighbour_block(u: np.ndarray, axis: int, constants: Constants, sign: float):
    """The coupling block to a neighbour along ``axis`` from the neighbour's field.

    Parameters
    ----------
    u : numpy.ndarray
        The neighbours' fields, ``[..., 5]``.
    axis : int
        0 (z), 1 (y) or 2 (x).
    constants : Constants
    sign : float
        -1.0 for the neighbour below (``jacld``), +1.0 above (``jacu``).

    Returns
    -------
    numpy.ndarray
        ``[..., 5, 5]``.

    Examples
    --------
    >>> c = Constants(12, 0.5)
    >>> block = neighbour_block(np.array([1.0, 0.0, 0.0, 0.0, 2.5]), 0, c, -1.0)
    >>> round(float(block[0, 0]), 6), round(float(block[0, 3]), 6)
    (-60.5, -2.75)
    """
    c = constants
    flux, viscous = jacobians(u, 3 - axis)
    damping = c.dt * c.t1 * (viscous + c.dissipation[axis] * _EYE)
    return sign * c.dt * c.t2 * flux - damping


def diagonal_block(u: np.ndarray, constants: Constants) -> np.ndarray:
    """A point's own block ``D`` (NPB's ``d`` of ``jacld`` and ``jacu``).

    Parameters
    ----------
    u : numpy.ndarray
        ``[..., 5]``.
    constants : Constants

    Returns
    -------
    numpy.ndarray
        ``[..., 5, 5]``.

    Examples
    --------
    >>> c = Constants(12, 0.5)
    >>> d = diagonal_block(np.array([1.0, 0.0, 0.0, 0.0, 2.5]), c)
    >>> round(float(d[0, 0]), 6)
    303.5
    """
    c = constants
    block = np.broadcast_to(_EYE, (*u.shape[:-1], 5, 5)).copy()
    for axis in range(3):
        _, viscous = jacobians(u, 3 - axis)
        block += 2.0 * c.dt * c.t1 * (viscous + c.dissipation[axis] * _EYE)
    return block


class Box:
    """The interior points of planes ``[k0, k1)`` and rows ``[j0, j1)`` of an
    extended block, in hyperplane order.

    The block is ``[k, j, i, 5]`` with one plane beyond each end along ``k`` (the
    neighbours' planes or the grid's faces); ``i`` runs over ``1 .. n-2``.

    Parameters
    ----------
    n : int
        Grid points a side.
    k0, k1, j0, j1 : int
        Planes and rows of the extended block.

    Examples
    --------
    >>> box = Box(5, 1, 4, 1, 4)
    >>> len(box.planes), int(box.k.size)
    (7, 27)
    """

    def __init__(self, n, k0, k1, j0, j1):
        k, j, i = np.meshgrid(
            np.arange(k0, k1), np.arange(j0, j1), np.arange(1, n - 1), indexing="ij"
        )
        k, j, i = k.ravel(), j.ravel(), i.ravel()
        order = np.argsort(k + j + i, kind="stable")
        self.k, self.j, self.i = k[order], j[order], i[order]
        level = (self.k + self.j + self.i).tolist()
        edges = [0] + [p for p in range(1, len(level)) if level[p] != level[p - 1]]
        edges.append(len(level))
        self.planes = [slice(a, b) for a, b in itertools.pairwise(edges)]

    def blocks(self, u: np.ndarray, constants: Constants, sign: float):
        """``D^-1`` and the three neighbour blocks of the box's points.

        Parameters
        ----------
        u : numpy.ndarray
            The extended block's field.
        constants : Constants
        sign : float
            -1.0: the neighbours below; +1.0: above.

        Returns
        -------
        tuple of numpy.ndarray
            ``(D^-1, Z, Y, X)``, each ``[points, 5, 5]``.
        """
        k, j, i = self.k, self.j, self.i
        step = int(sign)
        inverse = np.linalg.inv(diagonal_block(u[k, j, i], constants))
        return (
            inverse,
            neighbour_block(u[k + step, j, i], 0, constants, sign),
            neighbour_block(u[k, j + step, i], 1, constants, sign),
            neighbour_block(u[k, j, i + step], 2, constants, sign),
        )


def _times(blocks, vectors):
    """Batched block times vector."""
    return np.einsum("pab,pb->pa", blocks, vectors)


def lower_sweep(box: Box, u, v, constants: Constants, omega: float) -> None:
    """NPB's ``blts`` over a box: ``v = D^-1 (v - omega L v)`` point by point.

    Parameters
    ----------
    box : Box
    u : numpy.ndarray
        The extended block's field.
    v : numpy.ndarray
        The extended block's right-hand side, replaced in the box; the plane below
        and the rows below the box must hold their final values.
    constants : Constants
    omega : float
    """
    if box.k.size == 0:
        return
    inverse, z, y, x = box.blocks(u, constants, -1.0)
    for p in box.planes:
        k, j, i = box.k[p], box.j[p], box.i[p]
        coupled = (
            _times(z[p], v[k - 1, j, i])
            + _times(y[p], v[k, j - 1, i])
            + _times(x[p], v[k, j, i - 1])
        )
        v[k, j, i] = _times(inverse[p], v[k, j, i] - omega * coupled)


def upper_sweep(box: Box, u, v, constants: Constants, omega: float) -> None:
    """NPB's ``buts`` over a box: ``v -= D^-1 omega U v`` point by point, from
    the top.

    Parameters
    ----------
    box : Box
    u : numpy.ndarray
        The extended block's field.
    v : numpy.ndarray
        The lower sweep's result, replaced in the box; the plane above and the rows
        above the box must hold their final values.
    constants : Constants
    omega : float
    """
    if box.k.size == 0:
        return
    inverse, z, y, x = box.blocks(u, constants, 1.0)
    for p in reversed(box.planes):
        k, j, i = box.k[p], box.j[p], box.i[p]
        coupled = (
            _times(z[p], v[k + 1, j, i])
            + _times(y[p], v[k, j + 1, i])
            + _times(x[p], v[k, j, i + 1])
        )
        v[k, j, i] -= _times(inverse[p], omega * coupled)
