"""The one fit workflow: every model the data identify, cross-validated, fitted,
calibrated and judged; and its result.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "EnsembleFit": "result",
    "default_ensemble": "fit",
    "fit_ensemble": "fit",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
