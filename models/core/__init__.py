"""The ground every model family stands on: the interface, the feature frames,
configurations and the warnings.

:class:`PerformanceModelTags` marks the scikit-learn tags every model shares;
:func:`make_features` and :func:`prediction_frame` build the frames models fit and
predict on; :func:`reduce_configurations` groups measurements into configurations.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "Configurations": "configs",
    "DegenerateFitWarning": "warnings",
    "ExtrapolationWarning": "warnings",
    "FEATURE_COLUMNS": "features",
    "InsufficientDataWarning": "warnings",
    "MEASURED_COLUMNS": "configs",
    "MemoryRegimeWarning": "warnings",
    "NoTrendWarning": "warnings",
    "NoiseWarning": "warnings",
    "DEFAULT_LEVEL": "interface",
    "INTERVAL_FLOOR": "interface",
    "INTERVAL_METHODS": "interface",
    "ModelBase": "interface",
    "PerformanceModel": "interface",
    "PerformanceModelTags": "interface",
    "describe_model": "interface",
    "fitted_ranges": "interface",
    "frame_defaults_of": "interface",
    "interval_method_of": "interface",
    "PhysicalLimitWarning": "warnings",
    "RegimeChangeWarning": "warnings",
    "ScaleprobeWarning": "warnings",
    "UnreliableModelWarning": "warnings",
    "collapse_trials": "configs",
    "configuration_keys": "configs",
    "data_size": "features",
    "is_measured": "configs",
    "link_of": "features",
    "make_features": "features",
    "measured_frame": "measured",
    "measured_summary": "measured",
    "measured_table": "measured",
    "measurement_sets": "features",
    "prediction_frame": "features",
    "reduce_configurations": "configs",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
