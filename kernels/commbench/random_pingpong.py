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

import math  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.comm.pattern import (  # noqa: E402
    EXTRA_METRICS,
    METRIC_LONG_NAMES,
    METRIC_UNITS,
    METRICS,
    CommPattern,
)
from scaleprobe.kernels.harness import (  # noqa: E402
    KernelDeclaration,
    Measurement,
    Metric,
    Parameter,
)

__all__ = [
    "KERNEL",
    "PATTERN_METRICS",
    "build_parser",
    "exchange",
    "kept_maximum",
    "main",
    "pattern_metrics",
    "random_partners",
    "whole_nodes",
]


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


#: The descriptive metrics of a pattern as a record reports them.
PATTERN_METRICS = tuple(
    Metric(name, METRIC_UNITS[name], METRIC_LONG_NAMES[name])
    for name in (*METRICS, *EXTRA_METRICS)
)


def pattern_metrics(pattern, comm) -> dict:
    """Descriptive metrics of ``pattern`` on the communicator's emulated machine.

    Parameters
    ----------
    pattern : CommPattern
    comm : InstrumentedComm

    Returns
    -------
    dict
    """
    network = comm.network
    return pattern.metrics(
        ppn=comm.ppn,
        placement=network.placement,
        nodes_per_switch=network.topology.nodes_per_switch,
        switches_per_rack=network.topology.switches_per_rack,
    )


def whole_nodes(args, ranks: int, ppn: int) -> str:
    """Why ``ranks`` ranks do not fill nodes of ``ppn`` ranks, or ``""``.

    Parameters
    ----------
    args : Arguments
        Unused (the signature of a declared check).
    ranks, ppn : int

    Returns
    -------
    str

    Examples
    --------
    >>> whole_nodes(None, 6, 4)
    'needs a multiple of ppn=4 ranks, got 6'
    """
    return (
        "" if ranks % ppn == 0 else f"needs a multiple of ppn={ppn} ranks, got {ranks}"
    )


def _timed_exchanges(comm, mine, args) -> list[float]:
    """This rank's time of every timed iteration (collective)."""
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
    return [comm.marked(end) - comm.marked(start) for start, end in spans]


def exchange(comm, args) -> Measurement | None:
    """Run the random exchange and time it (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        ``messages``, ``msg_bytes``, ``iterations``, ``warmup``, ``seed``.

    Returns
    -------
    Measurement or None
        ``exchange_time`` and the pattern's metrics on rank 0, None elsewhere.
    """
    partners = random_partners(comm.size, args.messages, args.seed)
    mine = [(m, p) for m, p in enumerate(partners[comm.rank]) if p >= 0]
    times = _timed_exchanges(comm, mine, args)
    kept = comm.gather(kept_maximum(times) if times else 0.0, root=0)
    summary = comm.summary()
    if comm.rank != 0:
        return None
    pattern = CommPattern.from_partners(
        [[p for p in row if p >= 0] for row in partners], args.msg_bytes
    )
    return Measurement(
        metrics={"exchange_time": max(kept), **pattern_metrics(pattern, comm)},
        summary=summary,
    )


KERNEL = KernelDeclaration(
    name="commbench.random_pingpong",
    summary="Random non-blocking ping-pong: the training benchmark of the "
    "communication predictor.",
    description=__doc__,
    parameters=(
        Parameter(
            "messages", "int", 1, minimum=1, help="partners (messages) per rank, M"
        ),
        Parameter(
            "msg_bytes",
            "size",
            1 << 16,
            "bytes",
            minimum=1,
            help='message size S, bytes or e.g. "64 KiB"',
        ),
        Parameter("iterations", "int", 200, minimum=1, help="timed iterations"),
        Parameter("warmup", "int", 2, minimum=0, help="untimed iterations first"),
        Parameter("seed", "int", 0, minimum=0, help="seed of the matchings"),
    ),
    metrics=(
        Metric(
            "exchange_time", "s", "largest third-quartile iteration time over ranks"
        ),
        *PATTERN_METRICS,
    ),
    min_ranks=2,
    checks=(whole_nodes,),
    working_set=lambda args, ranks: (args.messages + 1) * args.msg_bytes,
    work=exchange,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
