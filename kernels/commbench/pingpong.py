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

import argparse  # noqa: E402
import statistics  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.comm import (  # noqa: E402
    InstrumentedComm,
    add_comm_arguments,
)
from scaleprobe.kernels.record import emit  # noqa: E402
from scaleprobe.kernels.schema import SUMMARY_UNITS  # noqa: E402
from scaleprobe.kernels.units import UnitError, parse_size  # noqa: E402

__all__ = ["build_parser", "main"]

KERNEL = "commbench.pingpong"

#: Two ranks bounce the message; sweep plans leave out points with fewer.
MIN_RANKS = 2


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except UnitError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


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
        "--msg-bytes",
        type=_size,
        default=1 << 20,
        help='message size, bytes or e.g. "1 MiB" (default 1 MiB)',
    )
    parser.add_argument(
        "--iterations", type=int, default=20, help="timed round trips (default 20)"
    )
    parser.add_argument(
        "--warmup", type=int, default=2, help="untimed round trips first (default 2)"
    )
    parser.add_argument(
        "--trials",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also record every timed round trip as a trial",
    )
    add_comm_arguments(parser)
    return parser


def main(argv=None) -> int:
    """Run the ping-pong and print the record on rank 0.

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
    if args.iterations < 1 or args.warmup < 0:
        raise SystemExit(
            f"--iterations must be >= 1 and --warmup >= 0, got {args.iterations} "
            f"and {args.warmup}"
        )
    from mpi4py import MPI

    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
    if comm.size < 2:
        if comm.rank == 0:
            emit(
                {
                    "kernel": KERNEL,
                    "status": "invalid",
                    "reason": f"ping-pong needs at least 2 ranks, got {comm.size}",
                    "metrics": {},
                }
            )
        return 0
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
    if comm.rank == 0:
        rtt = statistics.median(rtts)
        metrics = {
            "rtt": rtt,
            "achieved_bandwidth": 2 * args.msg_bytes / rtt,
            "msg_bytes": args.msg_bytes,
            "inter_node": int(peer >= comm.ppn),
            **summary,
        }
        units = {
            "rtt": "s",
            "achieved_bandwidth": "bytes/s",
            "msg_bytes": "bytes",
            "inter_node": "1",
            **SUMMARY_UNITS,
        }
        record = {
            "kernel": KERNEL,
            "status": "ok",
            "metrics": metrics,
            "units": units,
            "link": comm.link_record().to_dict(),
            "long_names": {
                "rtt": "median round-trip time",
                "achieved_bandwidth": "2 * msg_bytes / rtt",
            },
        }
        if args.trials:
            record["trials"] = [{"rtt": value} for value in rtts]
        emit(record)
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
