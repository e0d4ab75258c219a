"""A fitted model over new node counts, bandwidths, sizes and networks, with its
interval, the latency floor and the answers derived from it (TEPS, crossover,
bandwidth demand, speedup).
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "CANNOT_TELL_RATIO": "grid",
    "EDGEFACTOR": "derived",
    "STEEPEST": "alternatives",
    "bandwidth_demand": "derived",
    "cannot_tell_from": "grid",
    "completion_time_increment": "derived",
    "crossover_nodes": "derived",
    "diminishing_returns_nodes": "derived",
    "join_alternatives": "alternatives",
    "measured_sizes": "alternatives",
    "parallel_efficiency": "derived",
    "project": "grid",
    "resolve_params": "grid",
    "resolve_ppn": "grid",
    "speedup": "derived",
    "teps": "derived",
    "wide_nodes": "grid",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
