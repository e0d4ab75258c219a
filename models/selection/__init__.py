"""Which model scaleprobe trusts for a projection, and why."""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "BASELINE_MARGIN": "rules",
    "FLAT": "no_trend",
    "PLAUSIBLE_FACTOR": "rules",
    "REGIME": "regimes",
    "RELIABLE_SMAPE": "rules",
    "blind_to": "rules",
    "check_crossover": "rules",
    "continue_regime": "regimes",
    "select": "rules",
    "trust_flat": "no_trend",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
