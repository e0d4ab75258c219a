"""Which model scaleprobe trusts for a projection, and why.

:func:`choose_model` (in :mod:`~scaleprobe.models.selection.choose`) is the one
place the choice is made; it returns a :class:`Verdict` with every reason, which
:func:`render_verdict` prints. Its rules are in :mod:`.rules` (what cannot be right,
preference, honesty), :mod:`.regimes` (a change of regime at the largest count) and
:mod:`.no_trend` (no trend beyond the noise).
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "BASELINE_MARGIN": "limits",
    "FLAT": "no_trend",
    "PLAUSIBLE_FACTOR": "limits",
    "REGIME": "regimes",
    "RELIABLE_SMAPE": "limits",
    "Verdict": "choose",
    "blind_to": "rules",
    "choose_model": "choose",
    "continue_regime": "regimes",
    "floor_model": "rules",
    "render_verdict": "choose",
    "select_model": "rules",
    "smape_of_log": "limits",
    "trust_flat": "no_trend",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
