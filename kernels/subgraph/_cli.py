"""Command line of ``python -m scaleprobe.kernels.subgraph``: parse, run, print."""

from __future__ import annotations

import argparse

import numpy as np
from scaleprobe.kernels.subgraph._memory import map_large_blocks
from scaleprobe.kernels.subgraph.counting import iterations_for
from scaleprobe.kernels.subgraph.distributed import MODES, run_distributed
from scaleprobe.kernels.subgraph.graphs import GraphError, load_graph
from scaleprobe.kernels.subgraph.template import Template, TemplateError


def build_parser() -> argparse.ArgumentParser:
    """The kernel's argument parser (with the communicator's flags)."""
    from scaleprobe.kernels.comm import add_comm_arguments

    parser = argparse.ArgumentParser(
        prog="python -m scaleprobe.kernels.subgraph",
        description="Color-coding count of a tree template in a graph over MPI.",
    )
    parser.add_argument(
        "--graph",
        required=True,
        help="edge-list file or generator: er:N:M[:SEED], "
        "rmat:N:M[:SKEW[:SEED]], graph500:SCALE:EDGEFACTOR[:SEED]",
    )
    parser.add_argument(
        "--template",
        required=True,
        help="u3-1 ... u12-2, path-K, star-K, spider-L-D, binary-K or a file",
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=10,
        help="colourings; 0 derives them from --epsilon and --delta",
    )
    parser.add_argument(
        "--epsilon", type=float, default=0.1, help="relative error, for --iterations 0"
    )
    parser.add_argument(
        "--delta",
        type=float,
        default=0.1,
        help="failure probability, for --iterations 0",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="colourings, vertex partition, task shuffle"
    )
    parser.add_argument("--mode", choices=MODES, default="adaptive")
    parser.add_argument(
        "--threshold",
        type=float,
        default=20.0,
        help="computation intensity from which adaptive pipelines",
    )
    parser.add_argument(
        "--task-size",
        type=int,
        default=0,
        help="neighbour-list task size (Algorithm 4); 0 = off",
    )
    parser.add_argument(
        "--precision",
        choices=("float64", "float32"),
        default="float64",
        help="count tables; float64 keeps counts below 2**53 exact",
    )
    parser.add_argument(
        "--compress",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="send counts as the narrowest exact unsigned integer type",
    )
    parser.add_argument(
        "--groups", type=int, default=3, help="groups of the median-of-means estimate"
    )
    add_comm_arguments(parser)
    return parser


def main(argv=None) -> None:
    """Run the kernel and print its record on rank 0."""
    parser = build_parser()
    args = parser.parse_args(argv)
    map_large_blocks()
    try:
        template = Template.by_name(args.template)
        graph = load_graph(args.graph)
    except (TemplateError, GraphError) as error:
        parser.error(str(error))
    iterations = args.iterations
    if iterations == 0:
        iterations = iterations_for(template.k, args.epsilon, args.delta)
    if iterations < 0 or args.task_size < 0:
        parser.error("--iterations and --task-size must be >= 0")

    from mpi4py import MPI
    from scaleprobe.kernels.comm import InstrumentedComm
    from scaleprobe.kernels.record import emit

    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
    try:
        record = run_distributed(
            comm,
            graph,
            template,
            iterations=iterations,
            seed=args.seed,
            mode=args.mode,
            threshold=args.threshold,
            task_size=args.task_size or None,
            dtype=np.dtype(args.precision),
            groups=args.groups,
            compress=args.compress,
        )
        record["settings"]["throttle"] = comm.mode
        if comm.rank == 0:
            emit(record)
    finally:
        comm.close()
