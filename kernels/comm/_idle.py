"""Waiting for MPI without taking a core from the ranks that compute.

MPI implementations busy-poll while a blocking call waits. When the ranks of a host
take turns on its cores (:class:`~scaleprobe.kernels.comm._slots.CoreSlots`), a rank
that waits in a collective for ranks still queued for a core would spin on the core
they need: with ``k`` ranks waiting and ``c`` cores, the computing ranks get ``c / (c
+ k)`` of the CPU and the queue behind them grows. The helpers here complete a request
by testing it and sleeping between tests instead, so a waiting rank uses almost no
CPU. The sleep backs off from 10 us to ``longest`` (0.2 ms), and beyond it to a
twentieth of the time already waited (at most 50 ms): a long wait, the lot of most
ranks on an oversubscribed host, wakes rarely (every wake-up costs the computing ranks
a context switch and cache), and still ends at most about 5 % late.

The communicator uses them where a rank waits for its peers to *arrive*: the barrier
that starts every collective when slots are on, the start-up barrier, the scatter of
the replay's results. Point-to-point waits stay in MPI's own blocking calls: a large
message moves in pieces, each waiting for the next test of both ends, and two
sleeping ends slowed a 1 MiB message to seconds (MPICH 4.2's shared-memory pipeline).
"""

from __future__ import annotations

import time

__all__ = ["idle_barrier", "idle_wait", "next_pause"]

LONGEST = 2e-4
#: A sleep is at most this fraction of the time waited so far ...
RELATIVE = 0.05
#: ... and never longer than this, seconds.
CEILING = 0.05


def next_pause(
    pause: float, waited: float, longest: float = LONGEST, ceiling: float = CEILING
) -> float:
    """The sleep after ``pause``, when ``waited`` seconds have passed.

    Doubles ``pause`` up to ``longest``, or up to ``RELATIVE * waited`` (at most
    ``ceiling``) once that is longer.

    Examples
    --------
    >>> next_pause(1e-5, 0.0)
    2e-05
    >>> next_pause(2e-4, 0.002)  # 2 ms waited: stays at 0.2 ms
    0.0002
    >>> next_pause(1e-3, 0.1)   # 100 ms waited: up to 5 ms
    0.002
    >>> round(next_pause(0.04, 10.0), 6)  # long waits: at most 50 ms
    0.05
    """
    return min(2 * pause, max(longest, min(RELATIVE * waited, ceiling)))


def _mpi():
    from mpi4py import MPI

    return MPI


def idle_wait(
    request, status=None, longest: float = LONGEST, ceiling: float = CEILING
) -> None:
    """Complete an MPI request, sleeping between tests.

    Only for requests that need no progress from this rank once their peers are
    there (a barrier's empty messages): a large message is moved in pieces, each
    of which waits for the next test of both ends, so a sleeping end slows it down
    by up to ``ceiling`` per piece (MPICH 4.2's shared-memory pipeline took seconds
    for 1 MiB).

    Parameters
    ----------
    request : mpi4py.MPI.Request
        The request.
    status : mpi4py.MPI.Status, optional
        Filled when the request completes.
    longest : float, default=2e-4
        Longest sleep between two tests in the first ``longest / RELATIVE`` seconds
        (see :func:`next_pause`).
    ceiling : float, default=CEILING
        Longest sleep between two tests of a long wait.
    """
    delay, start = 1e-5, time.perf_counter()
    while not request.Test(status):
        time.sleep(delay)
        delay = next_pause(delay, time.perf_counter() - start, longest, ceiling)


def idle_barrier(mpi_comm) -> None:
    """A barrier on ``mpi_comm`` that sleeps while it waits.

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Comm
        The communicator.
    """
    idle_wait(mpi_comm.Ibarrier())
