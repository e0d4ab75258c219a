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

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.comm import (  # noqa: E402
    InstrumentedComm,
    add_comm_arguments,
)
from scaleprobe.kernels.record import emit  # noqa: E402
from scaleprobe.kernels.schema import SUMMARY_UNITS  # noqa: E402

__all__ = ["WORK_KINDS", "build_parser", "do_work", "main"]

KERNEL = "commbench.compute"
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
        "--work",
        choices=WORK_KINDS,
        default="cache",
        help="cache-resident or memory-bound work (default cache)",
    )
    parser.add_argument(
        "--total-work",
        type=int,
        default=2000,
        help="units of work over all ranks (default 2000)",
    )
    add_comm_arguments(parser)
    return parser


def main(argv=None) -> int:
    """Do the work, allreduce the checksums, print the record on rank 0.

    Parameters
    ----------
    argv : list of str, optional
        Command line (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        Exit code.
    """
    args = build_parser().parse_args(argv)
    if args.total_work < 0:
        raise SystemExit(f"--total-work must be >= 0, got {args.total_work}")
    from mpi4py import MPI

    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
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
    if comm.rank == 0:
        metrics = {
            **summary,
            "elapsed": elapsed,
            "work_units": args.total_work,
            "max_cpu_per_unit": cpu_per_unit,
            "checksum": float(total[0]),
        }
        units_of = {
            **SUMMARY_UNITS,
            "elapsed": "s",
            "work_units": "1",
            "max_cpu_per_unit": "s",
            "checksum": "1",
        }
        emit(
            {
                "kernel": KERNEL,
                "status": "ok",
                "metrics": metrics,
                "units": units_of,
                "link": comm.link_record().to_dict(),
                "long_names": {
                    "elapsed": "time of the work phase (max over ranks)",
                    "max_cpu_per_unit": "largest CPU seconds per unit",
                },
            }
        )
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
