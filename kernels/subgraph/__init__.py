"""Color-coding subgraph counting of tree templates (seed 004, Chen et al.).

Single-process counting (:func:`count_subgraphs`), templates and their split into
sub-templates (:class:`Template`), input graphs (:mod:`.graphs`), an exact reference
count for small graphs (:func:`exact_count`), and the distributed kernel run by
``python -m scaleprobe.kernels.subgraph``. Importing this package never imports mpi4py.

Run it under MPI::

    mpiexec -n 4 python -m scaleprobe.kernels.subgraph --graph er:10000:50000 \
        --template u12-2 --iterations 10 --mode adaptive --threshold 20

It prints one record (:mod:`scaleprobe.kernels.record`): ``metrics`` with
``estimate`` (median of means), ``iterations``, ``time`` (virtual completion time of
the iterations), ``time_per_iteration``, ``peak_rss``, the communicator's summary and
the template's complexity; ``trials`` with one estimate per colouring; ``profiles``
over ``subtemplate`` (``comp_time``, ``comm_time``, ``bytes_sent``, ``intensity``,
``pipelined``...), ``step`` (the pipeline's ring steps: computation, wait and, where a
link model acts, ``modelled_transfer_time`` and the overlap ratio of Eq. 14,
``modelled_overlap``) and ``rank`` (per-rank peak memory).
"""

from scaleprobe.kernels.subgraph._cli import build_parser
from scaleprobe.kernels.subgraph.counting import (
    CountResult,
    colorful_count,
    coloring,
    count_subgraphs,
    estimate_scale,
    iterations_for,
    median_of_means,
)
from scaleprobe.kernels.subgraph.exact import exact_count
from scaleprobe.kernels.subgraph.graphs import (
    Graph,
    GraphError,
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
    "median_of_means",
    "read_edge_list",
    "rmat",
    "template_names",
]
