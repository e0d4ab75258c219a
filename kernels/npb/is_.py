"""NPB IS: parallel integer sort (bucket sort with key redistribution).

Following the NAS Parallel Benchmarks specification of IS: ``N`` keys in ``[0,
MAX_KEY)``, key ``i`` being ``floor(MAX_KEY/4 * (r_{4i+1} + r_{4i+2} + r_{4i+3} +
r_{4i+4}))`` of NPB's generator (seed 314159265). Each rank makes a contiguous slice
of the keys (its generator jumps there). Ten timed iterations ``it = 1..10`` each set
``key[it] = it`` and ``key[it + 10] = MAX_KEY - it`` and rank all keys:

1. every rank counts its keys per bucket (the top bits of the key);
2. ``Allreduce`` of the bucket counts (carrying the five test keys, as the MPI
   reference hides them there); contiguous bucket ranges are assigned to ranks so
   that each receives about ``N / p`` keys;
3. ``Alltoall`` of the send counts, then ``Alltoallv`` of the keys;
4. every rank counts its keys per value; the rank of a key is the number of keys
   below it over all ranks. The owner of each test key checks its rank against
   NPB's partial-verification table.

After the timed loop the keys are fully sorted and checked (in order on every rank
and across rank boundaries). NPB's verification passes when all 5 x 10 partial
checks and the full check pass; otherwise the point is ``invalid``.

Classes (``--class``): S (2**16 keys, MAX_KEY 2**11), W (2**20, 2**16), A (2**23,
2**19), B (2**25, 2**21), C (2**27, 2**23).

Run as ``mpiexec -n 4 python -m scaleprobe.kernels.npb.is_ --class S --throttle
emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

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
    "build_parser",
    "expected_rank",
    "integer_sort",
    "main",
    "make_keys",
]
#: (log2 keys, log2 MAX_KEY, log2 buckets) per class.
CLASSES = {
    "S": (16, 11, 9),
    "W": (20, 16, 10),
    "A": (23, 19, 10),
    "B": (25, 21, 10),
    "C": (27, 23, 10),
}
ITERATIONS = 10
SEED = 314159265
_TESTS = {
    "S": ((48427, 17148, 23627, 62548, 4431), (0, 18, 346, 64917, 65463)),
    "W": (
        (357773, 934767, 875723, 898999, 404505),
        (1249, 11698, 1039987, 1043896, 1048018),
    ),
    "A": (
        (2112377, 662041, 5336171, 3642833, 4250760),
        (104, 17523, 123928, 8288932, 8388264),
    ),
    "B": (
        (41869, 812306, 5102857, 18232239, 26860214),
        (33422937, 10244, 59149, 33135281, 99),
    ),
    "C": (
        (44172927, 72999161, 74326391, 129606274, 21736814),
        (61147, 882988, 266290, 133997595, 133525895),
    ),
}


def make_keys(problem_class: str, first: int, count: int) -> np.ndarray:
    """Keys ``first .. first + count - 1`` of a class, as NPB makes them.

    Examples
    --------
    >>> keys = make_keys("S", 0, 1 << 16)
    >>> bool(np.array_equal(keys[100:200], make_keys("S", 100, 100)))
    True
    >>> int(keys.min()) >= 0, int(keys.max()) < 2**11
    (True, True)
    """
    _, max_log2, _ = CLASSES[problem_class]
    numbers = stream(skip(SEED, 4 * first), 4 * count).reshape(count, 4)
    total = ((numbers[:, 0] + numbers[:, 1]) + numbers[:, 2]) + numbers[:, 3]
    return ((1 << max_log2) // 4 * total).astype(np.int64)


def expected_rank(problem_class: str, test: int, iteration: int) -> int:
    """NPB's partial-verification rank of test key ``test`` at ``iteration``.

    Examples
    --------
    >>> expected_rank("S", 0, 1), expected_rank("S", 4, 1)
    (1, 65462)
    """
    base = _TESTS[problem_class][1][test]
    if problem_class == "W":
        return base + (iteration - 2) if test < 2 else base - iteration
    if problem_class == "A":
        return base + (iteration - 1) if test <= 2 else base - (iteration - 1)
    if problem_class == "B":
        return base + iteration if test in (1, 2, 4) else base - iteration
    return base + iteration if test <= 2 else base - iteration  # S and C


def _assign_buckets(totals, keys_per_rank, size):
    """First bucket of every rank (and the end): contiguous, about N/p keys each."""
    cumulative = np.cumsum(totals)
    targets = keys_per_rank * np.arange(1, size)
    ends = np.searchsorted(cumulative, targets, side="left") + 1
    return np.concatenate([[0], np.minimum(ends, len(totals)), [len(totals)]])


class _Sorter:
    """One rank's part of IS: its keys and the ranking of one iteration."""

    def __init__(self, comm, problem_class):
        self.comm = comm
        self.problem_class = problem_class
        keys_log2, max_log2, buckets_log2 = CLASSES[problem_class]
        self.total = 1 << keys_log2
        self.max_key = 1 << max_log2
        self.buckets = 1 << buckets_log2
        self.shift = max_log2 - buckets_log2
        self.bucket_type = np.uint16 if buckets_log2 <= 16 else np.int64
        self.first = comm.rank * self.total // comm.size
        stop = (comm.rank + 1) * self.total // comm.size
        self.keys = make_keys(problem_class, self.first, stop - self.first)
        self.tests = np.array(_TESTS[problem_class][0])
        # every iteration's arrays but argsort's (numpy cannot sort into a given
        # array), made once: fresh ones have the operating system map and zero
        # their pages in every iteration (class A on one process, medians of five:
        # 1.30 s of system time, 0.93 with these; CPU 0.91x pairwise)
        self.bucket = np.empty(len(self.keys), dtype=self.bucket_type)
        self.ordered = np.empty_like(self.keys)
        self.received = np.empty(0, dtype=np.int64)
        self.offsets = np.empty(0, dtype=np.int64)

    def local_counts(self, iteration):
        """Modify the iteration's keys, count per bucket, append the test keys."""
        keys, first = self.keys, self.first
        for index, value in (
            (iteration, iteration),
            (iteration + ITERATIONS, self.max_key - iteration),
        ):
            if first <= index < first + len(keys):
                keys[index - first] = value
        bucket = np.right_shift(keys, self.shift, out=self.bucket, casting="unsafe")
        # a counting sort, as NPB's bucket sort: numpy's stable sort of integers of
        # at most 16 bits is a radix sort, linear in the keys (of int64, a merge sort)
        self.order = np.argsort(bucket, kind="stable")
        counts = np.bincount(bucket, minlength=self.buckets).astype(np.int64)
        self.per_bucket = counts
        hidden = np.zeros(len(self.tests), dtype=np.int64)
        mine = (self.tests >= first) & (self.tests < first + len(keys))
        hidden[mine] = keys[self.tests[mine] - first]
        return np.concatenate([counts, hidden])

    def split(self, totals):
        """Send counts per destination and the key range this rank receives."""
        edges = _assign_buckets(
            totals[: self.buckets], self.total // self.comm.size, self.comm.size
        )
        starts = edges[:-1]
        sends = np.add.reduceat(np.append(self.per_bucket, 0), starts)[: self.comm.size]
        sends[starts == edges[1:]] = 0
        self.low = int(edges[self.comm.rank]) << self.shift
        self.high = int(edges[self.comm.rank + 1]) << self.shift
        self.below = int(totals[: edges[self.comm.rank]].sum())
        return sends.astype(np.int64), np.take(self.keys, self.order, out=self.ordered)

    def receive_buffer(self, count):
        """An array for the ``count`` keys this rank receives (reused while large
        enough; grown with a margin, as a rank receives about as many each time)."""
        if len(self.received) < count:
            self.received = np.empty(count + count // 16, dtype=np.int64)
            self.offsets = np.empty_like(self.received)
        return self.received[:count]

    def rank_keys(self, received, totals, iteration):
        """Count the received keys; check the test keys this rank owns."""
        offsets = np.subtract(received, self.low, out=self.offsets[: len(received)])
        counts = np.bincount(offsets, minlength=self.high - self.low)
        cumulative = np.cumsum(counts, out=counts)
        self.last_received = received
        passed = failed = 0
        for test, key in enumerate(totals[self.buckets :]):
            if 0 < key < self.total and self.low < key <= self.high:
                rank = self.below + int(cumulative[key - 1 - self.low])
                if rank == expected_rank(self.problem_class, test, iteration):
                    passed += 1
                else:
                    failed += 1
        return passed, failed


def _ranking(comm, profile, sorter):
    """The timed region: ten iterations of counting, redistribution and ranking.

    Returns this rank's partial verifications passed and failed.
    """
    from mpi4py import MPI

    size = comm.size
    totals = np.empty(sorter.buckets + len(sorter.tests), dtype=np.int64)
    receives = np.empty(size, dtype=np.int64)
    checks = np.zeros(2, dtype=np.int64)
    others = size > 1
    for iteration in range(1, ITERATIONS + 1):
        profile.next_iteration()
        with profile.compute():
            counts = sorter.local_counts(iteration)
        with profile.collective("allreduce", jobs=len(counts) * others):
            comm.Allreduce(counts, totals, op=MPI.SUM)
        with profile.compute():
            sends, ordered = sorter.split(totals)
        with profile.collective("alltoall", jobs=size * (size - 1)):
            comm.Alltoall(sends, receives)
        received = sorter.receive_buffer(int(receives.sum()))
        with profile.collective(
            "alltoallv", jobs=int(sends.sum() - sends[comm.rank]) if others else 0
        ):
            comm.Alltoallv([ordered, sends], [received, receives])
        with profile.compute():
            checks += sorter.rank_keys(received, totals, iteration)
    return checks


def _full_verification(comm, sorter, checks):
    """NPB's full verification (untimed): sorted on every rank and across ranks.

    Collective; returns the partial verifications passed and the reasons of any
    failure (on rank 0; empty elsewhere).
    """
    ordered = np.sort(sorter.last_received)
    first_key = int(ordered[0]) if len(ordered) else None
    last_key = int(ordered[-1]) if len(ordered) else None
    edges = comm.allgather((first_key, last_key, len(ordered)))
    passed = comm.allreduce(int(checks[0]))
    failed = comm.allreduce(int(checks[1]))
    previous, out_of_order = -1, 0
    for low, high, count in edges:
        if count:
            out_of_order += int(low < previous)
            previous = high
    kept = sum(count for _, _, count in edges)
    expected = 5 * ITERATIONS
    reasons = []
    if passed != expected or failed:
        reasons.append(
            f"{passed} of {expected} partial verifications passed ({failed} failed)"
        )
    if out_of_order or kept != sorter.total:
        reasons.append(
            f"full verification failed: {out_of_order} rank boundaries "
            f"out of order, {kept} of {sorter.total} keys"
        )
    return passed, reasons


def integer_sort(comm, args):
    """Run IS (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        ``class`` and ``counters``.

    Returns
    -------
    Measurement or None
        On rank 0 (``invalid`` when NPB's verification fails); None elsewhere.
    """
    sorter = _Sorter(comm, args["class"])
    profile = IterationProfile(
        comm, {"allreduce": 8, "alltoall": 8, "alltoallv": 8}, counters=args.counters
    )
    # the rank's keys, their bucket order and the keys it receives (about as many)
    profile.working_set(sorter.keys.nbytes + 2 * 8 * len(sorter.keys))
    start = comm.sync()
    origin = comm.path()
    checks = _ranking(comm, profile, sorter)
    elapsed = comm.elapsed_since(start)
    path = comm.critical_path_since(origin)
    summary = comm.summary()
    timing = profile.result()
    passed, reasons = _full_verification(comm, sorter, checks)
    if comm.rank != 0:
        return None
    return iteration_measurement(
        timing,
        elapsed=elapsed,
        path=path,
        summary=summary,
        metrics={
            "keys": float(sorter.total),
            "max_key": float(sorter.max_key),
            "iterations": ITERATIONS,
            "partial_verified": passed,
            "verified": 0.0 if reasons else 1.0,
            "mops": ITERATIONS * sorter.total / elapsed / 1e6
            if elapsed > 0
            else float("nan"),
        },
        reason="; ".join(reasons),
    )


def working_set(args, ranks: int) -> float:
    """Bytes of one rank's keys, their bucket order and the keys it receives.

    Parameters
    ----------
    args : Arguments
        ``class``.
    ranks : int

    Returns
    -------
    float

    Examples
    --------
    >>> from scaleprobe.kernels.harness import Arguments
    >>> working_set(Arguments(**{"class": "S"}), 4)
    393216.0
    """
    keys = -(-(1 << CLASSES[args["class"]][0]) // ranks)
    return float(3 * 8 * keys)


KERNEL = KernelDeclaration(
    name="npb.is",
    summary="NPB IS: parallel integer sort (bucket sort with key redistribution).",
    description=__doc__,
    parameters=(
        Parameter(
            "class",
            "choice",
            "S",
            choices=sorted(CLASSES),
            help="problem class",
            sizes={c: {"total_keys": 2.0 ** CLASSES[c][0]} for c in CLASSES},
        ),
        Parameter("counters", "bool", True, help="try hardware counters"),
    ),
    metrics=(
        *iteration_metrics(("allreduce", "alltoall", "alltoallv")),
        Metric("keys", "1", "keys sorted"),
        Metric("max_key", "1", "keys lie in [0, max_key)"),
        Metric("iterations", "1", "iterations timed"),
        Metric("partial_verified", "1", "partial verifications passed (of 50)"),
        Metric("verified", "1", "NPB verification: 1 passed, 0 failed"),
        Metric("mops", "Mkeys/s", "millions of keys ranked per second"),
    ),
    working_set=working_set,
    work=integer_sort,
    module="scaleprobe.kernels.npb.is_",
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
