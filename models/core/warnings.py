"""Warnings scaleprobe's models raise when a fit or a projection should not be trusted.

All derive from :class:`ScaleprobeWarning`, so one filter silences or escalates
them all (``warnings.simplefilter("error", ScaleprobeWarning)``); the command line
prints each one on its own line.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings

__all__ = [
    "DegenerateFitWarning",
    "ExtrapolationWarning",
    "InsufficientDataWarning",
    "MemoryRegimeWarning",
    "NoTrendWarning",
    "NoiseWarning",
    "PhysicalLimitWarning",
    "RegimeChangeWarning",
    "ScaleprobeWarning",
    "UnreliableModelWarning",
]


class ScaleprobeWarning(UserWarning):
    """Base class of every warning scaleprobe's models raise."""


class DegenerateFitWarning(ScaleprobeWarning):
    """A fitted law lost its meaning: a zero coefficient, a parameter at its bound.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("alpha at its bound", DegenerateFitWarning)
    >>> issubclass(caught[0].category, ScaleprobeWarning)
    True
    """


class InsufficientDataWarning(ScaleprobeWarning):
    """The data cannot support what was asked (too few node counts, residuals)."""


class NoTrendWarning(InsufficientDataWarning):
    """The measurements show no trend beyond their noise: the level is projected.

    A trend too small to show in the data may still be there; the interval holds
    every slope the data cannot reject.
    """


class ExtrapolationWarning(ScaleprobeWarning):
    """A prediction reaches beyond the trained range (nodes, scale, bandwidth, link)."""


class MemoryRegimeWarning(ExtrapolationWarning):
    """A rank's projected working set and the training's lie on two sides of the
    host's last-level cache, or the projection goes much further out of the cache
    than the training: the cost per unit of work measured does not hold there (a
    DRAM-bound rank is slower, a rank whose share comes to fit in the cache
    faster)."""


class PhysicalLimitWarning(ScaleprobeWarning):
    """A projection falls below a physical floor the link model gives."""


class UnreliableModelWarning(ScaleprobeWarning):
    """A model extrapolates no better than the naive baseline, or not within 50 %."""


class RegimeChangeWarning(UnreliableModelWarning):
    """The time jumps over the last measured step: an algorithm or protocol switch.

    Laws fitted across the jump extrapolate the jump itself; what follows the
    largest count cannot be known from one point in the new regime.
    """


class NoiseWarning(ScaleprobeWarning):
    """Run-to-run spread is as large as the effect being modelled."""


_QUIET = contextvars.ContextVar("scaleprobe_quiet_warnings", default=False)


@contextlib.contextmanager
def quiet():
    """Silence scaleprobe's warnings in this thread (e.g. in cross-validation folds).

    Unlike :func:`warnings.catch_warnings`, which swaps process-wide state and so
    cannot be used by tasks running in parallel threads, this only affects the
    current thread's context.
    """
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


@contextlib.contextmanager
def kept_state():
    """Give back the process-wide warning state as it was, after work in threads.

    :func:`warnings.catch_warnings` saves the process-wide filters and display
    functions on entry and puts them back on exit, so two threads that enter and
    leave it out of order (the folds of a cross-validation fitting with pandas and
    scikit-learn, which use it) can leave another thread's ``"ignore"`` in place,
    and every warning after it is lost. Wrapped around a threaded computation, the
    state is the caller's again when it ends.

    Examples
    --------
    >>> before = list(warnings.filters)
    >>> with kept_state():
    ...     warnings.simplefilter("ignore")  # as a thread's catch_warnings leaves it
    >>> list(warnings.filters) == before
    True
    """
    module = warnings
    saved = (list(module.filters), module.showwarning, module._showwarnmsg_impl)
    try:
        yield
    finally:
        module.filters, module.showwarning, module._showwarnmsg_impl = saved
        module._filters_mutated()


def warn(message, category, stacklevel=2):
    """Issue a scaleprobe warning unless :func:`quiet` is active."""
    if not _QUIET.get():
        warnings.warn(message, category, stacklevel=stacklevel + 1)
