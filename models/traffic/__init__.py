"""The traffic-informed model: laws of computation and of traffic counts, priced
by a link model, so that a projection knows the latency floor and can move to
another network.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "COUNT_EXPONENTS": "model",
    "TrafficModel": "model",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
