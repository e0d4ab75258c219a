"""A kernel that misbehaves on request, to exercise how sweeps survive failures.

Run as ``python -m scaleprobe.kernels.commbench.fault --behaviour B`` under mpiexec.
Behaviours: ``ok`` (a normal record after ``--sleep`` seconds), ``crash`` (the last rank
aborts with a signal), ``exit`` (every rank exits with code 3), ``hang`` (every rank
sleeps forever), ``norecord`` (finishes without a record), ``badrecord`` (prints a
malformed record) and ``invalid`` (a record whose result failed validation).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from scaleprobe.kernels.record import MARKER, emit

__all__ = ["BEHAVIOURS", "build_parser", "main"]

BEHAVIOURS = ("ok", "crash", "exit", "hang", "norecord", "badrecord", "invalid")


def build_parser() -> argparse.ArgumentParser:
    """Return the fault kernel's argument parser.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog="python -m scaleprobe.kernels.commbench.fault", description=__doc__
    )
    parser.add_argument("--behaviour", choices=BEHAVIOURS, default="ok")
    parser.add_argument(
        "--sleep", type=float, default=0.0, help="seconds to work first"
    )
    return parser


def main(argv=None) -> int:
    """Run the fault kernel.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        The process exit code.
    """
    args = build_parser().parse_args(argv)

    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    start = time.perf_counter()
    time.sleep(args.sleep)
    if args.behaviour == "crash" and comm.rank == comm.size - 1:
        print("fault kernel: crashing on purpose", file=sys.stderr, flush=True)
        os.abort()
    if args.behaviour == "exit":
        print("fault kernel: exiting with code 3", file=sys.stderr, flush=True)
        return 3
    if args.behaviour == "hang":
        while True:
            time.sleep(3600)
    comm.Barrier()
    elapsed = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
    if comm.rank == 0:
        if args.behaviour == "badrecord":
            print(MARKER + '{"metrics": {"time": 1.0', flush=True)
        elif args.behaviour == "invalid":
            emit(
                {
                    "metrics": {"time": elapsed},
                    "status": "invalid",
                    "reason": "result failed validation on purpose",
                }
            )
        elif args.behaviour == "ok":
            emit(
                {
                    "kernel": "commbench.fault",
                    "metrics": {"time": elapsed, "ranks": comm.size},
                    "trials": [{"time": elapsed / 2, "index": i} for i in range(2)],
                    "units": {"time": "s"},
                }
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
