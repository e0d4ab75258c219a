"""What a person reads: the self-contained report and its figures."""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "plot_bandwidth_demand": "plots",
    "plot_extrapolation_error": "plots",
    "plot_measured_vs_predicted": "plots",
    "plot_projection": "plots",
    "projection_nodes": "document",
    "save_figure": "plots",
    "write_report": "document",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
