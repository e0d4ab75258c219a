"""Graph500: Kronecker generator, CSR construction, four distributed BFS, validation.

Run it as ``mpiexec -n 4 python -m scaleprobe.kernels.graph500 --scale 14 --variant 2d``.
Variants: ``simple`` (1D, owner push, seed 002 Algorithm II), ``replicated-csr``
(replicated bitmap, bottom-up, direction optimizing; Algorithm III),
``replicated-csc`` (replicated bitmap, top-down over the transposed adjacency;
Algorithm IV) and ``2d`` (Buluc & Madduri expand/fold on an R x C grid). Importing
this package never imports mpi4py.
"""

from .construction import Graph1D, Graph2D, build_1d, build_2d
from .generator import kronecker_edges
from .roots import select_roots
from .runner import VARIANTS, Graph500Config, run_graph500
from .stats import format_block, statistics, teps_statistics
from .validate import RULES, ValidationResult, tree_levels, validate_bfs

__all__ = [
    "RULES", "VARIANTS", "Graph1D", "Graph2D", "Graph500Config", "ValidationResult",
    "build_1d", "build_2d", "format_block", "kronecker_edges", "run_graph500",
    "select_roots", "statistics", "teps_statistics", "tree_levels", "validate_bfs",
]
