"""PageRank of a directed graph, as FiM's evaluation runs it.

The graph is a Graph500 Kronecker graph (``--scale``, ``--edgefactor``, ``--seed``;
:mod:`scaleprobe.kernels.graph500.generator`, edges directed source to target,
duplicates and self-loops kept as links) or a file (``--graph``: text lines ``source
target`` or a ``.npy`` array of shape (edges, 2)). Rank 0 builds it and splits the
vertices in contiguous blocks; then, timed:

1. rank 0 scatters every rank's in-links (source, ``1/outdegree(source)``, local
   target) and which of its vertices have no out-link (``Scatterv``);
2. ``--iterations`` times, with damping ``d = --damping`` (0.85) over ``V`` vertices:
   ``r'(v) = (1 - d)/V + d (sum over links u->v of r(u)/outdeg(u) + D/V)`` with
   ``D`` the rank held by vertices without out-links (their rank is spread evenly,
   so the ranks keep summing to 1).

   ``--variant gather``: rank 0 broadcasts ``r`` and ``D`` (``Bcast``), every rank
   updates its block, rank 0 gathers the blocks (``Gatherv``). ``--variant
   allgather``: every rank updates its block and the blocks are exchanged among all
   (``Allgatherv``), no root.

The record's ``profiles.iteration`` has the computation and each collective's time
and data points (vertices or links) per iteration. ``--check`` repeats the
computation serially on rank 0 and makes the point ``invalid`` when a rank differs by
more than 1e-9 of the largest one.

Run as ``mpiexec -n 4 python -m scaleprobe.kernels.iterative.pagerank --scale 14
--iterations 10 --throttle emulated``.
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from scaleprobe.kernels.comm import add_comm_arguments  # noqa: E402

__all__ = ["VARIANTS", "build_parser", "main", "pagerank_reference", "read_graph"]

KERNEL = "iterative.pagerank"
VARIANTS = ("gather", "allgather")
_TOLERANCE = 1e-9


def read_graph(path: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Directed edges of a graph file: ``(source, target, vertices)``.

    Parameters
    ----------
    path : str
        Text file of ``source target`` lines (``#`` starts a comment) or a ``.npy``
        integer array of shape (edges, 2). Vertices are ``0 .. max id``.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray, int)
    """
    if path.endswith(".npy"):
        edges = np.load(path)
    else:
        edges = np.loadtxt(path, dtype=np.int64, comments="#", ndmin=2)
    if edges.ndim != 2 or edges.shape[1] != 2 or edges.dtype.kind not in "iu":
        raise ValueError(
            f"{path}: expected integer pairs (source, target), got "
            f"shape {edges.shape} of {edges.dtype}"
        )
    if edges.size == 0 or edges.min() < 0:
        raise ValueError(f"{path}: needs at least one edge and no negative vertex")
    edges = edges.astype(np.int64)
    return edges[:, 0], edges[:, 1], int(edges.max()) + 1


def kronecker_graph(scale: int, edgefactor: int, seed: int):
    """The Graph500 Kronecker edge list, directed: ``(source, target, vertices)``."""
    from scaleprobe.kernels.graph500.generator import kronecker_edges

    source, target = kronecker_edges(scale, edgefactor, seed, 0, edgefactor << scale)
    return source.astype(np.int64), target.astype(np.int64), 1 << scale


def _block_counts(total: int, parts: int) -> np.ndarray:
    return np.array([total // parts + (r < total % parts) for r in range(parts)])


def _update(source, weight, target, rank, dangling, count, vertices, damping, out):
    """New ranks of ``count`` vertices (``target`` indexes them) from the full rank
    vector, written into ``out``; ``out`` and ``weight`` are as long as the links,
    and ``out``'s start is overwritten by the result (a view of it is returned).

    The links' products go into ``out`` rather than a new array in every iteration,
    whose pages the operating system would map and zero each time.
    """
    products = np.take(rank, source, out=out[: len(source)])
    np.multiply(products, weight, out=products)
    links = np.bincount(target, products, minlength=count)
    new = out[:count]
    np.add(links, dangling / vertices, out=new)
    np.multiply(new, damping, out=new)
    np.add(new, (1.0 - damping) / vertices, out=new)
    return new


def pagerank_reference(source, target, vertices, iterations, damping=0.85):
    """Serial PageRank with the kernel's formula.

    Examples
    --------
    >>> r = pagerank_reference(np.array([0, 1]), np.array([1, 0]), 3, 20)
    >>> np.round(r, 4).tolist(), round(float(r.sum()), 12)
    ([0.4651, 0.4651, 0.0698], 1.0)
    """
    outdegree = np.bincount(source, minlength=vertices)
    weight = 1.0 / np.maximum(outdegree, 1)[source]
    no_links = outdegree == 0
    rank = np.full(vertices, 1.0 / vertices)
    work = np.empty(max(len(source), vertices))
    for _ in range(iterations):
        dangling = rank[no_links].sum()
        rank = _update(
            source, weight, target, rank, dangling, vertices, vertices, damping, work
        ).copy()
    return rank


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
        "--scale",
        type=int,
        default=14,
        help="log2 of the vertices of the Kronecker graph (default 14)",
    )
    parser.add_argument(
        "--edgefactor",
        type=int,
        default=16,
        help="links per vertex of the Kronecker graph (default 16)",
    )
    parser.add_argument("--seed", type=int, default=1, help="graph seed")
    parser.add_argument(
        "--graph", default=None, help="read the links from a file (text pairs or .npy)"
    )
    parser.add_argument("--iterations", type=int, default=10, help="I (default 10)")
    parser.add_argument(
        "--damping", type=float, default=0.85, help="damping factor (default 0.85)"
    )
    parser.add_argument(
        "--variant",
        choices=VARIANTS,
        default="gather",
        help="root broadcast and gather, or allgather (default gather)",
    )
    parser.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="compare with serial PageRank on rank 0",
    )
    parser.add_argument(
        "--counters",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="try hardware counters (default on)",
    )
    add_comm_arguments(parser)
    return parser


def _partition(source, target, vertices, parts):
    """Rank 0's packed buffers: per rank [links..., no-out-link flags...]."""
    outdegree = np.bincount(source, minlength=vertices)
    weight = 1.0 / np.maximum(outdegree, 1)[source]
    blocks = _block_counts(vertices, parts)
    firsts = np.concatenate([[0], np.cumsum(blocks)[:-1]])
    order = np.argsort(target, kind="stable")
    owner = np.searchsorted(firsts, target[order], side="right") - 1
    links = np.bincount(owner, minlength=parts)
    packed = np.empty(3 * len(source) + vertices)
    sizes = 3 * links + blocks
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    link_offsets = np.concatenate([[0], np.cumsum(links)[:-1]])
    flags = (outdegree == 0).astype(np.float64)
    for r in range(parts):
        chosen = order[link_offsets[r] : link_offsets[r] + links[r]]
        at = offsets[r]
        packed[at : at + links[r]] = source[chosen]
        packed[at + links[r] : at + 2 * links[r]] = weight[chosen]
        packed[at + 2 * links[r] : at + 3 * links[r]] = target[chosen] - firsts[r]
        packed[at + 3 * links[r] : at + sizes[r]] = flags[
            firsts[r] : firsts[r] + blocks[r]
        ]
    return packed, links, float(flags.sum())


def main(argv=None) -> int:
    """Rank the vertices, print the record on rank 0.

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        Exit code.
    """
    args = build_parser().parse_args(argv)
    if args.iterations < 1 or not 0.0 < args.damping < 1.0:
        raise SystemExit(
            f"--iterations must be >= 1 and --damping in (0, 1), got "
            f"{args.iterations} and {args.damping}"
        )
    from mpi4py import MPI
    from scaleprobe.kernels.comm import InstrumentedComm
    from scaleprobe.kernels.iterative.profile import IterationProfile, build_record
    from scaleprobe.kernels.record import emit

    comm = InstrumentedComm.from_arguments(MPI.COMM_WORLD, args)
    root = comm.rank == 0
    problem, shape, graph = "", None, None
    if root:
        try:
            graph = (
                read_graph(args.graph)
                if args.graph
                else kronecker_graph(args.scale, args.edgefactor, args.seed)
            )
            packed, links, dangling_count = _partition(*graph, comm.size)
            shape = (graph[2], links.tolist(), dangling_count)
        except (OSError, ValueError) as error:
            problem = str(error)
    problem, shape = comm.bcast((problem, shape))
    if problem:
        if root:
            emit(
                {
                    "kernel": KERNEL,
                    "status": "invalid",
                    "reason": problem,
                    "metrics": {},
                    "link": comm.link_record().to_dict(),
                }
            )
        comm.close()
        return 0
    vertices, links, dangling_count = shape
    links = np.asarray(links)
    blocks = _block_counts(vertices, comm.size)
    count = int(blocks[comm.rank])
    mine = int(links[comm.rank])
    local = np.empty(3 * mine + count)
    rank = np.full(vertices + 1, 1.0 / vertices)  # the last slot carries D
    rank[-1] = dangling_count / vertices
    # every block carries its own share of D in one extra slot
    extended = blocks + 1
    displacements = np.concatenate([[0], np.cumsum(extended)[:-1]])
    gathered = (
        np.empty(vertices + comm.size)
        if (root or args.variant == "allgather")
        else None
    )
    # a link is scattered as 3 doubles (source, weight, target), a rank as 1
    kinds = (
        {"scatter": 24, "bcast": 8, "gather": 8}
        if args.variant == "gather"
        else {"scatter": 24, "allgather": 8}
    )
    profile = IterationProfile(comm, kinds, counters=args.counters)
    # the rank's links (source, weight, target and the products), the whole rank
    # vector, its block and the gathered blocks
    profile.working_set(
        4 * 8 * mine
        + rank.nbytes
        + 8 * (count + 1)
        + (gathered.nbytes if gathered is not None else 0)
    )
    others = comm.size - 1

    start = comm.sync()
    origin = comm.path()
    profile.next_iteration()
    with profile.collective("scatter", jobs=int(links.sum() - links[0])):
        comm.Scatterv([packed, 3 * links + blocks] if root else None, local, root=0)
    source = local[:mine].astype(np.int64)
    weight = local[mine : 2 * mine]
    target = local[2 * mine : 3 * mine].astype(np.int64)
    no_links = local[3 * mine :] > 0
    block = np.empty(count + 1)
    work = np.empty(max(mine, count))
    # where the gathered blocks hold the ranks and the shares of D
    shares_at = displacements + blocks
    ranks_at = np.delete(np.arange(vertices + comm.size), shares_at)
    for iteration in range(args.iterations):
        if iteration:
            profile.next_iteration()
        if args.variant == "gather":
            with profile.collective("bcast", jobs=vertices if others else 0):
                comm.Bcast(rank, root=0)
        with profile.compute():
            block[:count] = _update(
                source,
                weight,
                target,
                rank,
                rank[-1],
                count,
                vertices,
                args.damping,
                work,
            )
            block[count] = block[:count][no_links].sum()
        if args.variant == "gather":
            with profile.collective("gather", jobs=vertices - count if root else 0):
                comm.Gatherv(block, [gathered, extended] if root else None, root=0)
        else:
            with profile.collective(
                "allgather", jobs=vertices - count if others else 0
            ):
                comm.Allgatherv(block, [gathered, extended])
        if root or args.variant == "allgather":
            with profile.compute():
                np.take(gathered, ranks_at, out=rank[:-1])
                rank[-1] = gathered[shares_at].sum()
    elapsed = comm.elapsed_since(start)
    path = comm.critical_path_since(origin)
    summary = comm.summary()
    result = profile.result()
    if root:
        reason, extra = "", {}
        total = float(rank[:-1].sum())
        if abs(total - 1.0) > 1e-9:
            reason = f"the ranks sum to {total!r}, not 1"
        if args.check:
            expected = pagerank_reference(*graph, args.iterations, args.damping)
            extra["max_rank_error"] = float(np.abs(expected - rank[:-1]).max())
            limit = _TOLERANCE * float(expected.max())
            if not extra["max_rank_error"] <= limit:
                reason = reason or (
                    f"ranks differ from serial PageRank by "
                    f"{extra['max_rank_error']:.3g} > {limit:.3g}"
                )
        edges = int(links.sum())
        record = build_record(
            comm,
            KERNEL,
            result,
            elapsed=elapsed,
            path=path,
            summary=summary,
            link=comm.link_record().to_dict(),
            params={
                "vertices": vertices,
                "edges": edges,
                "iterations": args.iterations,
                "damping": args.damping,
                "variant": args.variant,
                "scale": None if args.graph else args.scale,
                "edgefactor": None if args.graph else args.edgefactor,
                "seed": args.seed,
                "graph": args.graph,
            },
            metrics={
                "vertices": vertices,
                "edges": edges,
                "iterations": args.iterations,
                "rank_sum": total,
                "max_rank": float(rank[:-1].max()),
                **extra,
            },
            units={
                "vertices": "1",
                "edges": "1",
                "iterations": "1",
                "rank_sum": "1",
                "max_rank": "1",
                "max_rank_error": "1",
            },
            long_names={
                "max_rank_error": "largest rank difference from serial PageRank"
            },
            reason=reason,
        )
        emit(record)
    comm.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
