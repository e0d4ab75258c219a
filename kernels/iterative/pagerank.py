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

import numpy as np  # noqa: E402
from scaleprobe.kernels.harness import (  # noqa: E402
    KernelDeclaration,
    Measurement,
    Metric,
    Parameter,
)
from scaleprobe.kernels.iterative.profile import (  # noqa: E402
    IterationProfile,
    iteration_measurement,
    iteration_metrics,
)

__all__ = [
    "KERNEL",
    "VARIANTS",
    "build_parser",
    "main",
    "pagerank_reference",
    "rank_vertices",
    "read_graph",
]
VARIANTS = ("gather", "allgather")
_TOLERANCE = 1e-9
#: Bytes of one data point of each collective per variant: a link is scattered as
#: 3 doubles (source, weight, target), a rank as 1.
_JOB_BYTES = {
    "gather": {"scatter": 24, "bcast": 8, "gather": 8},
    "allgather": {"scatter": 24, "allgather": 8},
}


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


def _graph(args, parts):
    """Rank 0's graph and packed partition, or why there is none."""
    try:
        graph = (
            read_graph(args.graph)
            if args.graph
            else kronecker_graph(args.scale, args.edgefactor, args.seed)
        )
        packed, links, dangling_count = _partition(*graph, parts)
    except (OSError, ValueError) as error:
        return None, None, None, str(error)
    return graph, packed, (graph[2], links.tolist(), dangling_count), ""


class _Ranks:
    """One rank's links, its block of the rank vector and the exchange's layout."""

    def __init__(self, comm, variant, shape):
        vertices, links, dangling_count = shape
        self.vertices = vertices
        self.links = np.asarray(links)
        self.blocks = _block_counts(vertices, comm.size)
        self.count = int(self.blocks[comm.rank])
        self.mine = int(self.links[comm.rank])
        self.local = np.empty(3 * self.mine + self.count)
        self.rank = np.full(vertices + 1, 1.0 / vertices)  # the last slot carries D
        self.rank[-1] = dangling_count / vertices
        # every block carries its own share of D in one extra slot
        self.extended = self.blocks + 1
        displacements = np.concatenate([[0], np.cumsum(self.extended)[:-1]])
        gathers = comm.rank == 0 or variant == "allgather"
        self.gathered = np.empty(vertices + comm.size) if gathers else None
        # where the gathered blocks hold the ranks and the shares of D
        self.shares_at = displacements + self.blocks
        self.ranks_at = np.delete(np.arange(vertices + comm.size), self.shares_at)

    def working_set(self) -> int:
        """The rank's links (source, weight, target and the products), the whole
        rank vector, its block and the gathered blocks."""
        gathered = self.gathered.nbytes if self.gathered is not None else 0
        return 4 * 8 * self.mine + self.rank.nbytes + 8 * (self.count + 1) + gathered

    def unpack(self):
        """Source, weight, local target and no-out-link flags of the scattered links."""
        mine, local = self.mine, self.local
        return (
            local[:mine].astype(np.int64),
            local[mine : 2 * mine],
            local[2 * mine : 3 * mine].astype(np.int64),
            local[3 * mine :] > 0,
        )


def _exchange(comm, profile, args, state, block):
    """Bring every rank's new block to where the next iteration needs it."""
    root = comm.rank == 0
    if args.variant == "gather":
        jobs = state.vertices - state.count if root else 0
        with profile.collective("gather", jobs=jobs):
            comm.Gatherv(
                block, [state.gathered, state.extended] if root else None, root=0
            )
    else:
        others = comm.size - 1
        with profile.collective(
            "allgather", jobs=state.vertices - state.count if others else 0
        ):
            comm.Allgatherv(block, [state.gathered, state.extended])
    if root or args.variant == "allgather":
        with profile.compute():
            np.take(state.gathered, state.ranks_at, out=state.rank[:-1])
            state.rank[-1] = state.gathered[state.shares_at].sum()


def _iterate(comm, profile, args, state, packed):
    """The timed region: scatter the links, then the iterations."""
    root = comm.rank == 0
    others = comm.size - 1
    links = state.links
    profile.next_iteration()
    with profile.collective("scatter", jobs=int(links.sum() - links[0])):
        comm.Scatterv(
            [packed, 3 * links + state.blocks] if root else None, state.local, root=0
        )
    source, weight, target, no_links = state.unpack()
    block = np.empty(state.count + 1)
    work = np.empty(max(state.mine, state.count))
    for iteration in range(args.iterations):
        if iteration:
            profile.next_iteration()
        if args.variant == "gather":
            with profile.collective("bcast", jobs=state.vertices if others else 0):
                comm.Bcast(state.rank, root=0)
        with profile.compute():
            rank = state.rank
            block[: state.count] = _update(
                source,
                weight,
                target,
                rank,
                rank[-1],
                state.count,
                state.vertices,
                args.damping,
                work,
            )
            block[state.count] = block[: state.count][no_links].sum()
        _exchange(comm, profile, args, state, block)


def _verify(args, graph, rank):
    """Why the ranks are wrong (``""`` if not), and the check's metrics."""
    reason, extra = "", {}
    total = float(rank.sum())
    if abs(total - 1.0) > 1e-9:
        reason = f"the ranks sum to {total!r}, not 1"
    if args.check:
        expected = pagerank_reference(*graph, args.iterations, args.damping)
        extra["max_rank_error"] = float(np.abs(expected - rank).max())
        limit = _TOLERANCE * float(expected.max())
        if not extra["max_rank_error"] <= limit:
            reason = reason or (
                f"ranks differ from serial PageRank by "
                f"{extra['max_rank_error']:.3g} > {limit:.3g}"
            )
    return reason, {"rank_sum": total, "max_rank": float(rank.max()), **extra}


def rank_vertices(comm, args):
    """Rank the vertices (collective).

    Parameters
    ----------
    comm : InstrumentedComm
    args : Arguments
        The kernel's parameters.

    Returns
    -------
    Measurement or None
        On rank 0 (``invalid`` when the graph could not be made or read, or the
        ranks are wrong); None elsewhere.
    """
    root = comm.rank == 0
    graph = packed = shape = None
    problem = ""
    if root:
        graph, packed, shape, problem = _graph(args, comm.size)
    problem, shape = comm.bcast((problem, shape))
    if problem:
        return Measurement(metrics={}, reason=problem) if root else None
    state = _Ranks(comm, args.variant, shape)
    profile = IterationProfile(comm, _JOB_BYTES[args.variant], counters=args.counters)
    profile.working_set(state.working_set())
    start = comm.sync()
    origin = comm.path()
    _iterate(comm, profile, args, state, packed)
    elapsed = comm.elapsed_since(start)
    path = comm.critical_path_since(origin)
    summary = comm.summary()
    timing = profile.result()
    if not root:
        return None
    reason, checked = _verify(args, graph, state.rank[:-1])
    edges = int(state.links.sum())
    return iteration_measurement(
        timing,
        elapsed=elapsed,
        path=path,
        summary=summary,
        metrics={
            "vertices": state.vertices,
            "edges": edges,
            "iterations": args.iterations,
            **checked,
        },
        reason=reason,
        parameters={
            "scale": None if args.graph else args.scale,
            "edgefactor": None if args.graph else args.edgefactor,
        },
    )


KERNEL = KernelDeclaration(
    name="iterative.pagerank",
    summary="PageRank of a directed graph, as FiM's evaluation runs it.",
    description=__doc__,
    parameters=(
        Parameter(
            "scale",
            "int",
            14,
            minimum=1,
            maximum=40,
            help="log2 of the vertices of the Kronecker graph",
        ),
        Parameter(
            "edgefactor",
            "int",
            16,
            minimum=1,
            help="links per vertex of the Kronecker graph",
        ),
        Parameter("seed", "int", 1, help="graph seed"),
        Parameter(
            "graph",
            "text",
            None,
            help="read the links from a file (text pairs or .npy)",
        ),
        Parameter("iterations", "int", 10, minimum=1, help="iterations I"),
        Parameter(
            "damping",
            "float",
            0.85,
            minimum=0,
            maximum=1,
            exclusive_minimum=True,
            exclusive_maximum=True,
            help="damping factor",
        ),
        Parameter(
            "variant",
            "choice",
            "gather",
            choices=VARIANTS,
            help="root broadcast and gather, or allgather",
        ),
        Parameter(
            "check", "bool", False, help="compare with serial PageRank on rank 0"
        ),
        Parameter("counters", "bool", True, help="try hardware counters"),
    ),
    metrics=(
        *iteration_metrics(("scatter", "bcast", "gather", "allgather")),
        Metric("vertices", "1", "vertices of the graph"),
        Metric("edges", "1", "links of the graph"),
        Metric("iterations", "1", "iterations I"),
        Metric("rank_sum", "1", "sum of the ranks (1 when right)"),
        Metric("max_rank", "1", "largest rank"),
        Metric("max_rank_error", "1", "largest rank difference from serial PageRank"),
    ),
    work=rank_vertices,
)
build_parser, main = KERNEL.build_parser, KERNEL.main

if __name__ == "__main__":
    raise SystemExit(main())
