"""How well a model extrapolates: metrics, splitters that hold out the largest
node counts, cross-validation of an ensemble as one Dask graph, and prediction
intervals calibrated on held-out counts and sizes.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "BASELINE": "crossval",
    "ConfigurationKFold": "crossval",
    "ExtrapolationSplit": "splitters",
    "LeaveOneBandwidthOut": "splitters",
    "LeaveOneScaleOut": "splitters",
    "METRICS": "metrics",
    "PredictionInterval": "intervals",
    "calibrate_axis": "intervals",
    "calibrate_interval": "intervals",
    "conformal_quantile": "intervals",
    "default_cv": "crossval",
    "evaluate": "crossval",
    "score_predictions": "metrics",
    "summarize": "crossval",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
