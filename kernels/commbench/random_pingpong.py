"""Random non-blocking ping-pong: the training benchmark of the communication predictor.

Every rank exchanges ``--msg-bytes`` bytes at once with ``--messages`` (M) partners:
for message index ``m`` the ranks are paired by a random perfect matching drawn from
``numpy.random.default_rng([seed, m])`` (so pairs are symmetric, and with an odd
number of ranks one rank sits out that index). In one iteration every rank posts an
``Irecv`` from and an ``Isend`` to each of its partners — the ping and the pong of a
pair travel together — and waits for all of them; the clocks are aligned before each
iteration (``comm.sync()``, free in virtual time, where the original used a barrier).

An iteration of a rank lasts from the aligned start to the end of its ``Waitall``
(:meth:`~scaleprobe.kernels.comm.InstrumentedComm.mark`, exact once the next
alignment has replayed the exchange with contention). Each rank drops the 25 %
slowest of its ``--iterations`` timed iterations, so its time is the largest of the
rest (the third quartile); the reported ``exchange_time`` is the largest over ranks.
The record carries the descriptive metrics of the pattern and the mapping
(:mod:`scaleprobe.kernels.comm.pattern`) on the emulated machine the communicator
applies: the job's nodes placed on a machine of ``--machine-nodes`` nodes,
``--nodes-per-switch`` per switch, ``--switches-per-rack`` per rack, compactly or at
random (``--allocation``, ``--allocation-seed``).

Run as ``mpiexec -n 8 python -m scaleprobe.kernels.commbench.random_pingpong
--messages 2 --msg-bytes "64 KiB" --ppn 2 --throttle emulated``.
"""

from __future__ import annotations

import os

# One BLAS/OpenMP thread, so a rank's CPU time is its own work (set before numpy).
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.comm import add_comm_arguments  # noqa: E402
from scaleprobe.kernels.comm.pattern import METRIC_UNITS, CommPattern  # noqa: E402
from scaleprobe.kernels.units import UnitError, parse_size  # noqa: E402

__all__ = ["build_parser", "kept_maximum", "main", "random_partners"]

KERNEL = "commbench.random_pingpong"

#: Every rank exchanges with partners other than itself; sweep plans leave out
#: points with fewer ranks.
MIN_RANKS = 2


def random_partners(ranks, messages, seed=0):
    """Partners of every rank: one random perfect matching per message index.

    Parameters
    ----------
    ranks, messages, seed : int

    Returns
    -------
    list of list of int
        ``partners[r][m]`` is rank r's partner for message m, or -1 if r sits out.

    Examples
    --------
    >>> p = random_partners(4, 2, seed=1)
    >>> all(p[p[r][m]][m] == r for r in range(4) for m in range(2))
    True
    """
    partners = [[-1] * messages for _ in range(ranks)]
    for index in range(messages):
        order = np.random.default_rng([seed, index]).permutation(ranks)
        for a, b in zip(order[0::2], order[1::2], strict=False):
            partners[int(a)][index], partners[int(b)][index] = int(b), int(a)
    return partners


def kept_maximum(times, drop=0.25):
    """Largest time once the ``drop`` share of the slowest is thrown away.

    Parameters
    ----------
    times : sequence of float
    drop : float, default=0.25

    Returns
    -------
    float

    Examples
    --------
    >>> kept_maximum([1.0, 2.0, 3.0, 4.0, 100.0, 6.0, 7.0, 8.0])
    7.0
    """
    ordered = sorted(times)
    if not ordered:
        raise ValueError("no timed iterations")
    keep = max(1, len(ordered) - math.floor(drop * len(ordered)))
    return float(ordered[keep - 1])


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
        "--messages",
        type=int,
        default=1,
        help="partners (messages) per rank, M (default 1)",
    )
    parser.add_argument(
        "--msg-bytes",
        type=_size,
        default=1 << 16,
        help='message size S, bytes or e.g. "64 KiB" (default 64 KiB)',
    )
    parser.add_argument(
        "--iterations", type=int, default=200, help="timed iterations (default 200)"
    )
    parser.add_argument(
        "--warmup", type=int, default=2, help="untimed iterations first (default 2)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the matchings")
    add_comm_arguments(parser)
    return parser


def _check(args):
    if args.messages < 1 or args.msg_bytes < 1:
        raise SystemExit(
            f"--messages and --msg-bytes must be >= 1, got "
            f"{args.messages} and {args.msg_bytes}"
        )
    if args.iterations < 1 or args.warmup < 0:
        raise SystemExit(
            f"--iterations must be >= 1 and --warmup >= 0, got "
            f"{args.iterations} and {args.warmup}"
        )


def main(argv=None) -> int:
    """Run the benchmark and print the record on rank 0.

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        Exit code.
    """
    args = build_parser().parse_args(argv)
    _check(args)
    from mpi4py import MPI
    from scaleprobe.kernels.comm import InstrumentedComm
    from scaleprobe.kernels.record import emit
    from scaleprobe.kernels.schema import SUMMARY_UNITS

    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
    if comm.size < 2 or comm.size % comm.ppn:
        if comm.rank == 0:
            emit(
                {
                    "kernel": KERNEL,
                    "status": "invalid",
                    "metrics": {},
                    "reason": f"needs >= 2 ranks and a multiple of ppn={comm.ppn}, "
                    f"got {comm.size}",
                }
            )
        return 0
    partners = random_partners(comm.size, args.messages, args.seed)
    mine = [(m, p) for m, p in enumerate(partners[comm.rank]) if p >= 0]
    outgoing = np.ones(args.msg_bytes, dtype=np.uint8)
    incoming = [np.empty(args.msg_bytes, dtype=np.uint8) for _ in mine]
    spans = []
    for iteration in range(args.warmup + args.iterations):
        comm.sync()
        start = comm.mark()
        requests = [
            comm.Irecv(buffer, peer, tag=m)
            for buffer, (m, peer) in zip(incoming, mine, strict=True)
        ]
        requests += [comm.Isend(outgoing, peer, tag=m) for m, peer in mine]
        comm.Waitall(requests)
        if iteration >= args.warmup:
            spans.append((start, comm.mark()))
    comm.sync()  # resolves the last exchange
    times = [comm.marked(end) - comm.marked(start) for start, end in spans]
    mine_kept = kept_maximum(times) if times else 0.0
    kept = comm.gather(mine_kept, root=0)
    summary = comm.summary()
    if comm.rank == 0:
        pattern = CommPattern.from_partners(
            [[p for p in row if p >= 0] for row in partners], args.msg_bytes
        )
        network = comm.network
        metrics = pattern.metrics(
            ppn=comm.ppn,
            placement=network.placement,
            nodes_per_switch=network.topology.nodes_per_switch,
            switches_per_rack=network.topology.switches_per_rack,
        )
        emit(
            {
                "kernel": KERNEL,
                "status": "ok",
                "link": comm.link_record().to_dict(),
                "metrics": {"exchange_time": max(kept), **metrics, **summary},
                "units": {"exchange_time": "s", **METRIC_UNITS, **SUMMARY_UNITS},
                "long_names": {
                    "exchange_time": "largest third-quartile iteration time over ranks"
                },
            }
        )
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
