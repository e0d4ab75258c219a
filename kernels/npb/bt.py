"""NPB BT: block-tridiagonal ADI steps of a three-dimensional flow problem.

Following the NAS Parallel Benchmarks specification of BT: from NPB's initial field
on an ``n^3`` grid, ``niter`` implicit steps of the compressible Navier-Stokes
problem of :mod:`~scaleprobe.kernels.npb._adi` (the right-hand side ``dt (forcing
+ R(u))``, then the approximate factorisation ``(I + dt Lx)(I + dt Ly)(I + dt Lz)
du = rhs``: along every grid line of x, then of y, then of z, a block-tridiagonal
system with 5 x 5 blocks built from the flux Jacobian and the viscous Jacobian of
``u``, then ``u += du``). One untimed step comes first and the field is set back,
as in NPB. The line solves are the block Thomas algorithm vectorised over all lines
of a direction at once (a loop over the position along the line, each step a
batched 5 x 5 solve).

The ranks own slabs of whole z planes. The x and y work is local; for the z work the
field is kept in a second layout, slabs of whole y planes (every z line complete),
and three ``Alltoallv`` a step move between them: the z terms of the right-hand
side to the z slabs, the right-hand side after the x and y solves to the y slabs,
the update back. Any rank count up to ``n`` runs (NPB's own BT takes square counts
only). Verification is NPB's: the five error norms against the exact solution and
the five residual norms, each within a relative 1e-8 of the class's values; a failed
check makes the point ``invalid``.

Classes (``--class``; grid ``n``, ``niter``, ``dt``): S (12, 60, 0.01), W (24, 200,
0.0008), A (64, 200, 0.0008), B (102, 200, 0.0003), C (162, 200, 0.0001). ``mops``
is NPB's operation count over the timed region.

Run as ``mpiexec -n 4 python -m scaleprobe.kernels.npb.bt --class S --throttle
emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import KernelDeclaration  # noqa: E402
from scaleprobe.kernels.npb import _adi  # noqa: E402
from scaleprobe.kernels.npb._adi import C1, C2, C3C4, C1345, CON43  # noqa: E402

__all__ = [
    "CLASSES",
    "EPSILON",
    "KERNEL",
    "block_thomas",
    "build_parser",
    "jacobians",
    "main",
    "mops",
    "solve_lines",
]

#: (n, niter, dt, residual norms, error norms) per class, from NPB's ``verify``.
CLASSES = {
    "S": (
        12,
        60,
        0.01,
        (
            1.7034283709541311e-01,
            1.2975252070034097e-02,
            3.2527926989486055e-02,
            2.6436421275166801e-02,
            1.9211784131744430e-01,
        ),
        (
            4.9976913345811579e-04,
            4.5195666782961927e-05,
            7.3973765172921357e-05,
            7.3821238632439731e-05,
            8.9269630987491446e-04,
        ),
    ),
    "W": (
        24,
        200,
        0.0008,
        (
            0.1125590409344e03,
            0.1180007595731e02,
            0.2710329767846e02,
            0.2469174937669e02,
            0.2638427874317e03,
        ),
        (
            0.4419655736008e01,
            0.4638531260002e00,
            0.1011551749967e01,
            0.9235878729944e00,
            0.1018045837718e02,
        ),
    ),
    "A": (
        64,
        200,
        0.0008,
        (
            1.0806346714637264e02,
            1.1319730901220813e01,
            2.5974354511582465e01,
            2.3665622544678910e01,
            2.5278963211748344e02,
        ),
        (
            4.2348416040525025e00,
            4.4390282496995698e-01,
            9.6692480136345650e-01,
            8.8302063039765474e-01,
            9.7379901770829278e00,
        ),
    ),
    "B": (
        102,
        200,
        0.0003,
        (
            1.4233597229287254e03,
            9.9330522590150238e01,
            3.5646025644535285e02,
            3.2485447959084092e02,
            3.2707541254659363e03,
        ),
        (
            5.2969847140936856e01,
            4.4632896115670668e00,
            1.3122573342210174e01,
            1.2006925323559144e01,
            1.2459576151035986e02,
        ),
    ),
    "C": (
        162,
        200,
        0.0001,
        (
            0.62398116551764615e04,
            0.50793239190423964e03,
            0.15423530093013596e04,
            0.13302387929291190e04,
            0.11604087428436455e05,
        ),
        (
            0.16462008369091265e03,
            0.11497107903824313e02,
            0.41207446207461508e02,
            0.37087651059694167e02,
            0.36211053051841265e03,
        ),
    ),
}
#: NPB's verification tolerance (relative, each norm).
EPSILON = 1e-8
_DIAGONAL = np.arange(5)
#: Bytes a solve holds per grid point: u's lines, F and N, the three blocks and the
#: augmented systems of the elimination.
LINE_BYTES = 8 * (5 + 2 * 25 + 3 * 25 + 2 * 30)


def jacobians(u: np.ndarray, normal: int):
    """The flux Jacobian and the viscous Jacobian of ``u`` along one direction.

    NPB BT's ``fjac`` and ``njac`` of ``x_solve`` (``normal`` 1), ``y_solve`` (2)
    and ``z_solve`` (3).

    Parameters
    ----------
    u : numpy.ndarray
        ``[..., 5]``.
    normal : int
        The momentum along the direction, 1, 2 or 3.

    Returns
    -------
    tuple of numpy.ndarray
        ``(F, N)``, each ``[..., 5, 5]``.

    Examples
    --------
    >>> f, n = jacobians(np.array([1.0, 0.0, 0.0, 0.0, 2.5]), 1)
    >>> f[0].tolist(), float(f[1, 4]), round(float(n[4, 4]), 12)
    ([0.0, 1.0, 0.0, 0.0, 0.0], 0.4, 0.196)
    """
    r1 = 1.0 / u[..., 0]
    r2, r3 = r1 * r1, r1 * r1 * r1
    un = u[..., normal]
    vn = un * r1
    qs = 0.5 * (u[..., 1] ** 2 + u[..., 2] ** 2 + u[..., 3] ** 2) * r1 * r1
    e = u[..., 4]
    f = np.zeros((*u.shape, 5))
    n = np.zeros((*u.shape, 5))
    f[..., 0, normal] = 1.0
    f[..., normal, 0] = -(un * r2 * un) + C2 * qs
    f[..., normal, normal] = (2.0 - C2) * vn
    f[..., normal, 4] = C2
    f[..., 4, 0] = (C2 * 2.0 * qs - C1 * (e * r1)) * vn
    f[..., 4, normal] = C1 * e * r1 - C2 * (un * un * r2 + qs)
    f[..., 4, 4] = C1 * vn
    energy = -C1345 * r2 * e
    for m in (1, 2, 3):
        um = u[..., m]
        viscous = CON43 * C3C4 if m == normal else C3C4
        n[..., m, 0] = -viscous * r2 * um
        n[..., m, m] = viscous * r1
        n[..., 4, m] = (viscous - C1345) * r2 * um
        energy = energy - (viscous - C1345) * r3 * um * um
        if m != normal:
            f[..., normal, m] = -C2 * (um * r1)
            f[..., m, 0] = -(um * un) * r2
            f[..., m, m] = vn
            f[..., m, normal] = um * r1
            f[..., 4, m] = -C2 * (um * un) * r2
    n[..., 4, 0] = energy
    n[..., 4, 4] = C1345 * r1
    return f, n


def block_thomas(lower, diagonal, upper, rhs):
    """Solve block-tridiagonal systems along axis 0, all lines at once.

    Row ``i`` of a line reads ``lower[i] x[i-1] + diagonal[i] x[i] + upper[i]
    x[i+1] = rhs[i]`` (``lower[0]`` and ``upper[-1]`` are ignored: the values beyond
    the ends are 0). Gaussian elimination down the line, back substitution up it.

    Parameters
    ----------
    lower, diagonal, upper : numpy.ndarray
        ``[L, M, 5, 5]``: position along the line, line.
    rhs : numpy.ndarray
        ``[L, M, 5]``.

    Returns
    -------
    numpy.ndarray
        ``x``, ``[L, M, 5]``.

    Examples
    --------
    >>> eye = np.broadcast_to(np.eye(5), (3, 1, 5, 5))
    >>> x = block_thomas(-eye, 4 * eye, -eye, np.ones((3, 1, 5)))
    >>> x[:, 0, 0].round(6).tolist()
    [0.357143, 0.428571, 0.357143]
    """
    length = rhs.shape[0]
    augmented = np.concatenate([upper, rhs[..., None]], axis=-1)
    solved = np.empty_like(augmented)
    solved[0] = np.linalg.solve(diagonal[0], augmented[0])
    for i in range(1, length):
        carried = lower[i] @ solved[i - 1]
        augmented[i, ..., 5] -= carried[..., 5]
        solved[i] = np.linalg.solve(diagonal[i] - carried[..., :5], augmented[i])
    x = np.empty_like(rhs)
    x[-1] = solved[-1, ..., 5]
    for i in range(length - 2, -1, -1):
        x[i] = solved[i, ..., 5] - (solved[i, ..., :5] @ x[i + 1][..., None])[..., 0]
    return x


def solve_lines(u, rhs, axis: int, constants: _adi.Constants) -> None:
    """BT's implicit solve along one axis, in place (NPB's ``x_solve``...).

    Parameters
    ----------
    u : numpy.ndarray
        ``[k, j, i, 5]`` block whole along ``axis`` (the lines' ``n`` points).
    rhs : numpy.ndarray
        The block's points inside along ``axis`` (``n - 2``), the others as ``u``'s;
        replaced by the solution.
    axis : int
        0 (z), 1 (y) or 2 (x).
    constants : Constants
    """
    n = u.shape[axis]
    lines = np.moveaxis(u, axis, 0).reshape(n, -1, 5)
    if lines.shape[1] == 0:
        return
    c = constants
    flux, viscous = jacobians(lines, 3 - axis)
    dtt1, dtt2 = c.dt * c.t1, c.dt * c.t2
    damping = dtt1 * c.dissipation[axis]
    lower = -dtt2 * flux[:-2] - dtt1 * viscous[:-2]
    lower[..., _DIAGONAL, _DIAGONAL] -= damping
    diagonal = 2.0 * dtt1 * viscous[1:-1]
    diagonal[..., _DIAGONAL, _DIAGONAL] += 1.0 + 2.0 * damping
    upper = dtt2 * flux[2:] - dtt1 * viscous[2:]
    upper[..., _DIAGONAL, _DIAGONAL] -= damping
    target = np.moveaxis(rhs, axis, 0)
    x = block_thomas(lower, diagonal, upper, target.reshape(n - 2, -1, 5))
    target[...] = x.reshape(target.shape)


def mops(n: int, niter: int, seconds: float) -> float:
    """NPB BT's Mop/s: its operation count of ``niter`` steps over ``seconds``.

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
    >>> round(mops(12, 60, 1.0), 1)
    228.3
    """
    n3, navg = float(n) ** 3, float(n)
    return 1e-6 * niter * (3478.8 * n3 - 17655.7 * navg**2 + 28023.7 * navg) / seconds


def _work(comm, args):
    return _adi.run_kernel(
        comm,
        args,
        label="BT",
        classes=CLASSES,
        solve=solve_lines,
        operations=mops,
        line_bytes=LINE_BYTES,
    )


KERNEL = KernelDeclaration(
    name="npb.bt",
    summary="NPB BT: block-tridiagonal ADI steps of a 3-D flow problem.",
    description=__doc__,
    parameters=_adi.class_parameters(CLASSES),
    metrics=_adi.kernel_metrics(),
    checks=(_adi.ranks_fit("BT", CLASSES),),
    work=_work,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
