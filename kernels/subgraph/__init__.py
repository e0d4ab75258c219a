"""Color-coding subgraph counting of tree templates (Chen et al. 2018).

Single-process counting (:func:`count_subgraphs`), templates and their split into
sub-templates (:class:`Template`), input graphs (:mod:`.graphs`), an exact reference
count for small graphs (:func:`exact_count`), and the distributed kernel run by
``python -m scaleprobe.kernels.subgraph``. Importing this package never imports mpi4py.

Run it under MPI::

    mpiexec -n 4 python -m scaleprobe.kernels.subgraph --graph er:10000:50000 \
        --template u12-2 --iterations 10 --mode adaptive --threshold 20

It prints one record (:class:`~scaleprobe.kernels.schema.Record`): ``metrics`` with
``estimate`` (median of means), ``iterations``, ``time`` (virtual completion time of
the iterations), ``time_per_iteration``, ``peak_rss``, the communicator's summary and
the template's complexity; ``trials`` with one estimate per colouring; ``profiles``
over ``subtemplate`` (``comp_time``, ``comm_time``, ``bytes_sent``, ``intensity``,
``pipelined``...), ``step`` (the pipeline's ring steps: computation, wait and, where a
link model acts, ``modelled_transfer_time`` and the overlap ratio of Eq. 14,
``modelled_overlap``) and ``rank`` (per-rank peak memory).
"""

from scaleprobe.kernels.harness import KernelDeclaration, Parameter
from scaleprobe.kernels.subgraph.counting import (
    CountResult,
    colorful_count,
    coloring,
    count_subgraphs,
    estimate_scale,
    iterations_for,
    median_of_means,
)
from scaleprobe.kernels.subgraph.distributed import METRICS, MODES, count
from scaleprobe.kernels.subgraph.exact import exact_count
from scaleprobe.kernels.subgraph.graphs import (
    Graph,
    GraphError,
    check_graph,
    erdos_renyi,
    load_graph,
    read_edge_list,
    rmat,
)
from scaleprobe.kernels.subgraph.template import (
    SubTemplate,
    Template,
    TemplateError,
    template_names,
)

__all__ = [
    "KERNEL",
    "CountResult",
    "Graph",
    "GraphError",
    "SubTemplate",
    "Template",
    "TemplateError",
    "build_parser",
    "colorful_count",
    "coloring",
    "count_subgraphs",
    "erdos_renyi",
    "estimate_scale",
    "exact_count",
    "iterations_for",
    "load_graph",
    "main",
    "median_of_means",
    "read_edge_list",
    "rmat",
    "template_names",
]


def _inputs(args) -> str:
    """Why the template or the graph names nothing (checked before MPI starts)."""
    try:
        Template.by_name(args.template)
    except TemplateError as error:
        return str(error)
    return check_graph(args.graph)


_OPEN = {
    "minimum": 0,
    "maximum": 1,
    "exclusive_minimum": True,
    "exclusive_maximum": True,
}

KERNEL = KernelDeclaration(
    name="subgraph",
    summary="Color-coding count of a tree template in a graph over MPI.",
    description=__doc__,
    parameters=(
        Parameter(
            "graph",
            "text",
            required=True,
            help="edge-list file or generator: er:N:M[:SEED], "
            "rmat:N:M[:SKEW[:SEED]], graph500:SCALE:EDGEFACTOR[:SEED]",
        ),
        Parameter(
            "template",
            "text",
            required=True,
            help="u3-1 ... u12-2, path-K, star-K, spider-L-D, binary-K or a file",
        ),
        Parameter(
            "iterations",
            "int",
            10,
            minimum=0,
            help="colourings; 0 derives them from --epsilon and --delta",
        ),
        Parameter(
            "epsilon", "float", 0.1, help="relative error, for --iterations 0", **_OPEN
        ),
        Parameter(
            "delta",
            "float",
            0.1,
            help="failure probability, for --iterations 0",
            **_OPEN,
        ),
        Parameter(
            "seed",
            "int",
            0,
            minimum=0,
            help="colourings, vertex partition, task shuffle",
        ),
        Parameter(
            "mode",
            "choice",
            "adaptive",
            choices=MODES,
            help="all-to-all exchange, pipelined ring, or by computation intensity",
        ),
        Parameter(
            "threshold",
            "float",
            20.0,
            help="computation intensity from which adaptive pipelines",
        ),
        Parameter(
            "task_size",
            "int",
            0,
            minimum=0,
            help="neighbour-list task size (Algorithm 4); 0 = off",
        ),
        Parameter(
            "precision",
            "choice",
            "float64",
            choices=("float64", "float32"),
            help="count tables; float64 keeps counts below 2**53 exact",
        ),
        Parameter(
            "compress",
            "bool",
            True,
            help="send counts as the narrowest exact unsigned integer type",
        ),
        Parameter(
            "groups", "int", 3, minimum=1, help="groups of the median-of-means estimate"
        ),
    ),
    metrics=METRICS,
    validate=_inputs,
    work=count,
)
build_parser, main = KERNEL.build_parser, KERNEL.main
