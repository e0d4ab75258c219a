"""Ping-pong between two ranks on different emulated nodes.

Rank 0 and rank ``ppn`` (the first rank of node 1) bounce a message of ``--msg-bytes``
bytes ``--warmup + --iterations`` times; with a single node, ranks 0 and 1 do (an
intra-node measurement). Other ranks idle. Reports the median round-trip time
``rtt`` (s) and ``achieved_bandwidth = 2 * msg_bytes / rtt`` (bytes/s), plus the
communicator's summary (``time`` is the virtual completion time in emulated mode);
with ``--trials`` every timed round trip becomes a trial.

Run as ``mpiexec -n 2 python -m scaleprobe.kernels.commbench.pingpong --msg-bytes
"1 MiB" --throttle emulated``.
"""

from __future__ import annotations

import os

# One BLAS/OpenMP thread, so a rank's CPU time is its own work (set before numpy).
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import statistics  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import (  # noqa: E402
    KernelDeclaration,
    Measurement,
    Metric,
    Parameter,
)

__all__ = ["KERNEL", "build_parser", "main", "ping_pong"]


def ping_pong(comm, args) -> Measurement | None:
    """Bounce the message and time every round trip (collective).

    Parameters
    ----------
    comm : InstrumentedComm
        At least two ranks.
    args : Arguments
        ``msg_bytes``, ``iterations``, ``warmup``, ``trials``.

    Returns
    -------
    Measurement or None
        The measurement on rank 0, None elsewhere.
    """
    peer = comm.ppn if comm.size > comm.ppn else 1
    buffer = np.zeros(args.msg_bytes, dtype=np.uint8)
    rtts = []
    comm.sync()
    for iteration in range(args.warmup + args.iterations):
        if comm.rank == 0:
            start = comm.clock()
            comm.Send(buffer, peer, tag=iteration)
            comm.Recv(buffer, peer, tag=iteration)
            if iteration >= args.warmup:
                rtts.append(comm.clock() - start)
        elif comm.rank == peer:
            comm.Recv(buffer, 0, tag=iteration)
            comm.Send(buffer, 0, tag=iteration)
    summary = comm.summary()
    if comm.rank != 0:
        return None
    rtt = statistics.median(rtts)
    return Measurement(
        metrics={
            "rtt": rtt,
            "achieved_bandwidth": 2 * args.msg_bytes / rtt,
            "msg_bytes": args.msg_bytes,
            "inter_node": int(peer >= comm.ppn),
        },
        trials=[{"rtt": value} for value in rtts] if args.trials else (),
        summary=summary,
    )


KERNEL = KernelDeclaration(
    name="commbench.pingpong",
    summary="Ping-pong between two ranks on different emulated nodes.",
    description=__doc__,
    parameters=(
        Parameter(
            "msg_bytes",
            "size",
            1 << 20,
            "bytes",
            minimum=0,
            help='message size, bytes or e.g. "1 MiB"',
        ),
        Parameter("iterations", "int", 20, minimum=1, help="timed round trips"),
        Parameter("warmup", "int", 2, minimum=0, help="untimed round trips first"),
        Parameter(
            "trials",
            "bool",
            False,
            help="also record every timed round trip as a trial",
        ),
    ),
    metrics=(
        Metric("rtt", "s", "median round-trip time"),
        Metric("achieved_bandwidth", "bytes/s", "2 * msg_bytes / rtt"),
        Metric("msg_bytes", "bytes", "message size"),
        Metric("inter_node", "1", "1 if the two ranks sit on different nodes"),
        Metric("rtt", "s", "round-trip time", per="trial"),
    ),
    min_ranks=2,
    working_set=lambda args, ranks: args.msg_bytes,
    work=ping_pong,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
