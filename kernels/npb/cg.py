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
75, 110).

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
from scaleprobe.kernels.npb._random import randlc, stream  # noqa: E402

__all__ = ["CLASSES", "build_parser", "conjugate_gradient", "main", "make_matrix"]

KERNEL = "npb.cg"
#: (na, nonzer, niter, shift, zeta reference) per class.
CLASSES = {
    "S": (1400, 7, 15, 10.0, 8.5971775078648),
    "W": (7000, 8, 15, 12.0, 10.362595087124),
    "A": (14000, 11, 15, 20.0, 17.130235054029),
    "B": (75000, 13, 75, 60.0, 22.712745482631),
    "C": (150000, 15, 75, 110.0, 28.973605592845),
}
SEED = 314159265
RCOND = 0.1
CG_STEPS = 25
EPSILON = 1e-10


class _Draws:
    """NPB's generator read sequentially, a block of numbers at a time."""

    def __init__(self, state):
        self.state = state
        self.buffer, self.at = [], 0

    def next(self):
        if self.at == len(self.buffer):
            numbers = stream(self.state, 1 << 16)
            self.state = round(numbers[-1] * 2.0**46)
            self.buffer, self.at = numbers.tolist(), 0
        self.at += 1
        return self.buffer[self.at - 1]


def _sparse_vectors(na, nonzer):
    """NPB's ``sprnvc`` + ``vecset`` for every row: positions (1-based) and values."""
    nn1 = 2
    while nn1 < na:
        nn1 *= 2
    state, _ = randlc(SEED)  # CG draws (and discards) one number first
    draws = _Draws(state)
    width = nonzer + 1
    positions = np.zeros((na, width), dtype=np.int64)
    values = np.zeros((na, width))
    lengths = np.empty(na, dtype=np.int64)
    for row in range(na):
        chosen, picked = [], []
        while len(chosen) < nonzer:
            value = draws.next()
            where = int(nn1 * draws.next()) + 1
            if where <= na and where not in chosen:
                chosen.append(where)
                picked.append(value)
        if row + 1 in chosen:
            picked[chosen.index(row + 1)] = 0.5
        else:
            chosen.append(row + 1)
            picked.append(0.5)
        lengths[row] = len(chosen)
        positions[row, : len(chosen)] = chosen
        values[row, : len(chosen)] = picked
    return positions, values, lengths


def make_matrix(na: int, nonzer: int, shift: float, rcond: float = RCOND):
    """NPB CG's matrix ``A`` (``makea``), as a CSR matrix.

    Parameters
    ----------
    na : int
        Order.
    nonzer : int
        Random positions per generating vector.
    shift : float
        Diagonal shift.
    rcond : float, default=0.1

    Returns
    -------
    scipy.sparse.csr_matrix
        Sorted indices, duplicates summed.

    Examples
    --------
    >>> a = make_matrix(1400, 7, 10.0)
    >>> a.shape, bool(abs(a - a.T).max() < 1e-12)  # symmetric up to rounding
    ((1400, 1400), True)
    """
    positions, values, lengths = _sparse_vectors(na, nonzer)
    ratio = rcond ** (1.0 / na)
    sizes = np.multiply.accumulate(np.concatenate([[1.0], np.full(na - 1, ratio)]))
    width = positions.shape[1]
    valid = np.arange(width)[None, :] < lengths[:, None]
    pair = valid[:, :, None] & valid[:, None, :]
    scaled = values * sizes[:, None]
    entries = values[:, None, :] * scaled[:, :, None]  # [i, a, b] = v_b * (size v_a)
    rows = np.broadcast_to(positions[:, :, None], entries.shape)[pair] - 1
    cols = np.broadcast_to(positions[:, None, :], entries.shape)[pair] - 1
    data = entries[pair]
    diagonal = np.arange(na)
    rows = np.concatenate([rows, diagonal])
    cols = np.concatenate([cols, diagonal])
    data = np.concatenate([data, np.full(na, rcond - shift)])
    matrix = sp.coo_matrix((data, (rows, cols)), shape=(na, na)).tocsr()
    matrix.sum_duplicates()
    matrix.sort_indices()
    return matrix


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
    args = build_parser().parse_args(argv)
    from mpi4py import MPI
    from scaleprobe.kernels.comm import InstrumentedComm
    from scaleprobe.kernels.iterative.profile import IterationProfile, build_record
    from scaleprobe.kernels.record import emit

    na, nonzer, niter, shift, reference = CLASSES[args.problem_class]
    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
    counts = np.array(
        [na // comm.size + (r < na % comm.size) for r in range(comm.size)]
    )
    setup = comm.sync()
    matrix = make_matrix(na, nonzer, shift) if comm.rank == 0 else None
    block = _scatter_rows(comm, matrix, counts)
    nnz = comm.allreduce(int(block.nnz))
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
        error = abs(zeta - reference) / reference
        reason = (
            ""
            if error <= EPSILON
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
            link=comm.link_record(),
            params={"class": args.problem_class},
            metrics={
                "na": na,
                "nonzer": nonzer,
                "niter": niter,
                "shift": shift,
                "nnz": float(nnz),
                "zeta": zeta,
                "rnorm": rnorm,
                "zeta_error": error,
                "verified": 0.0 if reason else 1.0,
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
                "zeta_error": "1",
                "verified": "1",
                "setup_time": "s",
            },
            long_names={
                "verified": "NPB verification: 1 passed, 0 failed",
                "zeta_error": "relative error of zeta against NPB's value",
                "setup_time": "matrix generation and distribution (untimed, as in NPB)",
            },
            reason=reason,
        )
        emit(record)
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
