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
from scaleprobe.kernels.npb._random import randlc, stream  # noqa: E402

__all__ = [
    "CLASSES",
    "build_parser",
    "conjugate_gradient",
    "main",
    "make_matrix",
    "reference_zeta",
]

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


def reference_zeta(matrix, niter: int, shift: float) -> float:
    """``zeta`` of NPB's inverse power method with exact solves, serially.

    The reference of a problem NPB gives no value for: ``niter`` times, ``z`` solves
    ``A z = x`` by scipy's MINRES to a relative residual of 1e-15 (round-off; NPB's
    25 CG steps reach about 1e-15 too), ``zeta = shift + 1 / (x . z)``, ``x = z /
    ||z||``, from ``x = 1``. Different code from :func:`conjugate_gradient` (another
    Krylov method, on the whole matrix, without the ranks' gathers and sums), so an
    error of the decomposition or of the collectives shows as a difference. On NPB's
    classes S, W and A it gives NPB's ``zeta`` within 1e-13.

    Parameters
    ----------
    matrix : scipy.sparse.csr_matrix
        The whole matrix (:func:`make_matrix`).
    niter : int
        Power iterations.
    shift : float
        The diagonal shift the matrix was made with.

    Returns
    -------
    float
        ``zeta`` after ``niter`` iterations; NaN when a solve did not converge.

    Examples
    --------
    >>> na, nonzer, niter, shift, npb = CLASSES["S"]
    >>> zeta = reference_zeta(make_matrix(na, nonzer, shift), niter, shift)
    >>> bool(abs(zeta - npb) / npb < 1e-12)
    True
    """
    from scipy.sparse.linalg import minres

    x = np.ones(matrix.shape[0])
    zeta = math.nan
    for _ in range(niter):
        z, info = minres(matrix, x, rtol=1e-15, maxiter=20 * CG_STEPS)
        xz, zz = float(x @ z), float(z @ z)
        if info != 0 or xz == 0.0 or not (math.isfinite(xz) and zz > 0.0):
            return math.nan
        zeta = shift + 1.0 / xz
        x = z / math.sqrt(zz)
    return float(zeta)


def _problem(parser, args):
    """``(class name, na, nonzer, niter, shift, reference)``: the class's, or class U
    with the values given (reference None: computed by :func:`reference_zeta`)."""
    na, nonzer, niter, shift, reference = CLASSES[args.problem_class]
    given = {
        name: getattr(args, name)
        for name in ("na", "nonzer", "niter", "shift")
        if getattr(args, name) is not None
    }
    if not given:
        return args.problem_class, na, nonzer, niter, shift, reference
    na = given.get("na", na)
    nonzer = given.get("nonzer", nonzer)
    niter = given.get("niter", niter)
    shift = given.get("shift", shift)
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
            link=comm.link_record(),
            params={"class": name}
            if name != "U"
            else {
                "class": name,
                "na": na,
                "nonzer": nonzer,
                "niter": niter,
                "shift": shift,
            },
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
