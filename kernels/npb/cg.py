"""NPB CG: inverse power method with conjugate-gradient solves on a random sparse
matrix.

Following the NAS Parallel Benchmarks specification of CG: the symmetric matrix
``A = sum_i ratio**(i-1) v_i v_i^T + (rcond - shift) I`` of order ``na``
(``ratio = rcond**(1/na)``, ``rcond = 0.1``) is built from ``na`` sparse random
vectors ``v_i`` with ``nonzer`` random positions and values drawn from NPB's
generator (seed 314159265, after one discarded draw) and a 0.5 at position ``i``
(:func:`make_matrix`, NPB's ``makea``/``sprnvc``/``vecset``/``sparse``). Then
``niter`` times: ``z`` solves ``A z = x`` approximately by 25 conjugate-gradient
steps, ``zeta = shift + 1 / (x . z)`` and ``x = z / ||z||``. One untimed iteration
comes first, as in NPB.

Rank 0 builds the matrix and scatters contiguous row blocks (untimed set-up, like
NPB's); every CG step gathers the search direction on all ranks (``Allgatherv``) for
the row-block product and adds the dot products (``Allreduce``). Verification is
NPB's: ``zeta`` of the last iteration within a relative 1e-10 of the class's value; a
failed check makes the point ``invalid``.

Classes (``--class``; ``na``, ``nonzer``, ``niter``, ``shift``): S (1400, 7, 15, 10),
W (7000, 8, 15, 12), A (14000, 11, 15, 20), B (75000, 13, 75, 60), C (150000, 15,
75, 110). ``--na``, ``--nonzer``, ``--niter`` and ``--shift`` replace the class's
values (NPB's class ``U``, e.g. an order between A and B whose matrix outgrows a
cache that A's fits in). NPB has no ``zeta`` for such a problem; rank 0 computes
one in the untimed set-up (:func:`reference_zeta`: the same inverse power method
with every system solved to round-off by scipy's MINRES on the whole matrix), and
the check is the same 1e-10. Where MINRES does not converge there is nothing to
compare with, and ``verified`` is NaN.

Run as ``mpiexec -n 4 python -m scaleprobe.kernels.npb.cg --class S --throttle
emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scaleprobe.kernels.comm import add_comm_arguments  # noqa: E402
from scaleprobe.kernels.npb._cg_problem import (  # noqa: E402
    CLASSES,
    make_matrix,
    reference_zeta,
)

__all__ = [
    "CLASSES",
    "build_parser",
    "conjugate_gradient",
    "main",
    "make_matrix",
    "reference_zeta",
]

KERNEL = "npb.cg"
CG_STEPS = 25
EPSILON = 1e-10


def conjugate_gradient(block, x, gather, dot):
    """NPB's ``conj_grad`` on a row block: 25 CG steps, then ``||x - A z||``.

    Parameters
    ----------
    block : scipy.sparse.csr_matrix
        This rank's rows of ``A`` (all columns).
    x : numpy.ndarray
        This rank's part of ``x``.
    gather : callable
        ``gather(part) -> whole vector`` (an Allgatherv).
    dot : callable
        ``dot(local values) -> global sums`` (an Allreduce).

    Returns
    -------
    tuple of (numpy.ndarray, float)
        This rank's part of ``z`` and the residual norm.
    """
    z = np.zeros_like(x)
    r = x.copy()
    p = r.copy()
    (rho,) = dot([r @ r])
    for _ in range(CG_STEPS):
        q = block @ gather(p)
        (d,) = dot([p @ q])
        alpha = rho / d
        z += alpha * p
        r -= alpha * q
        rho0 = rho
        (rho,) = dot([r @ r])
        p = r + (rho / rho0) * p
    residual = x - block @ gather(z)
    (norm,) = dot([residual @ residual])
    return z, math.sqrt(norm)


def _problem(parser, args):
    """``(class name, na, nonzer, niter, shift, reference)``: the class's, or class U
    with the values given (reference None: computed by :func:`reference_zeta`)."""
    *values, reference = CLASSES[args.problem_class]
    given = [getattr(args, name) for name in ("na", "nonzer", "niter", "shift")]
    if all(value is None for value in given):
        return args.problem_class, *values, reference
    na, nonzer, niter, shift = (
        value if value is not None else default
        for value, default in zip(given, values, strict=True)
    )
    if not 100 <= na < 2**31:
        parser.error(f"--na must be in [100, 2**31), got {na}")
    if not 1 <= nonzer < na:
        parser.error(f"--nonzer must be at least 1 and below --na ({na}), got {nonzer}")
    if niter < 1:
        parser.error(f"--niter must be at least 1, got {niter}")
    if not math.isfinite(shift):
        parser.error(f"--shift must be a finite number, got {shift}")
    return "U", na, nonzer, niter, shift, None


def build_parser() -> argparse.ArgumentParser:
    """Command-line parser of the kernel.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=f"python -m scaleprobe.kernels.{KERNEL}",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "--class",
        dest="problem_class",
        choices=sorted(CLASSES),
        default="S",
        help="problem class (default S)",
    )
    for name, kind, what in (
        ("na", int, "order of the matrix"),
        ("nonzer", int, "random positions per generating vector"),
        ("niter", int, "power iterations"),
        ("shift", float, "diagonal shift"),
    ):
        parser.add_argument(
            f"--{name}",
            type=kind,
            default=None,
            help=f"{what} instead of the class's (class U, verified against "
            "a serial reference)",
        )
    parser.add_argument(
        "--counters",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="try hardware counters (default on)",
    )
    add_comm_arguments(parser)
    return parser


def _scatter_rows(comm, matrix, counts):
    """Rank 0's matrix to row blocks (untimed set-up); returns this rank's block."""
    na = int(counts.sum())
    starts = np.concatenate([[0], np.cumsum(counts)])
    if comm.rank == 0:
        nnz = np.diff(matrix.indptr[starts]).astype(np.int64)
        row_lengths = np.diff(matrix.indptr).astype(np.int64)
    else:
        nnz = row_lengths = None
    nnz = comm.bcast(nnz)
    lengths = np.empty(counts[comm.rank], dtype=np.int64)
    comm.Scatterv([row_lengths, counts] if comm.rank == 0 else None, lengths, root=0)
    indices = np.empty(nnz[comm.rank], dtype=np.int32)
    data = np.empty(nnz[comm.rank])
    comm.Scatterv(
        [matrix.indices.astype(np.int32), nnz] if comm.rank == 0 else None,
        indices,
        root=0,
    )
    comm.Scatterv([matrix.data, nnz] if comm.rank == 0 else None, data, root=0)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return sp.csr_matrix((data, indices, indptr), shape=(counts[comm.rank], na))


def main(argv=None) -> int:
    """Run CG, print the record on rank 0.

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        Exit code.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    name, na, nonzer, niter, shift, reference = _problem(parser, args)
    from mpi4py import MPI
    from scaleprobe.kernels.comm import InstrumentedComm
    from scaleprobe.kernels.iterative.profile import IterationProfile, build_record
    from scaleprobe.kernels.record import emit

    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
    counts = np.array(
        [na // comm.size + (r < na % comm.size) for r in range(comm.size)]
    )
    setup = comm.sync()
    matrix = make_matrix(na, nonzer, shift) if comm.rank == 0 else None
    block = _scatter_rows(comm, matrix, counts)
    nnz = comm.allreduce(int(block.nnz))
    if reference is None and comm.rank == 0:
        reference = reference_zeta(matrix, niter, shift)
    del matrix
    setup_time = comm.elapsed_since(setup)
    profile = IterationProfile(
        comm, {"allgather": 8, "allreduce": 8}, counters=args.counters
    )
    whole = np.empty(na)
    others = comm.size > 1

    def gather(part):
        with profile.collective("allgather", jobs=(na - len(part)) * others):
            comm.Allgatherv(part, [whole, counts])
        return whole

    def dot(values):
        local = np.asarray(values, dtype=np.float64)
        total = np.empty_like(local)
        with profile.collective("allreduce", jobs=len(local) * others):
            comm.Allreduce(local, total, op=MPI.SUM)
        return total

    def power_iteration(x):
        # one compute region per iteration; the collectives inside pause it
        with profile.compute():
            z, rnorm = conjugate_gradient(block, x, gather, dot)
            xz, zz = dot([x @ z, z @ z])
            return z / math.sqrt(zz), shift + 1.0 / xz, rnorm

    mine = counts[comm.rank]
    power_iteration(np.ones(mine))  # untimed, as NPB
    profile.hardware.close()
    profile = IterationProfile(
        comm, {"allgather": 8, "allreduce": 8}, counters=args.counters
    )
    # the row block, the gathered vector and the six local vectors of conj_grad
    profile.working_set(
        block.data.nbytes
        + block.indices.nbytes
        + block.indptr.nbytes
        + whole.nbytes
        + 6 * 8 * mine
    )
    x = np.ones(mine)
    zeta = rnorm = math.nan
    start = comm.sync()
    origin = comm.path()
    for _ in range(niter):
        profile.next_iteration()
        x, zeta, rnorm = power_iteration(x)
    elapsed = comm.elapsed_since(start)
    path = comm.critical_path_since(origin)
    summary = comm.summary()
    timing = profile.result()
    if comm.rank == 0:
        params = {"class": name}
        if name == "U":  # a problem of one's own: what it was
            params.update(na=na, nonzer=nonzer, niter=niter, shift=shift)
        error = abs(zeta - reference) / abs(reference)
        reason = (
            ""
            if error <= EPSILON or math.isnan(reference)
            else (
                f"NPB CG verification failed: zeta={zeta!r}, expected {reference!r} "
                f"(relative error {error:.3g} > {EPSILON})"
            )
        )
        record = build_record(
            comm,
            KERNEL,
            timing,
            elapsed=elapsed,
            path=path,
            summary=summary,
            link=comm.link_record().to_dict(),
            params=params,
            metrics={
                "na": na,
                "nonzer": nonzer,
                "niter": niter,
                "shift": shift,
                "nnz": float(nnz),
                "zeta": zeta,
                "rnorm": rnorm,
                "zeta_reference": reference,
                "zeta_error": error,
                "verified": math.nan
                if math.isnan(reference)
                else (0.0 if reason else 1.0),
                "setup_time": setup_time,
            },
            units={
                "na": "1",
                "nonzer": "1",
                "niter": "1",
                "shift": "1",
                "nnz": "1",
                "zeta": "1",
                "rnorm": "1",
                "zeta_reference": "1",
                "zeta_error": "1",
                "verified": "1",
                "setup_time": "s",
            },
            long_names={
                "verified": "NPB verification: 1 passed, 0 failed, NaN no reference",
                "zeta_reference": "NPB's zeta of the class, or the serial reference's",
                "zeta_error": "relative error of zeta against the reference",
                "setup_time": "matrix generation and distribution, and class U's "
                "reference (untimed, as in NPB)",
            },
            reason=reason,
        )
        emit(record)
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
