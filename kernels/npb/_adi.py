"""What NPB's BT and SP share: the flow problem, its right-hand side and norms, and
the slabs of the grid over the ranks.

Both solve the same discretised three-dimensional compressible Navier-Stokes
problem on an ``n^3`` grid (five unknowns a point: density, three momenta, energy)
with an implicit ADI time step, from NPB's specification (``set_constants``,
``exact_solution``, ``initialize``, ``exact_rhs``, ``compute_rhs``,
``error_norm``, ``rhs_norm``):

- the exact solution is a polynomial in ``(xi, eta, zeta)`` with NPB's 5 x 13
  coefficients (:data:`CE`); the initial field interpolates it from the six faces
  (transfinite interpolation) and holds it on the faces;
- the right-hand side of a step is the forcing plus the operator ``R(u)``: per
  direction the central differences of the fluxes, the viscous terms and a fourth
  order dissipation (one-sided next to the faces); the forcing is ``-R`` of the
  exact solution, so the exact solution is a steady state of the scheme;
- the error norm is the root mean square of ``u`` minus the exact solution over all
  points, divided by ``(n - 2)^3``; the residual norm that of the right-hand side
  over the interior points, divided by ``dt``.

Arrays hold a block of the grid as ``[k, j, i, m]`` (z, y, x, then the five
unknowns, contiguous). The ranks own slabs of whole ``k`` planes ("layout z") for
everything but the work along z; for that they exchange the data into slabs of
whole ``j`` planes ("layout y", every z line complete) with one ``Alltoallv``
(:class:`Slabs`).
"""

from __future__ import annotations

import math

import numpy as np
from scaleprobe.kernels.harness import Metric, Parameter
from scaleprobe.kernels.iterative.profile import (
    IterationProfile,
    iteration_measurement,
    iteration_metrics,
)

__all__ = [
    "CE",
    "Constants",
    "Slabs",
    "Solver",
    "add_axis_terms",
    "derived",
    "error_sums",
    "exact_field",
    "exact_solution",
    "forcing_field",
    "initial_field",
    "kernel_metrics",
    "norms_from_sums",
    "ranks_fit",
    "run_kernel",
    "run_serial",
    "split_norm_check",
    "steps_run",
]

#: NPB's coefficients of the exact solution, ``CE[m, c]`` (``ce(m+1, c+1)``).
CE = np.array(
    [
        [2.0, 0.0, 0.0, 4.0, 5.0, 3.0, 0.5, 0.02, 0.01, 0.03, 0.5, 0.4, 0.3],
        [1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.01, 0.03, 0.02, 0.4, 0.3, 0.5],
        [2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.04, 0.03, 0.05, 0.3, 0.5, 0.4],
        [2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.03, 0.05, 0.04, 0.2, 0.1, 0.3],
        [5.0, 4.0, 3.0, 2.0, 0.1, 0.4, 0.3, 0.05, 0.04, 0.03, 0.1, 0.3, 0.2],
    ]
)
C1, C2, C3, C4, C5 = 1.4, 0.4, 0.1, 1.0, 1.4
C1C2, C1C5, C3C4 = C1 * C2, C1 * C5, C3 * C4
C1345 = C1C5 * C3C4
CON43, CON16 = 4.0 / 3.0, 1.0 / 6.0
#: The second-order dissipation coefficients of the axes z, y, x (NPB's dz, dy, dx).
AXIS_DISSIPATION = (1.0, 0.75, 0.75)
DSSP = 0.25 * max(AXIS_DISSIPATION)


class Constants:
    """NPB's constants of a grid of ``n`` points a side and time step ``dt``.

    Parameters
    ----------
    n : int
        Grid points a side.
    dt : float
        Time step.

    Attributes
    ----------
    t1, t2, t3 : float
        ``1/h^2``, ``1/(2h)`` and ``1/h`` with ``h = 1/(n-1)`` (NPB's tx1...).
    dissipation : tuple of float
        Second-order dissipation by axis (z, y, x).

    Examples
    --------
    >>> c = Constants(12, 0.01)
    >>> round(c.t1), c.t2, c.dissipation
    (121, 5.5, (1.0, 0.75, 0.75))
    """

    def __init__(self, n: int, dt: float):
        self.n, self.dt = int(n), float(dt)
        h = 1.0 / (self.n - 1)
        self.h = h
        self.t1, self.t2, self.t3 = 1.0 / (h * h), 1.0 / (2.0 * h), 1.0 / h
        self.dissipation = AXIS_DISSIPATION
        viscous = C3C4 * self.t3 * self.t3
        self.con2 = viscous  # xxcon2
        self.con3 = viscous * (1.0 - C1C5)  # xxcon3
        self.con4 = viscous * CON16  # xxcon4
        self.con5 = viscous * C1C5  # xxcon5


def exact_solution(xi, eta, zeta):
    """NPB's exact solution at points ``(xi, eta, zeta)`` (broadcast together).

    Parameters
    ----------
    xi, eta, zeta : array_like
        Coordinates in [0, 1].

    Returns
    -------
    numpy.ndarray
        Shape ``broadcast shape + (5,)``.

    Examples
    --------
    >>> exact_solution(0.0, 0.0, 0.0).tolist()
    [2.0, 1.0, 2.0, 2.0, 5.0]
    """
    xi, eta, zeta = (
        np.asarray(v, dtype=np.float64)[..., None] for v in (xi, eta, zeta)
    )
    c = CE
    return (
        c[:, 0]
        + xi * (c[:, 1] + xi * (c[:, 4] + xi * (c[:, 7] + xi * c[:, 10])))
        + eta * (c[:, 2] + eta * (c[:, 5] + eta * (c[:, 8] + eta * c[:, 11])))
        + zeta * (c[:, 3] + zeta * (c[:, 6] + zeta * (c[:, 9] + zeta * c[:, 12])))
    )


def _coordinates(n):
    """The grid's coordinates ``index / (n - 1)`` as NPB computes them."""
    return np.arange(n, dtype=np.float64) * (1.0 / (n - 1))


def exact_field(n: int, ks=slice(None), js=slice(None)) -> np.ndarray:
    """The exact solution on planes of the grid, ``[k, j, i, m]``.

    Parameters
    ----------
    n : int
    ks, js : slice, default=all
        The planes ``k`` and ``j`` (every ``i``).

    Returns
    -------
    numpy.ndarray
        Shape ``(len k, len j, n, 5)``.
    """
    x = _coordinates(n)
    return exact_solution(x[None, None, :], x[js][None, :, None], x[ks][:, None, None])


def initial_field(n: int, ks=slice(None), js=slice(None)) -> np.ndarray:
    """NPB's initial field: the faces' exact values blended into the interior.

    Parameters
    ----------
    n : int
    ks, js : slice, default=all
        The planes ``k`` and ``j`` (every ``i``).

    Returns
    -------
    numpy.ndarray
        Shape ``(len k, len j, n, 5)``; equal to the exact solution on the six faces.

    Examples
    --------
    >>> u = initial_field(6)
    >>> bool(np.allclose(u[0], exact_field(6)[0]))
    True
    >>> bool(np.array_equal(initial_field(6, slice(2, 4))[1], u[3]))
    True
    """
    x = _coordinates(n)
    kg, jg = np.arange(n)[ks], np.arange(n)[js]
    k, j, i = np.meshgrid(x[ks], x[js], x, indexing="ij")
    faces = [
        (exact_solution(0.0, j, k), exact_solution(1.0, j, k), i),
        (exact_solution(i, 0.0, k), exact_solution(i, 1.0, k), j),
        (exact_solution(i, j, 0.0), exact_solution(i, j, 1.0), k),
    ]
    px, py, pz = (
        w[..., None] * high + (1.0 - w[..., None]) * low for low, high, w in faces
    )
    del faces
    u = px + py + pz - px * py - px * pz - py * pz + px * py * pz
    u[:, :, 0] = exact_solution(0.0, j[:, :, 0], k[:, :, 0])
    u[:, :, -1] = exact_solution(1.0, j[:, :, -1], k[:, :, -1])
    for at, value in (
        (np.flatnonzero(jg == 0), 0.0),
        (np.flatnonzero(jg == n - 1), 1.0),
    ):
        u[:, at] = exact_solution(i[:, at], value, k[:, at])
    for at, value in (
        (np.flatnonzero(kg == 0), 0.0),
        (np.flatnonzero(kg == n - 1), 1.0),
    ):
        u[at] = exact_solution(i[at], j[at], value)
    return u


def derived(u: np.ndarray):
    """``1/rho``, the three velocities, ``square`` and ``qs`` of a field (NPB's
    ``rho_i``, ``us``/``vs``/``ws``, ``square``, ``qs``).

    Parameters
    ----------
    u : numpy.ndarray
        ``[..., 5]``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(rho_inv, velocity [..., 3], square, qs)``.
    """
    rho_inv = 1.0 / u[..., 0]
    velocity = u[..., 1:4] * rho_inv[..., None]
    momenta = u[..., 1:4]
    square = 0.5 * np.einsum("...m,...m->...", momenta, momenta) * rho_inv
    return rho_inv, velocity, square, square * rho_inv


def _dissipate(u, out, dssp):
    """Subtract NPB's fourth-order dissipation along axis 0 (one-sided at the ends)."""
    n = u.shape[0]
    out[3 : n - 3] -= dssp * (
        u[1 : n - 5]
        - 4.0 * u[2 : n - 4]
        + 6.0 * u[3 : n - 3]
        - 4.0 * u[4 : n - 2]
        + u[5 : n - 1]
    )
    out[1] -= dssp * (5.0 * u[1] - 4.0 * u[2] + u[3])
    out[2] -= dssp * (-4.0 * u[1] + 6.0 * u[2] - 4.0 * u[3] + u[4])
    out[n - 3] -= dssp * (u[n - 5] - 4.0 * u[n - 4] + 6.0 * u[n - 3] - 4.0 * u[n - 2])
    out[n - 2] -= dssp * (u[n - 4] - 4.0 * u[n - 3] + 5.0 * u[n - 2])


def add_axis_terms(u, parts, axis: int, constants: Constants, out) -> None:
    """Add ``R(u)``'s terms along one axis to ``out`` at the points inside along it.

    The fluxes' central differences, the viscous terms and the dissipation of NPB's
    ``compute_rhs`` for that direction; ``u`` must hold whole lines along ``axis``.

    Parameters
    ----------
    u : numpy.ndarray
        ``[k, j, i, m]`` block, whole along ``axis``.
    parts : tuple
        :func:`derived` of ``u``.
    axis : int
        0 (z), 1 (y) or 2 (x).
    constants : Constants
    out : numpy.ndarray
        Same shape as ``u``; points ``1 .. n-2`` along ``axis`` are added to.
    """
    c = constants
    normal = 3 - axis  # the momentum along the axis
    u = np.moveaxis(u, axis, 0)
    out = np.moveaxis(out, axis, 0)
    rho_inv, velocity, square, qs = (np.moveaxis(p, axis, 0) for p in parts)
    vn = velocity[..., normal - 1]
    t1, t2 = c.t1, c.t2
    d = c.dissipation[axis]

    def lap(x):
        return x[2:] - 2.0 * x[1:-1] + x[:-2]

    def diff(x):
        return x[2:] - x[:-2]

    inner = out[1:-1]
    inner[..., 0] += d * t1 * lap(u[..., 0]) - t2 * diff(u[..., normal])
    pressure = u[..., 4] - square
    for m in (1, 2, 3):
        along = m == normal
        flux = u[..., m] * vn
        if along:
            flux = flux + C2 * pressure
        inner[..., m] += (
            d * t1 * lap(u[..., m])
            + c.con2 * (CON43 if along else 1.0) * lap(velocity[..., m - 1])
            - t2 * diff(flux)
        )
    inner[..., 4] += (
        d * t1 * lap(u[..., 4])
        + c.con3 * lap(qs)
        + c.con4 * lap(vn * vn)
        + c.con5 * lap(u[..., 4] * rho_inv)
        - t2 * diff((C1 * u[..., 4] - C2 * square) * vn)
    )
    _dissipate(u, out, DSSP)


def forcing_field(n: int, constants: Constants, lo: int = 0, hi=None) -> np.ndarray:
    """NPB's forcing (``exact_rhs``) on planes ``k`` in ``[lo, hi)``: ``-R`` of the
    exact solution inside the grid, 0 on its faces.

    The z terms are computed on blocks of whole z lines as wide as the slab, so that
    a rank never holds the whole grid.

    Parameters
    ----------
    n : int
    constants : Constants
    lo, hi : int, default=the whole grid

    Returns
    -------
    numpy.ndarray
        Shape ``(hi - lo, n, n, 5)``.
    """
    hi = n if hi is None else hi
    exact = exact_field(n, slice(lo, hi))
    parts = derived(exact)
    terms = np.zeros_like(exact)
    for axis in (2, 1):
        add_axis_terms(exact, parts, axis, constants, terms)
    del exact, parts
    width = max(hi - lo, 1)
    for first in range(0, n, width):
        rows = slice(first, min(n, first + width))
        block = exact_field(n, slice(None), rows)
        z_terms = np.zeros_like(block)
        add_axis_terms(block, derived(block), 0, constants, z_terms)
        terms[:, rows] += z_terms[lo:hi]
    inner = slice(max(lo, 1) - lo, min(hi, n - 1) - lo)
    forcing = np.zeros_like(terms)
    forcing[inner, 1:-1, 1:-1] = -terms[inner, 1:-1, 1:-1]
    return forcing


def error_sums(u: np.ndarray, first_k: int, n: int) -> np.ndarray:
    """Sum over a slab of ``(u - exact)^2`` per unknown (NPB's ``error_norm``, before
    the sum over ranks).

    Parameters
    ----------
    u : numpy.ndarray
        A slab of whole ``k`` planes ``[k, j, i, m]``.
    first_k : int
        The global index of its first plane.
    n : int

    Returns
    -------
    numpy.ndarray
        Five sums.
    """
    x = _coordinates(n)
    z = x[first_k : first_k + u.shape[0]]
    exact = exact_solution(x[None, None, :], x[None, :, None], z[:, None, None])
    difference = (u - exact).reshape(-1, 5)
    return np.einsum("pm,pm->m", difference, difference)


def norms_from_sums(sums, n: int, scale: float = 1.0) -> np.ndarray:
    """NPB's norm from sums over the grid: ``sqrt(sum / (n - 2)^3) / scale``.

    Parameters
    ----------
    sums : array_like
        Five sums of squares over all ranks.
    n : int
    scale : float, default=1.0
        ``dt`` for the residual norm.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> norms_from_sums([1000.0] * 5, 12).tolist()
    [1.0, 1.0, 1.0, 1.0, 1.0]
    """
    return np.sqrt(np.asarray(sums, dtype=np.float64) / float(n - 2) ** 3) / scale


class Slabs:
    """The grid's planes over the ranks, and the exchange between the two layouts.

    Layout z: rank ``r`` holds planes ``k`` in ``[starts[r], starts[r+1])`` of every
    ``j``; layout y: planes ``j`` in the same range of every ``k``. Both are
    ``[k, j, i, m]`` arrays.

    Parameters
    ----------
    n : int
        Grid points a side.
    size, rank : int
        Ranks and this rank.

    Examples
    --------
    >>> s = Slabs(12, 4, 1)
    >>> s.counts.tolist(), s.lo, s.hi
    ([3, 3, 3, 3], 3, 6)
    """

    def __init__(self, n: int, size: int, rank: int):
        self.n, self.size, self.rank = n, size, rank
        self.counts = np.array([n // size + (r < n % size) for r in range(size)])
        self.starts = np.concatenate([[0], np.cumsum(self.counts)])
        self.lo, self.hi = int(self.starts[rank]), int(self.starts[rank + 1])
        self.mine = self.hi - self.lo
        # the planes of this rank's slab inside the grid (global 1 .. n-2)
        self.inner = slice(max(self.lo, 1) - self.lo, min(self.hi, n - 1) - self.lo)
        plane = n * 5
        self.z_to_y_send = self.mine * self.counts * plane
        self.z_to_y_receive = self.counts * self.mine * plane
        self._packed = np.empty(self.mine * n * plane)

    def z_shape(self) -> tuple:
        """Shape of a layout-z block, ``(mine, n, n, 5)``."""
        return (self.mine, self.n, self.n, 5)

    def y_shape(self) -> tuple:
        """Shape of a layout-y block, ``(n, mine, n, 5)``."""
        return (self.n, self.mine, self.n, 5)

    def outside(self) -> int:
        """Grid points this rank sends to others in one exchange."""
        return int((self.mine * (self.n - self.mine)) * self.n)

    def z_to_y(self, alltoallv, block: np.ndarray, out: np.ndarray) -> None:
        """Layout z to layout y (``alltoallv(send, receive)`` of ``[array, counts]``).

        Parameters
        ----------
        alltoallv : callable
        block : numpy.ndarray
            :meth:`z_shape`.
        out : numpy.ndarray
            :meth:`y_shape`, contiguous; filled.
        """
        at = 0
        for r in range(self.size):
            piece = block[:, self.starts[r] : self.starts[r + 1]]
            self._packed[at : at + piece.size].reshape(piece.shape)[...] = piece
            at += piece.size
        alltoallv(
            [self._packed, self.z_to_y_send], [out.reshape(-1), self.z_to_y_receive]
        )

    def y_to_z(self, alltoallv, block: np.ndarray, out: np.ndarray) -> None:
        """Layout y to layout z (the inverse of :meth:`z_to_y`).

        Parameters
        ----------
        alltoallv : callable
        block : numpy.ndarray
            :meth:`y_shape`, contiguous.
        out : numpy.ndarray
            :meth:`z_shape`; filled.
        """
        alltoallv(
            [block.reshape(-1), self.z_to_y_receive], [self._packed, self.z_to_y_send]
        )
        at = 0
        for r in range(self.size):
            target = out[:, self.starts[r] : self.starts[r + 1]]
            target[...] = self._packed[at : at + target.size].reshape(target.shape)
            at += target.size


def split_norm_check(computed, reference, epsilon):
    """Largest relative difference of norms and NPB's verdict.

    Parameters
    ----------
    computed, reference : array_like
        Five norms each; ``reference`` None when NPB has none.
    epsilon : float

    Returns
    -------
    tuple of (float, float)
        The largest relative difference (NaN without reference) and 1.0, 0.0 or
        NaN.

    Examples
    --------
    >>> error, verdict = split_norm_check([1.0, 2.0], [1.0, 2.0 + 1e-9], 1e-8)
    >>> round(error, 12), verdict
    (5e-10, 1.0)
    """
    if reference is None:
        return math.nan, math.nan
    computed, reference = np.asarray(computed), np.asarray(reference)
    error = float(np.max(np.abs((computed - reference) / reference)))
    return error, 1.0 if error <= epsilon else 0.0


class Solver:
    """One rank's part of BT or SP: its slabs of the field in both layouts, a step.

    Parameters
    ----------
    n : int
        Grid points a side.
    dt : float
        Time step.
    slabs : Slabs
        This rank's planes.
    exchange : callable
        ``exchange(send, receive)``: an ``Alltoallv`` of ``[array, counts]`` lists.
    solve : callable
        ``solve(u, rhs, axis, constants)``: the implicit solve along an axis, in
        place (BT's block-tridiagonal one, SP's pentadiagonal one).
    line_bytes : int, default=0
        Bytes the solve holds per grid point (its Jacobians, systems...).
    """

    def __init__(self, n, dt, slabs, exchange, solve, line_bytes=0):
        self.constants = Constants(n, dt)
        self.slabs, self.exchange = slabs, exchange
        self.solve, self.line_bytes = solve, line_bytes
        s = slabs
        self.forcing = forcing_field(n, self.constants, s.lo, s.hi)
        self.reset()
        self.rhs_z = np.zeros(s.z_shape())
        self.rhs_y = np.zeros(s.y_shape())
        self.z_terms = np.zeros(s.y_shape())
        self.z_terms_z = np.zeros(s.z_shape())
        self.mask = np.zeros((s.mine, n, n, 1))
        self.mask[s.inner, 1:-1, 1:-1] = dt

    def reset(self) -> None:
        """Set the field to NPB's initial field."""
        s = self.slabs
        mine = slice(s.lo, s.hi)
        self.u_z = initial_field(s.n, ks=mine)
        self.u_y = initial_field(s.n, js=mine)

    def nbytes(self) -> int:
        """Bytes of the arrays a step reads and writes (the largest solve's too)."""
        arrays = (self.u_z, self.u_y, self.forcing, self.rhs_z, self.rhs_y)
        held = sum(a.nbytes for a in arrays) + 2 * self.z_terms.nbytes
        points = self.slabs.mine * self.slabs.n * self.slabs.n
        return int(held + points * self.line_bytes)

    def compute_rhs(self) -> None:
        """``rhs = dt (forcing + R(u))`` inside the grid, 0 on its faces."""
        c = self.constants
        parts = derived(self.u_z)
        np.copyto(self.rhs_z, self.forcing)
        add_axis_terms(self.u_z, parts, 2, c, self.rhs_z)
        add_axis_terms(self.u_z, parts, 1, c, self.rhs_z)
        self.z_terms.fill(0.0)
        add_axis_terms(self.u_y, derived(self.u_y), 0, c, self.z_terms)
        self.slabs.y_to_z(self.exchange, self.z_terms, self.z_terms_z)
        self.rhs_z += self.z_terms_z
        self.rhs_z *= self.mask

    def step(self) -> None:
        """One ADI step: right-hand side, the x, y and z solves, ``u += du``."""
        c, inner = self.constants, self.slabs.inner
        self.compute_rhs()
        self.solve(self.u_z[inner, 1:-1, :], self.rhs_z[inner, 1:-1, 1:-1], 2, c)
        self.solve(self.u_z[inner, :, 1:-1], self.rhs_z[inner, 1:-1, 1:-1], 1, c)
        self.slabs.z_to_y(self.exchange, self.rhs_z, self.rhs_y)
        self.solve(self.u_y[:, inner, 1:-1], self.rhs_y[1:-1, inner, 1:-1], 0, c)
        self.slabs.y_to_z(self.exchange, self.rhs_y, self.rhs_z)
        self.u_z += self.rhs_z
        self.u_y += self.rhs_y

    def sums(self) -> np.ndarray:
        """This rank's sums of squares: the error (5) and the residual (5).

        Recomputes the right-hand side of the current field (collective).
        """
        self.compute_rhs()
        residual = self.rhs_z.reshape(-1, 5)
        return np.concatenate(
            [
                error_sums(self.u_z, self.slabs.lo, self.slabs.n),
                np.einsum("pm,pm->m", residual, residual),
            ]
        )


def _one_rank(send, receive):
    """The exchange of a single rank: its own block."""
    receive[0][...] = send[0]


def run_serial(n: int, dt: float, niter: int, solve):
    """Run BT or SP on one process without MPI: the error and residual norms.

    Parameters
    ----------
    n : int
    dt : float
    niter : int
    solve : callable
        The implicit solve along an axis (:class:`Solver`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(residual norms, error norms)`` as NPB's ``verify`` computes them.
    """
    solver = Solver(n, dt, Slabs(n, 1, 0), _one_rank, solve)
    for _ in range(niter):
        solver.step()
    sums = solver.sums()
    return norms_from_sums(sums[5:], n, dt), norms_from_sums(sums[:5], n)


def _profiled_exchange(comm, profile, slabs):
    """An ``Alltoallv`` timed as one data exchange of ``profile``."""
    jobs = slabs.outside() if comm.size > 1 else 0

    def exchange(send, receive):
        with profile.collective("alltoallv", jobs=jobs):
            comm.Alltoallv(send, receive)

    return exchange


def _timed_steps(comm, args, solver, niter):
    """NPB's untimed step and reset, then ``niter`` profiled steps (collective).

    Returns the profile's result, the elapsed time and the critical path.
    """
    kinds = {"alltoallv": 40}  # a grid point: five doubles
    untimed = IterationProfile(comm, kinds, counters=args.counters)
    solver.exchange = _profiled_exchange(comm, untimed, solver.slabs)
    with untimed.compute():
        solver.step()
    untimed.hardware.close()
    solver.reset()
    profile = IterationProfile(comm, kinds, counters=args.counters)
    profile.working_set(solver.nbytes())
    solver.exchange = _profiled_exchange(comm, profile, solver.slabs)
    start = comm.sync()
    origin = comm.path()
    for _ in range(niter):
        profile.next_iteration()
        with profile.compute():
            solver.step()
    elapsed = comm.elapsed_since(start)
    path = comm.critical_path_since(origin)
    return profile.result(), elapsed, path


def run_kernel(comm, args, *, label, classes, solve, operations, line_bytes=0):
    """Run BT or SP under MPI and verify it as NPB does (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        ``class`` and ``counters``.
    label : str
        ``"BT"`` or ``"SP"``, for the reason of a failed verification.
    classes : dict
        ``(n, niter, dt, residual norms, error norms)`` by class.
    solve : callable
        The implicit solve along an axis (:class:`Solver`).
    operations : callable
        ``operations(n, niter, seconds) -> Mop/s`` (NPB's count).
    line_bytes : int, default=0
        Bytes the solve holds per grid point (:class:`Solver`).

    Returns
    -------
    Measurement or None
        On rank 0 (``invalid`` when NPB's verification fails); None elsewhere.
    """
    from mpi4py import MPI

    n, _, dt, residual_reference, error_reference = classes[args["class"]]
    niter, checked = steps_run(args, classes)
    if not checked:  # NPB's values hold at the class's own step count only
        residual_reference = error_reference = None
    setup = comm.sync()
    slabs = Slabs(n, comm.size, comm.rank)
    solver = Solver(n, dt, slabs, comm.Alltoallv, solve, line_bytes)
    setup_time = comm.elapsed_since(setup)
    timing, elapsed, path = _timed_steps(comm, args, solver, niter)
    solver.exchange = comm.Alltoallv
    local = solver.sums()
    total = np.empty_like(local)
    comm.Allreduce(local, total, op=MPI.SUM)
    summary = comm.summary()
    if comm.rank != 0:
        return None
    residual = norms_from_sums(total[5:], n, dt)
    error = norms_from_sums(total[:5], n)
    residual_error, residual_ok = split_norm_check(residual, residual_reference, 1e-8)
    error_error, error_ok = split_norm_check(error, error_reference, 1e-8)
    verified = min(residual_ok, error_ok)
    reason = ""
    if verified == 0.0:
        reason = (
            f"NPB {label} verification failed: residual norms {residual.tolist()}, "
            f"error norms {error.tolist()} (largest relative differences "
            f"{residual_error:.3g} and {error_error:.3g} > 1e-8)"
        )
    metrics = {
        "grid": n,
        "niter": niter,
        "cell_steps": float(n) ** 3 * niter,
        "dt": dt,
        "mops": operations(n, niter, elapsed),
        "residual_error": residual_error,
        "solution_error": error_error,
        "verified": verified,
        "setup_time": setup_time,
    }
    for m in range(5):
        metrics[f"xcr{m + 1}"] = float(residual[m])
        metrics[f"xce{m + 1}"] = float(error[m])
    return iteration_measurement(
        timing,
        elapsed=elapsed,
        path=path,
        summary=summary,
        metrics=metrics,
        reason=reason,
    )


def kernel_metrics() -> tuple:
    """The metrics BT and SP report.

    Returns
    -------
    tuple of Metric
    """
    norms = tuple(
        Metric(f"{kind}{m}", "1", f"{what} norm of unknown {m}")
        for kind, what in (("xcr", "residual"), ("xce", "error"))
        for m in range(1, 6)
    )
    return (
        *iteration_metrics(("alltoallv",)),
        Metric("grid", "1", "grid points a side"),
        Metric("niter", "1", "time steps timed"),
        Metric("cell_steps", "1", "grid points times the steps timed"),
        Metric("dt", "1", "time step"),
        Metric("mops", "Mop/s", "NPB's operation count over the timed steps"),
        *norms,
        Metric("residual_error", "1", "largest relative error of the residual norms"),
        Metric("solution_error", "1", "largest relative error of the error norms"),
        Metric(
            "verified",
            "1",
            "NPB verification: 1 passed, 0 failed, NaN not verified (--steps other "
            "than the class's)",
        ),
        Metric("setup_time", "s", "initial field and forcing (untimed, as in NPB)"),
    )


def steps_run(args, classes: dict) -> tuple:
    """The steps a run times and whether NPB's verification applies to it.

    NPB lets a user set a class's step count (``niter`` of its ``inputbt.data``,
    ``inputsp.data``, ``inputlu.data``); its verification values hold at the
    class's own count only.

    Parameters
    ----------
    args : mapping
        ``class`` and ``steps`` (None: the class's).
    classes : dict
        Class name to ``(n, niter, ...)``.

    Returns
    -------
    tuple of (int, bool)
        The steps and whether they are the class's (verifiable).

    Examples
    --------
    >>> table = {"S": (12, 60)}
    >>> steps_run({"class": "S", "steps": None}, table)
    (60, True)
    >>> steps_run({"class": "S", "steps": 5}, table)
    (5, False)
    >>> steps_run({"class": "S", "steps": 60}, table)
    (60, True)
    """
    own = int(classes[args["class"]][1])
    steps = args["steps"]
    if steps is None:
        return own, True
    return int(steps), int(steps) == own


def class_parameters(classes: dict) -> tuple:
    """The parameters of BT, SP and LU: the problem class, an ordered size whose
    ``cell_steps`` (grid points times steps: what a class's work grows with) the
    models regress on, the step count, and whether to read hardware counters.

    With ``steps`` other than the class's, a run is not verified (NPB's values hold
    at the class's own count) and records the ``cell_steps`` it ran, which the
    models take in place of the class's (:func:`~scaleprobe.models.core.ordered.
    ordered_sizes`).

    Parameters
    ----------
    classes : dict
        Class name to ``(n, niter, ...)``.

    Returns
    -------
    tuple of Parameter

    Examples
    --------
    >>> size, steps, counters = class_parameters({"S": (12, 60), "W": (24, 200)})
    >>> size.size_of("W"), steps.flag, counters.name
    ({'cell_steps': 2764800.0}, '--steps', 'counters')
    """
    sizes = {
        c: {"cell_steps": float(classes[c][0] ** 3 * classes[c][1])} for c in classes
    }
    return (
        Parameter(
            "class", "choice", "S", choices=sorted(classes), help="problem class",
            sizes=sizes,
        ),
        Parameter(
            "steps", "int", None, minimum=1,
            help="time steps (default the class's; verified only at the class's)",
        ),
        Parameter("counters", "bool", True, help="try hardware counters"),
    )  # fmt: skip


def ranks_fit(label: str, classes: dict):
    """A launch check: at most as many ranks as the class's grid has planes.

    Parameters
    ----------
    label : str
    classes : dict

    Returns
    -------
    callable
        ``check(args, ranks, ppn) -> str``.
    """

    def check(args, ranks, ppn) -> str:
        n = classes[args["class"]][0]
        if ranks <= n:
            return ""
        return (
            f"NPB {label} class {args['class']} has {n} planes: at most {n} ranks, "
            f"got {ranks}"
        )

    return check
