"""Experiment design: which runs narrow the projection's interval most per cost.

:func:`design_state` fits the design's laws to a measured series and keeps the
plausible ones; :func:`plan_design` ranks candidate points (new counts and repeats)
by the expected reduction of the interval's log width at the target per core-hour
they are predicted to cost (:class:`CostLaw`), and picks what a budget affords.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "Candidate": "criterion",
    "CostLaw": "state",
    "Design": "plan",
    "DesignLaw": "laws",
    "DesignState": "state",
    "FittedLaw": "laws",
    "Planned": "criterion",
    "Ranked": "plan",
    "calibration_ratios": "state",
    "conformal_rate": "state",
    "default_laws": "laws",
    "design_state": "state",
    "expected_log_width": "criterion",
    "fit_law": "laws",
    "log_width": "criterion",
    "narrowing": "plan",
    "plan_design": "plan",
    "pooled_rate": "state",
    "rank_candidates": "plan",
    "separation": "criterion",
    "target_interval": "criterion",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
