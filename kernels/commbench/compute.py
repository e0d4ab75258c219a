"""A fixed amount of CPU work split evenly over the ranks, then one Allreduce.

The honest check of virtual time: in emulated mode each rank's clock advances by its
own CPU time, so strong-scaling speedups come out right even when many ranks share
few cores. Two kinds of work:

- ``cache``: one unit is 256 passes of ``a = a * s + b`` over two 64 KiB float64
  arrays (cache resident, about 1 ms of CPU on a current core);
- ``memory``: one unit is one streaming pass ``c = a * s + b`` over three 8 MB
  float64 arrays (memory-bandwidth bound, about 1.5 ms here).

Co-scheduled ranks share caches and memory bandwidth, so memory-bound CPU times grow
with oversubscription; core slots (``--core-slots``) limit how many ranks compute at
once. Run as ``mpiexec -n 4 python -m scaleprobe.kernels.commbench.compute --work
cache --total-work 2000 --throttle emulated``.
"""

from __future__ import annotations

import os

# One BLAS/OpenMP thread, so a rank's CPU time is its own work (set before numpy).
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import (  # noqa: E402
    KernelDeclaration,
    Measurement,
    Metric,
    Parameter,
)

__all__ = ["KERNEL", "WORK_KINDS", "build_parser", "do_work", "main", "split_work"]

WORK_KINDS = ("cache", "memory")
_CACHE_ELEMENTS = 8192  # 64 KiB of float64
_CACHE_PASSES = 256
_MEMORY_ELEMENTS = 1 << 20  # 8 MiB of float64


def do_work(kind: str, units: int) -> float:
    """Do ``units`` units of work of one kind.

    Parameters
    ----------
    kind : {"cache", "memory"}
        Work kind (see the module docstring).
    units : int
        Amount of work.

    Returns
    -------
    float
        A checksum, so the work cannot be optimised away.

    Examples
    --------
    >>> do_work("cache", 1) > 0
    True
    """
    if kind not in WORK_KINDS:
        raise ValueError(f"work kind must be one of {WORK_KINDS}, got {kind!r}")
    elements = _CACHE_ELEMENTS if kind == "cache" else _MEMORY_ELEMENTS
    a = np.linspace(0.0, 1.0, elements)
    b = np.full(elements, 0.5)
    if kind == "cache":
        for _ in range(units * _CACHE_PASSES):
            np.multiply(a, 0.999, out=a)
            np.add(a, b, out=a)
        return float(a.sum())
    c = np.empty(elements)
    for _ in range(units):
        np.multiply(a, 0.999, out=c)
        np.add(c, b, out=c)
    return float(c.sum())


def split_work(comm, args) -> Measurement | None:
    """Do this rank's share of the work, then allreduce the checksums (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        ``work`` and ``total_work``.

    Returns
    -------
    Measurement or None
        The measurement on rank 0, None elsewhere.
    """
    from mpi4py import MPI

    units = args.total_work // comm.size + (comm.rank < args.total_work % comm.size)
    start = comm.sync()
    cpu_start = time.process_time()
    checksum = np.array([do_work(args.work, units)])
    cpu = time.process_time() - cpu_start
    total = np.empty(1)
    comm.Allreduce(checksum, total, op=MPI.SUM)
    elapsed = comm.elapsed_since(start)
    cpu_per_unit = comm.allreduce(cpu / units if units else 0.0, op=MPI.MAX)
    summary = comm.summary()
    if comm.rank != 0:
        return None
    return Measurement(
        metrics={
            "elapsed": elapsed,
            "work_units": args.total_work,
            "max_cpu_per_unit": cpu_per_unit,
            "checksum": float(total[0]),
        },
        summary=summary,
    )


KERNEL = KernelDeclaration(
    name="commbench.compute",
    summary="A fixed amount of CPU work split evenly over the ranks, then one "
    "Allreduce.",
    description=__doc__,
    parameters=(
        Parameter(
            "work",
            "choice",
            "cache",
            choices=WORK_KINDS,
            help="cache-resident or memory-bound work",
        ),
        Parameter(
            "total_work", "int", 2000, minimum=0, help="units of work over all ranks"
        ),
    ),
    metrics=(
        Metric("elapsed", "s", "time of the work phase (max over ranks)"),
        Metric("work_units", "1", "units of work over all ranks"),
        Metric("max_cpu_per_unit", "s", "largest CPU seconds per unit"),
        Metric("checksum", "1", "sum of the ranks' checksums"),
    ),
    work=split_work,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
