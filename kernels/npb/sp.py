"""NPB SP: scalar pentadiagonal ADI steps of a three-dimensional flow problem.

Following the NAS Parallel Benchmarks specification of SP: the problem, the
right-hand side, the norms and the distribution of :mod:`~scaleprobe.kernels.npb.bt`
(:mod:`~scaleprobe.kernels.npb._adi`), but the implicit operator of each direction
is diagonalised (Pulliam-Chaussee): the right-hand side is multiplied by the inverse
eigenvector matrix (NPB's ``txinvr``), then along every line of x, y and z five
scalar pentadiagonal systems are solved (three share the matrix of the convective
speed, two carry the speed plus and minus the speed of sound; NPB's ``lhsx``...),
with the change of eigenvector basis between the directions (``ninvr``, ``pinvr``)
and back to the unknowns after z (``tzetar``); then ``u += du``. The pentadiagonal
solves are Gaussian elimination without pivoting, vectorised over all lines and
unknowns of a direction (a loop over the position along the line).

Verification is NPB's: the five error norms and the five residual norms within a
relative 1e-8 of the class's values; a failed check makes the point ``invalid``.

Classes (``--class``; grid ``n``, ``niter``, ``dt``): S (12, 100, 0.015), W (36,
400, 0.0015), A (64, 400, 0.0015), B (102, 400, 0.001), C (162, 400, 0.00067).

Run as ``mpiexec -n 4 python -m scaleprobe.kernels.npb.sp --class S --throttle
emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import math  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import KernelDeclaration  # noqa: E402
from scaleprobe.kernels.npb import _adi  # noqa: E402
from scaleprobe.kernels.npb._adi import C1C2, C1C5, C2, C3C4, CON43  # noqa: E402

__all__ = [
    "CLASSES",
    "KERNEL",
    "build_parser",
    "main",
    "mops",
    "pentadiagonal",
    "solve_lines",
]

#: (n, niter, dt, residual norms, error norms) per class, from NPB's ``verify``.
CLASSES = {
    "S": (
        12,
        100,
        0.015,
        (
            2.7470315451339479e-02,
            1.0360746705285417e-02,
            1.6235745065095532e-02,
            1.5840557224455615e-02,
            3.4849040609362460e-02,
        ),
        (
            2.7289258557377227e-05,
            1.0364446640837285e-05,
            1.6154798287166471e-05,
            1.5750704994480102e-05,
            3.4177666183390531e-05,
        ),
    ),
    "W": (
        36,
        400,
        0.0015,
        (
            0.1893253733584e-02,
            0.1717075447775e-03,
            0.2778153350936e-03,
            0.2887475409984e-03,
            0.3143611161242e-02,
        ),
        (
            0.7542088599534e-04,
            0.6512852253086e-05,
            0.1049092285688e-04,
            0.1128838671535e-04,
            0.1212845639773e-03,
        ),
    ),
    "A": (
        64,
        400,
        0.0015,
        (
            2.4799822399300195e00,
            1.1276337964368832e00,
            1.5028977888770491e00,
            1.4217816211695179e00,
            2.1292113035138280e00,
        ),
        (
            1.0900140297820550e-04,
            3.7343951769282091e-05,
            5.0092785406541633e-05,
            4.7671093939528255e-05,
            1.3621613399213001e-04,
        ),
    ),
    "B": (
        102,
        400,
        0.001,
        (
            0.6903293579998e02,
            0.3095134488084e02,
            0.4103336647017e02,
            0.3864769009604e02,
            0.5643482272596e02,
        ),
        (
            0.9810006190188e-02,
            0.1022827905670e-02,
            0.1720597911692e-02,
            0.1694479428231e-02,
            0.1847456263981e-01,
        ),
    ),
    "C": (
        162,
        400,
        0.00067,
        (
            0.5881691581829e03,
            0.2454417603569e03,
            0.3293829191851e03,
            0.3081924971891e03,
            0.4597223799176e03,
        ),
        (
            0.2598120500183e00,
            0.2590888922315e-01,
            0.5132886416320e-01,
            0.4806073419454e-01,
            0.5483377491301e00,
        ),
    ),
}
BT = math.sqrt(0.5)
C2IV = 2.5
#: Bytes a solve holds per grid point: u's lines, five diagonals and the right-hand
#: side of each of the five unknowns, the speeds.
LINE_BYTES = 8 * (5 + 6 * 5 + 4)


def pentadiagonal(a, b, c, d, e, r):
    """Solve pentadiagonal systems along axis 0, all at once (overwrites its input).

    Row ``i`` reads ``a[i] x[i-2] + b[i] x[i-1] + c[i] x[i] + d[i] x[i+1] + e[i]
    x[i+2] = r[i]`` (coefficients reaching beyond the ends are ignored). Gaussian
    elimination without pivoting, as NPB's.

    Parameters
    ----------
    a, b, c, d, e, r : numpy.ndarray
        Same shape, ``[L, ...]``.

    Returns
    -------
    numpy.ndarray
        ``x`` (``r``'s array).

    Examples
    --------
    >>> ones = np.ones((4, 1))
    >>> x = pentadiagonal(ones, -ones, 4 * ones, -ones, ones, np.ones((4, 1)))
    >>> x[:, 0].round(6).tolist()
    [0.25, 0.333333, 0.333333, 0.25]
    """
    length = r.shape[0]
    for i in range(length):
        factor = 1.0 / c[i]
        d[i] *= factor
        e[i] *= factor
        r[i] *= factor
        if i + 1 < length:
            below = b[i + 1].copy()
            c[i + 1] -= below * d[i]
            d[i + 1] -= below * e[i]
            r[i + 1] -= below * r[i]
        if i + 2 < length:
            below = a[i + 2].copy()
            b[i + 2] -= below * d[i]
            c[i + 2] -= below * e[i]
            r[i + 2] -= below * r[i]
    if length > 1:
        r[length - 2] -= d[length - 2] * r[length - 1]
    for i in range(length - 3, -1, -1):
        r[i] -= d[i] * r[i + 1] + e[i] * r[i + 2]
    return r


def _dissipation_rows(n):
    """The fourth-order dissipation's five diagonals on the ``n - 2`` inner points."""
    rows = np.tile(np.array([1.0, -4.0, 6.0, -4.0, 1.0]), (n - 2, 1))
    rows[0] = [0.0, 0.0, 5.0, -4.0, 1.0]
    rows[1] = [0.0, -4.0, 6.0, -4.0, 1.0]
    rows[-2] = [1.0, -4.0, 6.0, -4.0, 0.0]
    rows[-1] = [1.0, -4.0, 5.0, 0.0, 0.0]
    return rows.T


def _state(u):
    """``1/rho``, the velocities, ``qs`` and the speed of sound of ``u`` [..., 5]."""
    rho_inv, velocity, square, qs = _adi.derived(u)
    speed = np.sqrt(C1C2 * rho_inv * (u[..., 4] - square))
    return rho_inv, velocity, qs, speed


def _txinvr(u, r):
    """Multiply the right-hand side by the inverse eigenvectors (NPB's ``txinvr``)."""
    rho_inv, velocity, qs, speed = _state(u)
    uu, vv, ww = velocity[..., 0], velocity[..., 1], velocity[..., 2]
    r1, r2, r3, r4, r5 = (r[..., m].copy() for m in range(5))
    t1 = C2 / (speed * speed) * (qs * r1 - uu * r2 - vv * r3 - ww * r4 + r5)
    t2 = BT * rho_inv * (uu * r1 - r2)
    t3 = (BT * rho_inv * speed) * t1
    r[..., 0] = r1 - t1
    r[..., 1] = -rho_inv * (ww * r1 - r4)
    r[..., 2] = rho_inv * (vv * r1 - r3)
    r[..., 3] = -t2 + t3
    r[..., 4] = t2 + t3


def _ninvr(r):
    r1, r2, r3, r4, r5 = (r[..., m].copy() for m in range(5))
    t1, t2 = BT * r3, 0.5 * (r4 + r5)
    r[..., 0], r[..., 1], r[..., 2] = -r2, r1, BT * (r4 - r5)
    r[..., 3], r[..., 4] = -t1 + t2, t1 + t2


def _pinvr(r):
    r1, r2, r3, r4, r5 = (r[..., m].copy() for m in range(5))
    t1, t2 = BT * r1, 0.5 * (r4 + r5)
    r[..., 0], r[..., 1], r[..., 2] = BT * (r4 - r5), -r3, r2
    r[..., 3], r[..., 4] = -t1 + t2, t1 + t2


def _tzetar(u, r):
    """Back from the z eigenvectors to the unknowns (NPB's ``tzetar``)."""
    _, velocity, qs, speed = _state(u)
    xvel, yvel, zvel = velocity[..., 0], velocity[..., 1], velocity[..., 2]
    r1, r2, r3, r4, r5 = (r[..., m].copy() for m in range(5))
    density = u[..., 0]
    btuz = BT * density
    t1 = btuz / speed * (r4 + r5)
    t2 = r3 + t1
    t3 = btuz * (r4 - r5)
    r[..., 0] = t2
    r[..., 1] = -density * r2 + xvel * t2
    r[..., 2] = density * r1 + yvel * t2
    r[..., 3] = zvel * t2 + t3
    r[..., 4] = (
        density * (-xvel * r2 + yvel * r1)
        + qs * t2
        + C2IV * speed * speed * t1
        + zvel * t3
    )


def _systems(lines, axis, constants):
    """The five diagonals of the five unknowns' systems along lines ``[n, M, 5]``."""
    c = constants
    rho_inv, velocity, _, speed = _state(lines)
    normal = velocity[..., 2 - axis]
    viscous = C3C4 * rho_inv
    d = c.dissipation[axis]
    rhon = np.maximum(
        np.maximum(d + CON43 * viscous, d + C1C5 * viscous),
        np.maximum(d + viscous, d),
    )
    dtt1, dtt2 = c.dt * c.t1, c.dt * c.t2
    shape = (lines.shape[0] - 2, lines.shape[1], 5)
    below = -dtt2 * normal[:-2] - dtt1 * rhon[:-2]
    middle = 1.0 + 2.0 * dtt1 * rhon[1:-1]
    above = dtt2 * normal[2:] - dtt1 * rhon[2:]
    diagonals = [np.zeros(shape) for _ in range(5)]
    for m, sign in ((0, 0.0), (1, 0.0), (2, 0.0), (3, -1.0), (4, 1.0)):
        diagonals[1][..., m] = below + sign * dtt2 * speed[:-2]
        diagonals[2][..., m] = middle
        diagonals[3][..., m] = above - sign * dtt2 * speed[2:]
    comz = c.dt * _adi.DSSP
    for diagonal, row in zip(diagonals, _dissipation_rows(c.n), strict=True):
        diagonal += comz * row[:, None, None]
    return diagonals


def solve_lines(u, rhs, axis: int, constants: _adi.Constants) -> None:
    """SP's implicit solve along one axis, in place (NPB's ``x_solve``...).

    Along x the right-hand side first goes to the eigenvectors (``txinvr``); after
    the solve it goes to the next direction's (``ninvr`` after x, ``pinvr`` after y)
    or back to the unknowns (``tzetar`` after z).

    Parameters
    ----------
    u : numpy.ndarray
        ``[k, j, i, 5]`` block whole along ``axis``.
    rhs : numpy.ndarray
        The block's points inside along ``axis``; replaced by the solution.
    axis : int
        0 (z), 1 (y) or 2 (x).
    constants : Constants
    """
    n = u.shape[axis]
    inner = np.moveaxis(u, axis, 0)[1:-1]
    target = np.moveaxis(rhs, axis, 0)
    if target.size == 0:
        return
    if axis == 2:
        _txinvr(inner, target)
    lines = np.moveaxis(u, axis, 0).reshape(n, -1, 5)
    a, b, c, d, e = _systems(lines, axis, constants)
    x = pentadiagonal(a, b, c, d, e, target.reshape(n - 2, -1, 5).copy())
    target[...] = x.reshape(target.shape)
    if axis == 2:
        _ninvr(target)
    elif axis == 1:
        _pinvr(target)
    else:
        _tzetar(inner, target)


def mops(n: int, niter: int, seconds: float) -> float:
    """NPB SP's Mop/s: its operation count of ``niter`` steps over ``seconds``.

    Parameters
    ----------
    n : int
    niter : int
    seconds : float

    Returns
    -------
    float

    Examples
    --------
    >>> round(mops(12, 100, 1.0), 1)
    96.7
    """
    n = float(n)
    count = 881.174 * n**3 - 4683.91 * n**2 + 11484.5 * n - 19272.4
    return count * niter * 1e-6 / seconds


def _work(comm, args):
    return _adi.run_kernel(
        comm,
        args,
        label="SP",
        classes=CLASSES,
        solve=solve_lines,
        operations=mops,
        line_bytes=LINE_BYTES,
    )


KERNEL = KernelDeclaration(
    name="npb.sp",
    summary="NPB SP: scalar pentadiagonal ADI steps of a 3-D flow problem.",
    description=__doc__,
    parameters=_adi.class_parameters(CLASSES),
    metrics=_adi.kernel_metrics(),
    checks=(_adi.ranks_fit("SP", CLASSES),),
    work=_work,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
