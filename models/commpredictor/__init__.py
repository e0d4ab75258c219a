"""The communication predictor of Papadopoulou et al. 2015: the time of a
point-to-point phase from metrics of its pattern and mapping, known ahead of
execution.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "AREAS": "predictor",
    "CommunicationPredictor": "predictor",
    "STENCILS": "patterns",
    "benchmark_frame": "patterns",
    "build_pattern": "patterns",
    "pattern_metrics": "patterns",
    "pattern_table": "patterns",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
