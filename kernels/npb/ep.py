"""NPB EP: Gaussian pairs by the Marsaglia polar method, embarrassingly parallel.

Following the NAS Parallel Benchmarks specification of EP: ``2**(M+1)`` numbers of
NPB's generator (:mod:`._random`, seed 271828183) form ``2**M`` pairs ``(x, y) =
(2 r_{2j-1} - 1, 2 r_{2j} - 1)``; a pair with ``t = x**2 + y**2 <= 1`` gives the
Gaussian deviates ``X = x sqrt(-2 ln t / t)``, ``Y = y sqrt(-2 ln t / t)``. The
benchmark sums ``X`` and ``Y`` and counts the pairs in each square annulus ``l <=
max(|X|, |Y|) < l + 1``. The pairs come in batches of ``2**16``; each rank takes a
contiguous range of batches (its generator jumps there directly), and one
``Allreduce`` adds the sums and counts.

Classes (``--class``): S (M = 24), W (25), A (28), B (30), C (32); ``--m`` sets
another size. Verification is NPB's: both sums within a relative 1e-8 of the
reference values of the class; a failed check makes the point ``invalid``. Sizes
without a reference value are reported with ``verified`` NaN.

Run as ``mpiexec -n 4 python -m scaleprobe.kernels.npb.ep --class S --throttle
emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import math  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import KernelDeclaration, Metric, Parameter  # noqa: E402
from scaleprobe.kernels.iterative.profile import (  # noqa: E402
    IterationProfile,
    iteration_measurement,
    iteration_metrics,
)
from scaleprobe.kernels.npb._random import skip, stream  # noqa: E402

__all__ = [
    "CLASSES",
    "KERNEL",
    "REFERENCE",
    "build_parser",
    "ep",
    "ep_sums",
    "main",
    "verify",
]
#: log2 of the pairs of each class.
CLASSES = {"S": 24, "W": 25, "A": 28, "B": 30, "C": 32}
#: NPB's reference sums ``(sx, sy)`` by M.
REFERENCE = {
    24: (-3.247834652034740e3, -6.958407078382297e3),
    25: (-2.863319731645753e3, -6.320053679109499e3),
    28: (-4.295875165629892e3, -1.580732573678431e4),
    30: (4.033815542441498e4, -2.660669192809235e4),
    32: (4.764367927995374e4, -8.084072988043731e4),
}
SEED = 271828183
BATCH_LOG2 = 16
ANNULI = 10
EPSILON = 1e-8
#: Batches drawn at once. One batch, NPB's own ``NK = 2**16`` pairs, keeps the
#: workspace (5.8 MB) in the cache and its first touch small: with 8 a rank's
#: workspace was 46 MB, EP ran from memory (2**26 pairs on one process: 0.93 s of CPU
#: against 0.61 s) and the ~9,500 page faults of its first touch cost a rank of class
#: S on 8 ranks 7-60 ms of system time, varying from rank to rank, on 32 batches of
#: 25 ms.
_CHUNK_BATCHES = 1


def ep_sums(m: int, first: int, batches: int) -> np.ndarray:
    """EP over ``batches`` batches of ``2**16`` pairs from batch ``first``.

    Parameters
    ----------
    m : int
        log2 of all pairs (only bounds the batches).
    first : int
        First batch (0-based).
    batches : int
        Number of batches.

    Returns
    -------
    numpy.ndarray of shape (12,)
        ``sx``, ``sy``, then the counts of the 10 annuli.

    Examples
    --------
    >>> whole = ep_sums(17, 0, 2)
    >>> halves = ep_sums(17, 0, 1) + ep_sums(17, 1, 1)
    >>> bool(np.allclose(whole, halves, rtol=1e-12))
    True
    """
    total = 1 << max(m - BATCH_LOG2, 0)
    if first < 0 or batches < 0 or first + batches > total:
        raise ValueError(
            f"batches [{first}, {first + batches}) outside the {total} batches of M={m}"
        )
    pair_count = 1 << min(m, BATCH_LOG2)
    out = np.zeros(2 + ANNULI)
    work = _Workspace(pair_count * min(_CHUNK_BATCHES, max(batches, 1)))
    for start in range(first, first + batches, _CHUNK_BATCHES):
        count = min(_CHUNK_BATCHES, first + batches - start)
        out += work.chunk(skip(SEED, 2 * pair_count * start), pair_count * count)
    return out


def _integers(pairs):
    """Scratch integers of :func:`~scaleprobe.kernels.npb._random.stream` for
    ``2 * pairs`` numbers (one block of its powers at most)."""
    return min(2 * pairs, 1 << 20)


class _Workspace:
    """The arrays of one chunk of pairs, allocated once and reused by every chunk.

    Fresh arrays per chunk made the operating system map and zero new pages for
    every chunk: 2**26 pairs on one process (median of 7) took 2.08 s of CPU, 0.39
    of them in the kernel, against 1.52 and 0.05 with this workspace; the time of
    zeroing pages measures the host's memory management, not EP, and varies from
    process to process. NPB's EP also draws into one fixed array.
    """

    def __init__(self, pairs):
        self.numbers = np.empty(2 * pairs)
        self.integers = np.empty(_integers(pairs), dtype=np.uint64)
        self.x, self.y, self.t, self.u, self.gx, self.gy = (
            np.empty(pairs) for _ in range(6)
        )
        self.keep = np.empty(pairs, dtype=bool)
        self.annulus = np.empty(pairs, dtype=np.int64)

    @staticmethod
    def footprint(pairs):
        """Bytes of the arrays of a workspace for ``pairs`` pairs."""
        return 8 * (2 * pairs + _integers(pairs) + 6 * pairs) + 9 * pairs

    def chunk(self, seed, pairs):
        """Sums and annulus counts of the ``pairs`` pairs after ``seed``."""
        numbers = stream(seed, 2 * pairs, out=self.numbers, work=self.integers)
        x, y, t, u = self.x[:pairs], self.y[:pairs], self.t[:pairs], self.u[:pairs]
        np.multiply(numbers[0::2], 2.0, out=x)
        np.subtract(x, 1.0, out=x)
        np.multiply(numbers[1::2], 2.0, out=y)
        np.subtract(y, 1.0, out=y)
        np.multiply(x, x, out=t)
        np.multiply(y, y, out=u)
        np.add(t, u, out=t)
        keep = np.less_equal(t, 1.0, out=self.keep[:pairs])
        kept = int(np.count_nonzero(keep))
        # the accepted pairs: x, y into gx, gy, t into u (never in place, which
        # numpy would buffer); the Gaussian factor in t's storage
        gx = np.compress(keep, x, out=self.gx[:kept])
        gy = np.compress(keep, y, out=self.gy[:kept])
        accepted = np.compress(keep, t, out=u[:kept])
        factor = np.log(accepted, out=t[:kept])
        np.multiply(factor, -2.0, out=factor)
        np.divide(factor, accepted, out=factor)
        np.sqrt(factor, out=factor)
        np.multiply(gx, factor, out=gx)
        np.multiply(gy, factor, out=gy)
        sums = np.zeros(2 + ANNULI)
        sums[0], sums[1] = gx.sum(), gy.sum()
        largest = np.maximum(np.abs(gx, out=gx), np.abs(gy, out=gy), out=gx)
        annulus = self.annulus[:kept]
        np.copyto(annulus, largest, casting="unsafe")  # truncation: floor (>= 0)
        sums[2:] = np.bincount(annulus, minlength=ANNULI)[:ANNULI]
        return sums


def verify(m: int, sx: float, sy: float) -> float:
    """NPB's check: 1.0 passed, 0.0 failed, NaN when M has no reference value.

    Examples
    --------
    >>> verify(24, -3.247834652034740e3, -6.958407078382297e3)
    1.0
    >>> verify(24, -3.2478e3, -6.958407078382297e3), math.isnan(verify(20, 0, 0))
    (0.0, True)
    """
    if m not in REFERENCE:
        return math.nan
    rx, ry = REFERENCE[m]
    good = abs((sx - rx) / rx) <= EPSILON and abs((sy - ry) / ry) <= EPSILON
    return 1.0 if good else 0.0


def _sums(comm, profile, m):
    """The timed region: this rank's batches, then one Allreduce of the sums."""
    from mpi4py import MPI

    total = 1 << (m - BATCH_LOG2)
    mine = total // comm.size + (comm.rank < total % comm.size)
    first = comm.rank * (total // comm.size) + min(comm.rank, total % comm.size)
    result = np.empty(2 + ANNULI)
    profile.next_iteration()
    with profile.compute():
        partial = ep_sums(m, first, mine)
    with profile.collective("allreduce", jobs=(2 + ANNULI) * (comm.size > 1)):
        comm.Allreduce(partial, result, op=MPI.SUM)
    return result


def _verification(m, sx, sy):
    """NPB's verdict (1, 0 or NaN) and why it failed (``""`` if it did not)."""
    verified = verify(m, sx, sy)
    if verified != 0.0:
        return verified, ""
    rx, ry = REFERENCE[m]
    return verified, (
        f"NPB EP verification failed: sx={sx!r} (expected {rx!r}), "
        f"sy={sy!r} (expected {ry!r}), tolerance {EPSILON}"
    )


def ep(comm, args):
    """Run EP (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        ``class``, ``m`` (instead of the class's) and ``counters``.

    Returns
    -------
    Measurement or None
        On rank 0 (``invalid`` when NPB's verification fails); None elsewhere.
    """
    m = CLASSES[args["class"]] if args.m is None else args.m
    profile = IterationProfile(comm, {"allreduce": 8}, counters=args.counters)
    # the arrays of a chunk of batches, reused by every chunk, whatever the class
    profile.working_set(_Workspace.footprint(_CHUNK_BATCHES << BATCH_LOG2))
    start = comm.sync()
    origin = comm.path()
    result = _sums(comm, profile, m)
    elapsed = comm.elapsed_since(start)
    path = comm.critical_path_since(origin)
    summary = comm.summary()
    timing = profile.result()
    if comm.rank != 0:
        return None
    sx, sy = float(result[0]), float(result[1])
    verified, reason = _verification(m, sx, sy)
    return iteration_measurement(
        timing,
        elapsed=elapsed,
        path=path,
        summary=summary,
        metrics={
            "m": m,
            "pairs": float(2**m),
            "sx": sx,
            "sy": sy,
            "accepted": float(result[2:].sum()),
            "verified": verified,
            "mops": 2.0 ** (m + 1) / elapsed / 1e6 if elapsed > 0 else math.nan,
        },
        profiles={"annulus": {"count": result[2:].tolist()}},
        reason=reason,
        parameters={
            "class": next((c for c, v in CLASSES.items() if v == m), "U"),
            "m": m,
        },
    )


KERNEL = KernelDeclaration(
    name="npb.ep",
    summary="NPB EP: Gaussian pairs by the Marsaglia polar method, embarrassingly "
    "parallel.",
    description=__doc__,
    parameters=(
        Parameter(
            "class",
            "choice",
            "S",
            choices=sorted(CLASSES),
            help="problem class",
            sizes={c: {"pairs": 2.0 ** CLASSES[c]} for c in CLASSES},
        ),
        Parameter(
            "m",
            "int",
            None,
            minimum=16,
            maximum=40,
            help="log2 of the pairs instead of the class's",
        ),
        Parameter("counters", "bool", True, help="try hardware counters"),
    ),
    metrics=(
        *iteration_metrics(["allreduce"]),
        Metric("m", "1", "log2 of the pairs"),
        Metric("pairs", "1", "pairs drawn"),
        Metric("sx", "1", "sum of the X deviates"),
        Metric("sy", "1", "sum of the Y deviates"),
        Metric("accepted", "1", "pairs inside the unit circle"),
        Metric(
            "verified",
            "1",
            "NPB verification: 1 passed, 0 failed, NaN no reference value",
        ),
        Metric("mops", "Mop/s", "millions of random numbers per second"),
        Metric("count", "1", "pairs in the square annulus", per="annulus"),
    ),
    working_set=lambda args, ranks: _Workspace.footprint(_CHUNK_BATCHES << BATCH_LOG2),
    work=ep,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
