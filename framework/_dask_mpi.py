"""Boot a Dask cluster from the ranks of one MPI job, without spinning while it starts.

Rank 0 serves the scheduler, rank 1 returns its address (it runs the sweep), ranks 2
and up serve workers -- the layout of dask-mpi. Two things differ from
``dask_mpi.initialize``:

- The ranks that wait for the scheduler's address wait in a non-blocking broadcast
  that they test between short sleeps. A blocking MPI call polls instead: with MPICH,
  the client and worker ranks each kept a core busy for the whole of the scheduler's
  start, the longest part of a small sweep on a loaded host.
- A scheduler or worker that fails to start aborts the whole MPI job
  (``MPI_Abort``). With a blocking broadcast the other ranks waited for an address
  that never came, and the job ran until its time limit.
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback

__all__ = ["boot"]

#: Room for the scheduler's address in the broadcast (``tcp://[v6 address]:port``).
ADDRESS_BYTES = 256
#: Seconds between two tests of the broadcast while a rank waits for the address.
POLL = 0.05
#: Seconds a failing server waits between writing why and ``MPI_Abort``, so that
#: mpiexec forwards the message before it kills the job.
ABORT_GRACE = 0.5


def _encode(address: str) -> bytearray:
    data = address.encode()
    if len(data) > ADDRESS_BYTES:
        raise ValueError(
            f"scheduler address {address!r} is longer than {ADDRESS_BYTES} bytes"
        )
    return bytearray(data.ljust(ADDRESS_BYTES, b"\0"))


async def _serve_scheduler(comm, options: dict, started: list) -> None:
    from distributed import Scheduler

    async with Scheduler(**options) as scheduler:
        request = comm.Ibcast(_encode(scheduler.address), root=0)
        while not request.Test():
            await asyncio.sleep(POLL)
        started.append(True)
        await scheduler.finished()


async def _serve_worker(address: str, options: dict, started: list) -> None:
    from distributed import Worker

    async with Worker(address, **options) as worker:
        started.append(True)
        await worker.finished()


def _receive_address(comm) -> str:
    buffer = bytearray(ADDRESS_BYTES)
    request = comm.Ibcast(buffer, root=0)
    while not request.Test():
        time.sleep(POLL)
    return bytes(buffer).rstrip(b"\0").decode()


def _serve_or_abort(comm, role: str, serve, *arguments) -> None:
    """Serve until shut down; a server that cannot start aborts the MPI job."""
    started: list = []
    try:
        asyncio.run(serve(*arguments, started))
    except BaseException as exc:
        if started:  # it served; a failure while closing must not kill the client
            print(
                f"scaleprobe: the Dask {role} of MPI rank {comm.Get_rank()} did not "
                f"close cleanly: {type(exc).__name__}: {exc}",
                file=sys.stderr,
                flush=True,
            )
            return
        # Without its scheduler or worker the other ranks would wait forever. The
        # reason comes first and in one write: MPI_Abort may kill the job before
        # mpiexec has forwarded the rest of the traceback.
        sys.stderr.write(
            f"scaleprobe: the Dask {role} of MPI rank {comm.Get_rank()} could not "
            f"start: {type(exc).__name__}: {exc}; aborting the MPI job\n"
            + "".join(traceback.format_exception(exc))
        )
        sys.stderr.flush()
        time.sleep(ABORT_GRACE)
        comm.Abort(1)


def boot(comm, *, interface=None, dashboard_address=None, nthreads=1):
    """Start this rank's part of the cluster.

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The job's communicator, at least 3 ranks.
    interface : str, optional
        Network interface of the scheduler and the workers (``"ib0"``).
    dashboard_address : str, optional
        Where the scheduler serves its dashboard (``"127.0.0.1:8787"``).
    nthreads : int, default=1
        Threads of each worker.

    Returns
    -------
    str or None
        On rank 1 the scheduler's address, once the scheduler listens. On the other
        ranks None, after their scheduler or worker has been shut down by the client.
    """
    rank = comm.Get_rank()
    if rank == 0:
        options = {"interface": interface, "dashboard_address": dashboard_address}
        _serve_or_abort(comm, "scheduler", _serve_scheduler, comm, options)
        return None
    address = _receive_address(comm)
    if rank == 1:
        return address
    options = {
        "interface": interface,
        "nthreads": nthreads,
        "name": rank,
        "memory_limit": "auto",
    }
    _serve_or_abort(comm, "worker", _serve_worker, address, options)
    return None
