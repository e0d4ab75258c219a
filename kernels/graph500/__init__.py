"""Graph500: Kronecker generator, CSR construction, four distributed BFS, validation.

Run::

    mpiexec -n 4 python -m scaleprobe.kernels.graph500 --scale 14 --variant 2d \\
        [--edgefactor 16] [--nbfs 64] [--seed 1] [--no-validate] [--graph500-output] \\
        [--no-direction-optimizing] [--throttle emulated --bandwidth-percent 25 ...]

Variants (Suzumura et al. 2011 for the first three; the two-dimensional one after
Buluç and Madduri 2011, the IBM implementation Medya et al. 2017 measure):

- ``simple``: 1D partition, owners receive aggregated (vertex, parent) pairs
  (Algorithm II); top-down only.
- ``replicated-csr``: replicated frontier bitmap, bottom-up checks of local unvisited
  vertices (Algorithm III); **direction optimizing** (top-down levels while the
  frontier is small) unless ``--no-direction-optimizing``.
- ``replicated-csc``: replicated frontier bitmap, top-down scan of the global frontier
  over the transposed adjacency (Algorithm IV).
- ``2d``: R x C grid (``square`` rank counts q x q, ``two_p_squared`` 2q x q), expand
  along grid columns, fold along grid rows; **direction optimizing** (bottom-up levels
  over the block transpose) unless ``--no-direction-optimizing``.

The record (:class:`~scaleprobe.kernels.schema.Record`, rank 0) holds ``metrics``
(``time`` = mean BFS time, ``generation_time``, ``construction_time``,
``harmonic_mean_teps``, ``harmonic_stddev_teps``, ``median_teps``, ``nbfs``,
``validation_time``, ``graph_bytes``, per-BFS means ``bfs_bytes_sent``,
``bfs_messages``, ``bfs_comm_time``, ``bfs_comp_time``, and the communicator summary:
``total_time``, ``wall_time``, ``comp_time``, ``comm_time``, ``bytes_sent``,
``messages``, ``peak_rss``...), one ``trials`` entry per BFS (``root``, ``time``,
``nedge``, ``teps``, ``valid``, ``validate_time``, ``levels``, ``comp_time``,
``comm_time``, ``bytes_sent``, ``messages``, and ``profiles.level`` arrays
``frontier``, ``comp_time``, ``comm_time`` (means over ranks), ``bytes_sent``,
``messages`` (sums) and ``bottom_up``), ``units`` and ``long_names``. A failed
validation sets ``status: "invalid"`` and ``reason``.

Traversed edges (``nedge``) are the input edges, duplicates counted and self-loops
not, inside the BFS component: half the degree sum of the reached vertices, as the
reference 3.0 counts them. Importing this package never imports mpi4py.
"""

from scaleprobe.kernels.harness import KernelDeclaration, Parameter

from .construction import Graph1D, Graph2D, build_1d, build_2d
from .generator import kronecker_edges
from .roots import select_roots
from .runner import (
    METRICS,
    PARAMETERS,
    VARIANTS,
    Graph500Config,
    graph_bytes,
    measure,
    run_graph500,
)
from .stats import format_block, statistics, teps_statistics
from .validate import RULES, ValidationResult, tree_levels, validate_bfs

__all__ = [
    "KERNEL",
    "RULES",
    "VARIANTS",
    "Graph1D",
    "Graph2D",
    "Graph500Config",
    "ValidationResult",
    "build_1d",
    "build_2d",
    "build_parser",
    "format_block",
    "kronecker_edges",
    "main",
    "run_graph500",
    "select_roots",
    "statistics",
    "teps_statistics",
    "tree_levels",
    "validate_bfs",
]

KERNEL = KernelDeclaration(
    name="graph500",
    summary="Graph500: Kronecker graph, kernel 1, NBFS validated searches.",
    description=__doc__,
    parameters=(
        *PARAMETERS,
        Parameter(
            "graph500_output",
            "bool",
            False,
            help="also print the reference statistics block",
        ),
    ),
    metrics=METRICS,
    working_set=graph_bytes,
    work=measure,
)
build_parser, main = KERNEL.build_parser, KERNEL.main
