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

import math  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from scaleprobe.kernels.harness import KernelDeclaration, Metric, Parameter  # noqa: E402
from scaleprobe.kernels.iterative.profile import (  # noqa: E402
    IterationProfile,
    iteration_measurement,
    iteration_metrics,
)
from scaleprobe.kernels.npb._random import randlc, stream  # noqa: E402

__all__ = [
    "CLASSES",
    "KERNEL",
    "RCOND",
    "SEED",
    "build_parser",
    "conjugate_gradient",
    "inverse_power",
    "main",
    "make_matrix",
    "problem",
    "reference_zeta",
]

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
#: MINRES steps allowed per solve of the reference (20 times NPB's 25 CG steps).
_MINRES_STEPS = 500


#: Non-zeros of each class's matrix (:func:`make_matrix`; with ``na`` what a class
#: stands for as a size: the allgather moves the order, a product reads the
#: non-zeros; and its ``niter``, the iterations timed, ``stages``: classes B and C
#: run 75, the others 15).
NONZEROS = {
    "S": 78148,
    "W": 508402,
    "A": 1853104,
    "B": 13708072,
    "C": 36121058,
}


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
        z, info = minres(matrix, x, rtol=1e-15, maxiter=_MINRES_STEPS)
        xz, zz = float(x @ z), float(z @ z)
        if info != 0 or xz == 0.0 or not (math.isfinite(xz) and zz > 0.0):
            return math.nan
        zeta = shift + 1.0 / xz
        x = z / math.sqrt(zz)
    return float(zeta)


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


def problem(args):
    """``(class name, na, nonzer, niter, shift, reference)`` of the parameters: the
    class's, or class U with the values given (reference None: computed by
    :func:`reference_zeta`).

    Parameters
    ----------
    args : Arguments
        ``class``, ``na``, ``nonzer``, ``niter``, ``shift``.

    Returns
    -------
    tuple

    Examples
    --------
    >>> from scaleprobe.kernels.harness import Arguments
    >>> problem(Arguments(**{"class": "S"}, na=None, nonzer=None, niter=None,
    ...                   shift=None))
    ('S', 1400, 7, 15, 10.0, 8.5971775078648)
    >>> problem(Arguments(**{"class": "S"}, na=3000, nonzer=None, niter=None,
    ...                   shift=None))
    ('U', 3000, 7, 15, 10.0, None)
    """
    *values, reference = CLASSES[args["class"]]
    given = [getattr(args, name) for name in ("na", "nonzer", "niter", "shift")]
    if all(value is None for value in given):
        return args["class"], *values, reference
    chosen = (
        value if value is not None else default
        for value, default in zip(given, values, strict=True)
    )
    return "U", *chosen, None


def _nonzer_below_na(args) -> str:
    """Why ``--nonzer`` does not fit the matrix, or ``""`` (a declared validation)."""
    _, na, nonzer, *_ = problem(args)
    if nonzer < na:
        return ""
    return f"--nonzer must be at least 1 and below --na ({na}), got {nonzer}"


def _set_up(comm, na, nonzer, shift, reference, niter):
    """Rank 0 builds the matrix and, for class U, its reference; scatter the rows.

    Returns this rank's row block, the global non-zeros, the reference and the
    set-up's time (untimed, as in NPB).
    """
    counts = np.array(
        [na // comm.size + (r < na % comm.size) for r in range(comm.size)]
    )
    setup = comm.sync()
    matrix = make_matrix(na, nonzer, shift) if comm.rank == 0 else None
    block = _scatter_rows(comm, matrix, counts)
    nnz = comm.allreduce(int(block.nnz))
    if reference is None and comm.rank == 0:
        reference = reference_zeta(matrix, niter, shift)
    return counts, block, nnz, reference, comm.elapsed_since(setup)


def _power_iteration(comm, profile, block, counts, shift):
    """One step of the inverse power method with its gathers and dot products."""
    from mpi4py import MPI

    whole = np.empty(int(counts.sum()))
    others = comm.size > 1

    def gather(part):
        with profile.collective("allgather", jobs=(len(whole) - len(part)) * others):
            comm.Allgatherv(part, [whole, counts])
        return whole

    def dot(values):
        local = np.asarray(values, dtype=np.float64)
        total = np.empty_like(local)
        with profile.collective("allreduce", jobs=len(local) * others):
            comm.Allreduce(local, total, op=MPI.SUM)
        return total

    def step(x):
        # one compute region per iteration; the collectives inside pause it
        with profile.compute():
            z, rnorm = conjugate_gradient(block, x, gather, dot)
            xz, zz = dot([x @ z, z @ z])
            return z / math.sqrt(zz), shift + 1.0 / xz, rnorm

    return step


def _verification(zeta, reference):
    """The relative error, NPB's verdict (1, 0 or NaN) and why it failed."""
    error = abs(zeta - reference) / abs(reference)
    if error <= EPSILON or math.isnan(reference):
        return error, (math.nan if math.isnan(reference) else 1.0), ""
    return (
        error,
        0.0,
        (
            f"NPB CG verification failed: zeta={zeta!r}, expected {reference!r} "
            f"(relative error {error:.3g} > {EPSILON})"
        ),
    )


def inverse_power(comm, args):
    """Run CG (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        ``class`` or a problem of one's own (``na``, ``nonzer``, ``niter``,
        ``shift``), and ``counters``.

    Returns
    -------
    Measurement or None
        On rank 0 (``invalid`` when NPB's verification fails); None elsewhere.
    """
    name, na, nonzer, niter, shift, reference = problem(args)
    counts, block, nnz, reference, setup_time = _set_up(
        comm, na, nonzer, shift, reference, niter
    )
    kinds = {"allgather": 8, "allreduce": 8}
    mine = counts[comm.rank]
    untimed = IterationProfile(comm, kinds, counters=args.counters)
    _power_iteration(comm, untimed, block, counts, shift)(np.ones(mine))  # as NPB
    untimed.hardware.close()
    profile = IterationProfile(comm, kinds, counters=args.counters)
    # the row block, the gathered vector and the six local vectors of conj_grad
    profile.working_set(
        block.data.nbytes
        + block.indices.nbytes
        + block.indptr.nbytes
        + 8 * na
        + 6 * 8 * mine
    )
    step = _power_iteration(comm, profile, block, counts, shift)
    x = np.ones(mine)
    zeta = rnorm = math.nan
    start = comm.sync()
    origin = comm.path()
    for _ in range(niter):
        profile.next_iteration()
        x, zeta, rnorm = step(x)
    elapsed = comm.elapsed_since(start)
    path = comm.critical_path_since(origin)
    summary = comm.summary()
    timing = profile.result()
    if comm.rank != 0:
        return None
    error, verified, reason = _verification(zeta, reference)
    parameters = {"class": name}
    if name == "U":  # a problem of one's own: what it was
        parameters.update(na=na, nonzer=nonzer, niter=niter, shift=shift)
    return iteration_measurement(
        timing,
        elapsed=elapsed,
        path=path,
        summary=summary,
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
            "verified": verified,
            "setup_time": setup_time,
        },
        reason=reason,
        parameters=parameters,
    )


def _own(name, kind, what, **bounds):
    return Parameter(
        name,
        kind,
        None,
        help=f"{what} instead of the class's (class U, verified against a serial "
        "reference)",
        **bounds,
    )


KERNEL = KernelDeclaration(
    name="npb.cg",
    summary="NPB CG: inverse power method with conjugate-gradient solves on a "
    "random sparse matrix.",
    description=__doc__,
    parameters=(
        Parameter(
            "class",
            "choice",
            "S",
            choices=sorted(CLASSES),
            help="problem class",
            sizes={
                c: {"na": CLASSES[c][0], "nnz": NONZEROS[c], "stages": CLASSES[c][2]}
                for c in CLASSES
            },
        ),
        _own(
            "na",
            "int",
            "order of the matrix",
            minimum=100,
            maximum=2**31,
            exclusive_maximum=True,
        ),
        _own("nonzer", "int", "random positions per generating vector", minimum=1),
        _own("niter", "int", "power iterations", minimum=1),
        _own("shift", "float", "diagonal shift"),
        Parameter("counters", "bool", True, help="try hardware counters"),
    ),
    metrics=(
        *iteration_metrics(("allgather", "allreduce")),
        Metric("na", "1", "order of the matrix"),
        Metric("nonzer", "1", "random positions per generating vector"),
        Metric("niter", "1", "power iterations"),
        Metric("shift", "1", "diagonal shift"),
        Metric("nnz", "1", "non-zeros of the matrix"),
        Metric("zeta", "1", "zeta of the last iteration"),
        Metric("rnorm", "1", "residual norm of the last solve"),
        Metric(
            "zeta_reference", "1", "NPB's zeta of the class, or the serial reference's"
        ),
        Metric("zeta_error", "1", "relative error of zeta against the reference"),
        Metric(
            "verified", "1", "NPB verification: 1 passed, 0 failed, NaN no reference"
        ),
        Metric(
            "setup_time",
            "s",
            "matrix generation and distribution, and class U's reference (untimed, "
            "as in NPB)",
        ),
    ),
    validate=_nonzer_below_na,
    work=inverse_power,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
