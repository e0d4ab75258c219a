"""A kernel that misbehaves on request, to exercise how sweeps survive failures.

Run as ``python -m scaleprobe.kernels.commbench.fault --behaviour B`` under mpiexec.
Behaviours: ``ok`` (a normal record after ``--sleep`` seconds), ``crash`` (the last rank
aborts with a signal), ``exit`` (every rank exits with code 3), ``hang`` (every rank
sleeps forever), ``norecord`` (finishes without a record), ``badrecord`` (prints a
malformed record) and ``invalid`` (a record whose result failed validation). It talks
to ``MPI.COMM_WORLD`` directly: no link is modelled, none is echoed.
"""

from __future__ import annotations

import os
import sys
import time

from scaleprobe.kernels.harness import (
    KernelDeclaration,
    Measurement,
    Metric,
    Parameter,
)
from scaleprobe.kernels.schema import RECORD_MARKER

__all__ = ["BEHAVIOURS", "KERNEL", "build_parser", "main", "misbehave"]

BEHAVIOURS = ("ok", "crash", "exit", "hang", "norecord", "badrecord", "invalid")


def _fail_hard(comm, behaviour: str) -> None:
    """Crash, exit or hang, as asked; return for the other behaviours."""
    if behaviour == "crash" and comm.rank == comm.size - 1:
        print("fault kernel: crashing on purpose", file=sys.stderr, flush=True)
        os.abort()
    if behaviour == "exit":
        print("fault kernel: exiting with code 3", file=sys.stderr, flush=True)
        raise SystemExit(3)
    if behaviour == "hang":
        while True:
            time.sleep(3600)


def misbehave(comm, args) -> Measurement | None:
    """Sleep, then behave as ``args.behaviour`` says (collective unless it fails).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        ``MPI.COMM_WORLD``.
    args : Arguments
        ``behaviour`` and ``sleep``.

    Returns
    -------
    Measurement or None
        None (no record from the harness) on ranks other than 0 and for
        ``norecord`` and ``badrecord``.
    """
    from mpi4py import MPI

    start = time.perf_counter()
    time.sleep(args.sleep)
    _fail_hard(comm, args.behaviour)
    comm.Barrier()
    elapsed = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)
    if comm.rank != 0 or args.behaviour == "norecord":
        return None
    if args.behaviour == "badrecord":
        print(RECORD_MARKER + '{"metrics": {"time": 1.0', flush=True)
        return None
    if args.behaviour == "invalid":
        return Measurement(
            metrics={"time": elapsed}, reason="result failed validation on purpose"
        )
    return Measurement(
        metrics={"time": elapsed, "ranks": comm.size},
        trials=[{"time": elapsed / 2, "index": i} for i in range(2)],
    )


KERNEL = KernelDeclaration(
    name="commbench.fault",
    summary="A kernel that misbehaves on request, to exercise how sweeps survive "
    "failures.",
    description=__doc__,
    parameters=(
        Parameter(
            "behaviour",
            "choice",
            "ok",
            choices=BEHAVIOURS,
            help="how to behave (see the description)",
        ),
        Parameter("sleep", "float", 0.0, "s", minimum=0, help="seconds to work first"),
    ),
    metrics=(
        Metric("time", "s", "wall time of the sleep and a barrier (slowest rank)"),
        Metric("ranks", "1", "ranks of the world"),
        Metric("time", "s", "half the point's time", per="trial"),
        Metric("index", "1", "index of the trial", per="trial"),
    ),
    instrumented=False,
    work=misbehave,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    sys.exit(main())
