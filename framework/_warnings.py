"""Warnings of a sweep: what a run noticed and went on with."""

from __future__ import annotations

__all__ = [
    "DamagedPointWarning",
    "FailedPointsWarning",
    "LinkShortfallWarning",
    "OversubscriptionWarning",
    "SweepWarning",
]


class SweepWarning(UserWarning):
    """Base class of the warnings a sweep or its store raises.

    The command line prints each one as one ``scaleprobe: warning:`` line.
    """


class DamagedPointWarning(SweepWarning):
    """A stored point file is damaged (truncated, another campaign's): set aside."""


class OversubscriptionWarning(SweepWarning):
    """Points would run more MPI ranks than the host has cores, on a wall clock.

    In throttle modes ``none`` and ``netns`` time is wall-clock time: ranks that share
    a core wait for each other and the measurement says more about the host than about
    the program. (Mode ``emulated`` charges CPU time and keeps host-wide core slots.)
    """


class FailedPointsWarning(SweepWarning):
    """Points of a sweep failed, timed out or were invalid: stored, and named.

    Their errors and launch logs are listed by ``scaleprobe show``; ``retry`` measures
    them again.
    """


class LinkShortfallWarning(SweepWarning):
    """Points of throttle mode ``netns`` ran over a link slower than it was shaped.

    Each such point records the payload rate a short probe achieved over its link
    just before the launch (``link_rate``) beside the shaped rate
    (``link_shaped_rate``); on a busy host the kernel cannot forward the shaped rate.
    """
