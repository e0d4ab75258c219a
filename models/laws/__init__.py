"""Scaling laws of the completion time: the equations of Medya et al. 2017 as
presets of one estimator, the automatic normal-form search of Extra-P, the naive
trend every score is read against, the level of a series without trend, and the
round counts of collectives.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "FlatTrend": "flat",
    "NO_TREND_LEVEL": "trend",
    "PMNFSearch": "pmnf",
    "PMNF_EXPONENTS": "pmnf",
    "PRESETS": "scaling_law",
    "PowerLawBaseline": "baseline",
    "REGIME_FACTOR": "regime",
    "REGIME_SLOPE": "regime",
    "REGIME_SPREAD": "regime",
    "RegimeTrend": "baseline",
    "RoundLaw": "rounds",
    "SHAPES": "rounds",
    "ScalingLaw": "scaling_law",
    "Term": "terms",
    "find_jumps": "regime",
    "no_trend": "flat",
    "parse_term": "terms",
    "trend_tests": "flat",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
