"""Command line of the Graph500 kernel: parse, run, print the record on rank 0."""

from __future__ import annotations

import argparse
import sys

from .runner import VARIANTS, Graph500Config, run_graph500

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (without the communicator options)."""
    parser = argparse.ArgumentParser(
        prog="python -m scaleprobe.kernels.graph500",
        description="Graph500: Kronecker graph, kernel 1, NBFS validated searches.",
    )
    parser.add_argument(
        "--scale", type=int, default=14, help="log2 of the vertex count"
    )
    parser.add_argument("--edgefactor", type=int, default=16, help="edges per vertex")
    parser.add_argument(
        "--variant", choices=VARIANTS, default="simple", help="BFS algorithm"
    )
    parser.add_argument(
        "--nbfs", type=int, default=64, help="number of BFS roots (trials)"
    )
    parser.add_argument("--seed", type=int, default=1, help="graph and root seed")
    parser.add_argument(
        "--validate",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="check every BFS against the five Graph500 rules (default: on)",
    )
    parser.add_argument(
        "--direction-optimizing",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="replicated-csr and 2d switch between top-down and bottom-up levels "
        "(default: on)",
    )
    parser.add_argument(
        "--graph500-output",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also print the reference statistics block",
    )
    return parser


def main(argv=None) -> int:
    """Run the kernel under MPI; rank 0 prints the record (and the block if asked)."""
    from mpi4py import MPI
    from scaleprobe.kernels.comm import InstrumentedComm, add_comm_arguments
    from scaleprobe.kernels.record import emit

    parser = build_parser()
    add_comm_arguments(parser)
    args = parser.parse_args(argv)
    config = Graph500Config(
        scale=args.scale,
        edgefactor=args.edgefactor,
        variant=args.variant,
        nbfs=args.nbfs,
        seed=args.seed,
        validate=args.validate,
        direction_optimizing=args.direction_optimizing,
    )
    try:
        config.check()
    except ValueError as exc:
        parser.error(str(exc))
    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
    record = run_graph500(
        comm, config, block_stream=sys.stdout if args.graph500_output else None
    )
    if comm.rank == 0:
        emit(record)
    return 0
