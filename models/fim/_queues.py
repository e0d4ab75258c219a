r"""The servers of FiM-Com's tandem queues (seed 003, Eq. 13-16): the service laws'
parameters, a FIFO server, and the metadata server M whose speed
:math:`\nu \ln(1 + \chi)` depends on the data points present. The collectives
that pass jobs through them are in :mod:`scaleprobe.models.fim.queues`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ServiceLaws",
    "fifo_departures",
    "metadata_departures",
    "metadata_departures_many",
]


@dataclass(frozen=True)
class ServiceLaws:
    """Parameters of the service laws (Eq. 13-16).

    Attributes
    ----------
    zeta_min, zeta_max : float
        Range of the data transfer rate, jobs/s.
    metadata_rate : float
        :math:`\\nu`, jobs/s per unit of :math:`\\ln(1 + \\chi)`.
    eta : float
        Mean initialisation delay, s.
    psi : float
        Mean receive time of one job by one receiver, s.
    """

    zeta_min: float
    zeta_max: float
    metadata_rate: float
    eta: float
    psi: float


def fifo_departures(arrivals, services):
    """Departure times of a FIFO single server (Lindley's recursion, vectorised).

    ``d_k = max(a_k, d_{k-1}) + s_k`` equals ``S_k + max_{j<=k}(a_j - S_{j-1})`` with
    ``S`` the cumulative services, computed along the last axis.

    Parameters
    ----------
    arrivals : array-like
        Non-decreasing arrival times (last axis).
    services : array-like
        Service times, same shape (or broadcastable).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> fifo_departures([0.0, 0.0, 5.0], [1.0, 1.0, 1.0]).tolist()
    [1.0, 2.0, 6.0]
    """
    arrivals = np.asarray(arrivals, dtype=float)
    services = np.broadcast_to(np.asarray(services, dtype=float), arrivals.shape)
    done = np.cumsum(services, axis=-1)
    return done + np.maximum.accumulate(arrivals - (done - services), axis=-1)


def metadata_departures(arrivals, work, sizes, rate):
    """Departures of a FIFO server whose speed depends on the data points present.

    Parameters
    ----------
    arrivals : array-like
        Non-decreasing arrival times of the groups.
    work : array-like
        Work of each group (its service time at speed 1).
    sizes : array-like
        Data points in each group.
    rate : callable
        Speed for ``chi`` data points present (including the one in service).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> metadata_departures([0.0, 0.0], [1.0, 1.0], [1, 1], lambda chi: 1.0).tolist()
    [1.0, 2.0]
    """
    arrivals = [float(a) for a in arrivals]
    work = [float(w) for w in work]
    sizes = [float(s) for s in sizes]
    count = len(arrivals)
    out = np.empty(count)
    now, arrived, present = 0.0, 0, 0.0
    for k in range(count):
        now = max(now, arrivals[k])
        stop = bisect.bisect_right(arrivals, now, lo=arrived)
        if stop > arrived:
            present += sum(sizes[arrived:stop])
            arrived = stop
        remaining = work[k]
        while True:
            speed = rate(present)
            finish = now + remaining / speed
            if arrived < count and arrivals[arrived] < finish:
                remaining -= (arrivals[arrived] - now) * speed
                now = arrivals[arrived]
                present += sizes[arrived]
                arrived += 1
            else:
                now = finish
                break
        out[k] = now
        present -= sizes[k]
    return out


def metadata_departures_many(arrivals, work, sizes, nu):
    """:func:`metadata_departures` at speed ``nu * log1p(chi)`` for independent
    senders at once: one row of ``arrivals`` and ``work`` per sender, the same
    ``sizes``; the loop runs over the groups, each step over all senders.

    A group's data points present when its service starts are those arrived and not
    yet departed: FIFO makes that the sizes from the group itself up to the last
    arrival, a difference of cumulative sizes.

    Parameters
    ----------
    arrivals : ndarray of shape (senders, groups)
        Non-decreasing arrival times of each sender's groups.
    work : ndarray of shape (senders, groups)
        Work of each group (its service time at speed 1).
    sizes : ndarray of shape (groups,)
        Data points per group.
    nu : float
        The metadata rate, jobs/s per unit of ``log1p(chi)``.

    Returns
    -------
    ndarray of shape (senders, groups)
        Departure times.
    """
    senders, count = arrivals.shape
    rows = np.arange(senders)
    cumulative = np.concatenate([[0.0], np.cumsum(sizes, dtype=float)])
    ahead = np.concatenate([arrivals, np.full((senders, 1), np.inf)], axis=1)
    out = np.empty((senders, count))
    now = np.zeros(senders)
    arrived = np.zeros(senders, dtype=np.int64)
    for k in range(count):
        np.maximum(now, arrivals[:, k], out=now)
        np.maximum(arrived, k + 1, out=arrived)
        while True:  # everything that has arrived by now joins the queue
            came = ahead[rows, arrived] <= now
            if not came.any():
                break
            arrived += came
        remaining = work[:, k].copy()
        serving = np.ones(senders, dtype=bool)
        while True:  # serve, the speed changing at every arrival before the end
            speed = nu * np.log1p(cumulative[arrived] - cumulative[k])
            finish = now + remaining / speed
            following = ahead[rows, arrived]
            interrupted = serving & (following < finish)
            ended = serving & ~interrupted
            now[ended] = finish[ended]
            serving = interrupted
            if not serving.any():
                break
            remaining[serving] -= (following - now)[serving] * speed[serving]
            now[serving] = following[serving]
            arrived += serving
        out[:, k] = now
    return out
