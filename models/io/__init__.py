"""Data in and out: measurement files of other tools (CSV, Parquet, Extra-P text,
JSON and JSON Lines) as results Datasets, and model files.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "ESTIMATORS": "serialization",
    "MEASUREMENT_FORMATS": "readers",
    "MeasurementFileError": "readers",
    "load_measurements": "readers",
    "load_models": "serialization",
    "measurement_format": "readers",
    "save_models": "serialization",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
