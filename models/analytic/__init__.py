"""Formulas known before any measurement: Graph500's communication volume and
memory (Suzumura et al. 2011) and the complexity of pipelined subgraph counting
(Chen et al. 2018).
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "GRAPH500_VARIANTS": "graph500",
    "SubgraphComplexity": "subgraph",
    "SubgraphTerms": "subgraph",
    "graph500_comm_volume": "graph500",
    "graph500_grid": "graph500",
    "graph500_memory": "graph500",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
