"""NPB LU: symmetric successive over-relaxation steps of a three-dimensional flow
problem.

Following the NAS Parallel Benchmarks specification of LU: the flow problem of
:mod:`~scaleprobe.kernels.npb._adi` (NPB's exact solution, initial field and
forcing; LU's right-hand side ``rsd = forcing + R(u)`` is BT's without the factor
``dt``) on an ``n^3`` grid, ``niter`` SSOR steps from the initial field, each
``rsd *= dt``, the lower-triangular sweep (NPB's ``jacld`` and ``blts``), the
upper-triangular sweep (``jacu`` and ``buts``), ``u += rsd / (omega (2 -
omega))`` with ``omega = 1.2``, and the next right-hand side. The sweeps run over the
hyperplanes ``i + j + k = const`` (:mod:`~scaleprobe.kernels.npb._lu_sweep`). One
untimed step comes first and the field is set back, as in NPB.

The ranks own slabs of whole z planes. The right-hand side's x and y terms are local
and its z terms are computed on slabs of whole y planes (one ``Alltoallv`` brings
them back, one more carries the update to those slabs). The sweeps are a pipelined
wavefront: a rank sweeps its slab in blocks of rows, and after each block sends the
block's rows of its last plane to the rank above (the lower sweep; the upper sweep
sends its first plane's rows to the rank below, in the reverse order), so the ranks
work on different blocks at once; a halo plane of the field is exchanged with each
neighbour before the sweeps. Any rank count up to ``n`` gives NPB's values.

Verification is NPB's: the five residual norms, the five error norms against the
exact solution and the surface integral of the pressure (``pintgr``), each within a
relative 1e-8 of the class's values; a failed check makes the point ``invalid``.

Classes (``--class``; grid ``n``, ``niter``, ``dt``): S (12, 50, 0.5), W (33, 300,
0.0015), A (64, 250, 2.0), B (102, 250, 2.0), C (162, 250, 2.0). ``mops`` is NPB's
operation count over the timed region.

Run as ``mpiexec -n 4 python -m scaleprobe.kernels.npb.lu --class S --throttle
emulated``.
"""

from __future__ import annotations

import itertools
import math
import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import (  # noqa: E402
    KernelDeclaration,
    Metric,
)
from scaleprobe.kernels.iterative.profile import iteration_measurement  # noqa: E402
from scaleprobe.kernels.npb import _adi  # noqa: E402
from scaleprobe.kernels.npb._adi import C2  # noqa: E402
from scaleprobe.kernels.npb._lu_sweep import Box, lower_sweep, upper_sweep  # noqa: E402

__all__ = [
    "CLASSES",
    "EPSILON",
    "KERNEL",
    "OMEGA",
    "LuSolver",
    "build_parser",
    "main",
    "mops",
    "pressure",
    "run_serial",
    "surface_integral",
]

#: (n, niter, dt, residual norms, error norms, surface integral) per class, from
#: NPB's ``verify``.
CLASSES = {
    "S": (
        12,
        50,
        0.5,
        (
            1.6196343210976702e-02,
            2.1976745164821318e-03,
            1.5179927653399185e-03,
            1.5029584435994323e-03,
            3.4264073155896461e-02,
        ),
        (
            6.4223319957960924e-04,
            8.4144342047347926e-05,
            5.8588269616485186e-05,
            5.8474222595157350e-05,
            1.3103347914111294e-03,
        ),
        7.8418928865937083e00,
    ),
    "W": (
        33,
        300,
        1.5e-3,
        (
            0.1236511638192e02,
            0.1317228477799e01,
            0.2550120713095e01,
            0.2326187750252e01,
            0.2826799444189e02,
        ),
        (
            0.4867877144216e00,
            0.5064652880982e-01,
            0.9281818101960e-01,
            0.8570126542733e-01,
            0.1084277417792e01,
        ),
        0.1161399311023e02,
    ),
    "A": (
        64,
        250,
        2.0,
        (
            7.7902107606689367e02,
            6.3402765259692870e01,
            1.9499249727292479e02,
            1.7845301160418537e02,
            1.8384760349464247e03,
        ),
        (
            2.9964085685471943e01,
            2.8194576365003349e00,
            7.3473412698774742e00,
            6.7139225687777051e00,
            7.0715315688392578e01,
        ),
        2.6030925604886277e01,
    ),
    "B": (
        102,
        250,
        2.0,
        (
            3.5532672969982736e03,
            2.6214750795310692e02,
            8.8333721850952190e02,
            7.7812774739425265e02,
            7.3087969592545314e03,
        ),
        (
            1.1401176380212709e02,
            8.1098963655421574e00,
            2.8480597317698308e01,
            2.5905394567832939e01,
            2.6054907504857413e02,
        ),
        4.7887162703308227e01,
    ),
    "C": (
        162,
        250,
        2.0,
        (
            1.03766980323537846e04,
            8.92212458801008552e02,
            2.56238814582660871e03,
            2.19194343857831427e03,
            1.78078057261061185e04,
        ),
        (
            2.15986399716949279e02,
            1.55789559239863600e01,
            5.41318863077207766e01,
            4.82262643154045421e01,
            4.55902910043250358e02,
        ),
        6.66404553572181300e01,
    ),
}
#: NPB's verification tolerance (relative, each value).
EPSILON = 1e-8
#: NPB's over-relaxation factor.
OMEGA = 1.2
_LOWER, _UPPER, _HALO_UP, _HALO_DOWN = 11, 12, 13, 14


def _one_rank(send, receive):
    """The exchange of a single rank: its own block."""
    receive[0][...] = send[0]


class LuSolver:
    """One rank's part of LU: its slab of the field, an SSOR step.

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
    comm : communicator, optional
        For the sweeps' messages between neighbouring slabs (needed with more than
        one rank).
    """

    def __init__(self, n, dt, slabs, exchange, comm=None):
        self.flow = _adi.Solver(n, dt, slabs, exchange, None)
        self.constants = self.flow.constants
        self.slabs, self.comm = slabs, comm
        s = slabs
        self.u = np.zeros((s.mine + 2, n, n, 5))
        self.v = np.zeros_like(self.u)
        self.du_y = np.zeros(s.y_shape())
        first = max(s.lo, 1) - s.lo + 1
        last = max(min(s.hi, n - 1) - s.lo + 1, first)
        # at least one block a rank, and blocks of at most about eight rows
        blocks = min(n - 2, max(s.size, (n - 2) // 8))
        edges = np.linspace(1, n - 1, blocks + 1).round().astype(int).tolist()
        self.boxes = [
            (Box(n, first, last, a, b), a, b) for a, b in itertools.pairwise(edges)
        ]

    @property
    def exchange(self):
        """The ``Alltoallv`` of the right-hand side and the update."""
        return self.flow.exchange

    @exchange.setter
    def exchange(self, value):
        self.flow.exchange = value

    def reset(self) -> None:
        """Set the field to NPB's initial field."""
        self.flow.reset()

    def nbytes(self) -> int:
        """Bytes of the arrays a step reads and writes (the widest box's blocks too)."""
        widest = max(box.k.size for box, _, _ in self.boxes)
        held = self.u.nbytes + self.v.nbytes + self.du_y.nbytes
        return int(self.flow.nbytes() + held + widest * 4 * 25 * 8)

    def _halo(self) -> None:
        """The neighbours' planes next to the slab, of the field."""
        s = self.slabs
        if s.size == 1:
            return
        from mpi4py import MPI

        up = s.rank + 1 if s.rank + 1 < s.size else MPI.PROC_NULL
        down = s.rank - 1 if s.rank > 0 else MPI.PROC_NULL
        self.comm.Sendrecv(
            self.u[s.mine], up, _HALO_UP, recvbuf=self.u[0], source=down,
            recvtag=_HALO_UP,
        )  # fmt: skip
        self.comm.Sendrecv(
            self.u[1], down, _HALO_DOWN, recvbuf=self.u[s.mine + 1], source=up,
            recvtag=_HALO_DOWN,
        )  # fmt: skip

    def _sweeps(self) -> None:
        """The lower then the upper sweep, pipelined over the blocks of rows."""
        s, comm, c = self.slabs, self.comm, self.constants
        above, below = s.rank + 1 < s.size, s.rank > 0
        for box, a, b in self.boxes:
            if below:
                comm.Recv(self.v[0, a:b], s.rank - 1, _LOWER)
            lower_sweep(box, self.u, self.v, c, OMEGA)
            if above:
                comm.Send(self.v[s.mine, a:b], s.rank + 1, _LOWER)
        for box, a, b in reversed(self.boxes):
            if above:
                comm.Recv(self.v[s.mine + 1, a:b], s.rank + 1, _UPPER)
            upper_sweep(box, self.u, self.v, c, OMEGA)
            if below:
                comm.Send(self.v[1, a:b], s.rank - 1, _UPPER)

    def step(self) -> None:
        """One SSOR step: right-hand side, the two sweeps, ``u += du``."""
        flow = self.flow
        flow.compute_rhs()  # dt * rsd inside the grid, 0 on its faces
        self.v[1:-1] = flow.rhs_z
        self.u[1:-1] = flow.u_z
        self._halo()
        self._sweeps()
        update = self.v[1:-1] * (1.0 / (OMEGA * (2.0 - OMEGA)))
        flow.u_z += update
        self.slabs.z_to_y(flow.exchange, update, self.du_y)
        flow.u_y += self.du_y

    def sums(self) -> np.ndarray:
        """This rank's sums of squares: the error (5) and the residual times ``dt``
        (5); recomputes the right-hand side (collective)."""
        return self.flow.sums()


def pressure(u: np.ndarray) -> np.ndarray:
    """The pressure ``c2 (e - |m|^2 / (2 rho))`` of a field (NPB's ``pintgr``).

    Parameters
    ----------
    u : numpy.ndarray
        ``[..., 5]``.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> round(float(pressure(np.array([2.0, 2.0, 0.0, 0.0, 3.0]))), 12)
    0.8
    """
    momenta = u[..., 1:4]
    return C2 * (u[..., 4] - 0.5 * np.sum(momenta * momenta, axis=-1) / u[..., 0])


def _cells(p: np.ndarray) -> float:
    """Sum over the cells of a face of their four corners' values."""
    return float(np.sum(p[:-1, :-1] + p[1:, :-1] + p[:-1, 1:] + p[1:, 1:]))


def surface_integral(phi: np.ndarray) -> float:
    """NPB's surface integral of the pressure over its three pairs of faces.

    Parameters
    ----------
    phi : numpy.ndarray
        The pressure on the whole grid, ``[k, j, i]``.

    Returns
    -------
    float
        ``frc``: a quarter of the sum of the cells' corner values times their areas
        on the planes ``k = 2, n-2``, ``j = 1, n-3`` and ``i = 1, n-2`` (from 0),
        each over NPB's ranges.

    Examples
    --------
    >>> n = 6
    >>> round(surface_integral(np.ones((n, n, n))), 12)
    1.28
    """
    n = phi.shape[0]
    h = 1.0 / (n - 1)
    ks, js, i = slice(2, n - 1), slice(1, n - 2), slice(1, n - 1)
    frc1 = _cells(phi[2, js, i]) + _cells(phi[n - 2, js, i])
    frc2 = _cells(phi[ks, 1, i]) + _cells(phi[ks, n - 3, i])
    frc3 = _cells(phi[ks, js, 1]) + _cells(phi[ks, js, n - 2])
    return 0.25 * h * h * (frc1 + frc2 + frc3)


def run_serial(n: int, dt: float, niter: int):
    """Run LU on one process without MPI: NPB's three verified quantities.

    Parameters
    ----------
    n : int
    dt : float
    niter : int

    Returns
    -------
    tuple
        ``(residual norms, error norms, surface integral)``.
    """
    solver = LuSolver(n, dt, _adi.Slabs(n, 1, 0), _one_rank)
    for _ in range(niter):
        solver.step()
    sums = solver.sums()
    phi = pressure(solver.flow.u_z)
    return (
        _adi.norms_from_sums(sums[5:], n, dt),
        _adi.norms_from_sums(sums[:5], n),
        surface_integral(phi),
    )


def mops(n: int, niter: int, seconds: float) -> float:
    """NPB LU's Mop/s: its operation count of ``niter`` steps over ``seconds``.

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
    >>> round(mops(12, 50, 1.0), 1)
    102.3
    """
    navg = float(n)
    count = 1984.77 * navg**3 - 10923.3 * navg**2 + 27770.9 * navg - 144010.0
    return 1e-6 * niter * count / seconds


def _verdict(residual, error, integral, reference):
    """NPB's check of the three quantities: metrics and the reason of a failure."""
    _, _, _, residual_reference, error_reference, integral_reference = reference
    residual_error, residual_ok = _adi.split_norm_check(
        residual, residual_reference, EPSILON
    )
    error_error, error_ok = _adi.split_norm_check(error, error_reference, EPSILON)
    if integral_reference is None:
        integral_error, integral_ok = math.nan, math.nan
    else:
        integral_error = abs(integral - integral_reference) / abs(integral_reference)
        integral_ok = 1.0 if integral_error <= EPSILON else 0.0
    verified = min(residual_ok, error_ok, integral_ok)
    reason = ""
    if verified == 0.0:
        reason = (
            f"NPB LU verification failed: residual norms {residual.tolist()}, "
            f"error norms {error.tolist()}, surface integral {integral!r} (largest "
            f"relative differences {residual_error:.3g}, {error_error:.3g} and "
            f"{integral_error:.3g} > {EPSILON:g})"
        )
    metrics = {
        "residual_error": residual_error,
        "solution_error": error_error,
        "integral_error": integral_error,
        "verified": verified,
        "xci": integral,
    }
    for m in range(5):
        metrics[f"xcr{m + 1}"] = float(residual[m])
        metrics[f"xce{m + 1}"] = float(error[m])
    return metrics, reason


def _work(comm, args):
    from mpi4py import MPI

    reference = CLASSES[args["class"]]
    n, _, dt = reference[:3]
    niter, checked = _adi.steps_run(args, CLASSES)
    if not checked:  # NPB's values hold at the class's own step count only
        reference = (*reference[:3], None, None, None)
    setup = comm.sync()
    slabs = _adi.Slabs(n, comm.size, comm.rank)
    solver = LuSolver(n, dt, slabs, comm.Alltoallv, comm)
    setup_time = comm.elapsed_since(setup)
    timing, elapsed, path = _adi._timed_steps(comm, args, solver, niter)
    solver.exchange = comm.Alltoallv
    local = solver.sums()
    total = np.empty_like(local)
    comm.Allreduce(local, total, op=MPI.SUM)
    pieces = comm.gather(pressure(solver.flow.u_z), root=0)
    summary = comm.summary()
    if comm.rank != 0:
        return None
    residual = _adi.norms_from_sums(total[5:], n, dt)
    error = _adi.norms_from_sums(total[:5], n)
    integral = surface_integral(np.concatenate(pieces))
    metrics, reason = _verdict(residual, error, integral, reference)
    metrics.update(
        grid=n, niter=niter, dt=dt, setup_time=setup_time,
        mops=mops(n, niter, elapsed), cell_steps=float(n) ** 3 * niter,
    )  # fmt: skip
    return iteration_measurement(
        timing, elapsed=elapsed, path=path, summary=summary, metrics=metrics,
        reason=reason,
    )  # fmt: skip


KERNEL = KernelDeclaration(
    name="npb.lu",
    summary="NPB LU: SSOR steps of a 3-D flow problem (triangular sweeps).",
    description=__doc__,
    parameters=_adi.class_parameters(CLASSES),
    metrics=(
        *_adi.kernel_metrics(),
        Metric("xci", "1", "surface integral of the pressure"),
        Metric("integral_error", "1", "relative error of the surface integral"),
    ),
    checks=(_adi.ranks_fit("LU", CLASSES),),
    work=_work,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
