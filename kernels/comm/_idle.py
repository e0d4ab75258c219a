"""Waiting for MPI without taking a core from the ranks that compute.

MPI implementations busy-poll while a blocking call waits. When the ranks of a host
take turns on its cores (:class:`~scaleprobe.kernels.comm._slots.CoreSlots`), a rank
that waits in a collective for ranks still queued for a core would spin on the core
they need: with ``k`` ranks waiting and ``c`` cores, the computing ranks get ``c / (c
+ k)`` of the CPU and the queue behind them grows. The helpers here complete a request
by testing it and sleeping between tests instead (the sleep backs off from 10 us to
``longest``), so a waiting rank uses almost no CPU.
"""

from __future__ import annotations

import time

__all__ = ["idle_barrier", "idle_wait", "idle_waitall"]

LONGEST = 1e-3


def _mpi():
    from mpi4py import MPI

    return MPI


def idle_wait(request, status=None, longest: float = LONGEST) -> None:
    """Complete an MPI request, sleeping between tests.

    Parameters
    ----------
    request : mpi4py.MPI.Request
        The request.
    status : mpi4py.MPI.Status, optional
        Filled when the request completes.
    longest : float, default=1e-3
        Longest sleep between two tests, seconds.
    """
    delay = 1e-5
    while not request.Test(status):
        time.sleep(delay)
        delay = min(2 * delay, longest)


def idle_waitall(requests, statuses=None, longest: float = LONGEST) -> None:
    """Complete MPI requests, sleeping between tests.

    Parameters
    ----------
    requests : list of mpi4py.MPI.Request
        The requests.
    statuses : list of mpi4py.MPI.Status, optional
        Filled in order when all have completed.
    longest : float, default=1e-3
        Longest sleep between two tests, seconds.
    """
    delay = 1e-5
    testall = _mpi().Request.Testall
    while not (testall(requests) if statuses is None else testall(requests, statuses)):
        time.sleep(delay)
        delay = min(2 * delay, longest)


def idle_barrier(mpi_comm) -> None:
    """A barrier on ``mpi_comm`` that sleeps while it waits.

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Comm
        The communicator.
    """
    idle_wait(mpi_comm.Ibarrier())
