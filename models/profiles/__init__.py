"""Profiles of real applications: many series read, fitted and projected at once.

A profile holds hundreds to thousands of series (call paths x metrics) measured at a
few process counts. :func:`read_profile` reads Caliper, Hatchet, Score-P CUBE,
Extra-P and CSV profiles into one tidy :class:`ProfileTable`;
:func:`fit_profile` fits every series as one Dask graph with a search designed for
many series (closed-form least squares over a small space of laws per series, checked
on held-out counts); the :class:`ProfileFit` it returns projects, ranks and saves
them all.
"""

from __future__ import annotations

from .._lazy import attach

#: Public name -> submodule that defines it.
_EXPORTS = {
    "Candidate": "search",
    "PROFILE_FORMATS": "readers",
    "ProfileFit": "result",
    "ProfileProjection": "result",
    "SeriesModel": "model",
    "fit_profile": "fit",
    "load_profile_fit": "result",
    "write_profile_report": "report",
    "ProfileSeries": "table",
    "ProfileTable": "table",
    "profile_format": "readers",
    "read_profile": "readers",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = attach(__name__, _EXPORTS)
