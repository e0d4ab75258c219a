"""NPB CG's problem: its classes, its matrix, and the reference answer of a class U.

What the problem is, apart from how the ranks solve it
(:mod:`scaleprobe.kernels.npb.cg`, which re-exports these names). Imports only numpy
and scipy, as a kernel's modules do.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scaleprobe.kernels.npb._random import randlc, stream

__all__ = ["CLASSES", "RCOND", "SEED", "make_matrix", "reference_zeta"]

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
