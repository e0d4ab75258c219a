"""Start or connect to the Dask cluster that runs a sweep.

Three ways, one result (a :class:`distributed.Client`):

- embedded (default): a :class:`distributed.LocalCluster` started here, or with
  ``backend="slurm"`` dask-jobqueue's ``SLURMCluster``
  (:mod:`scaleprobe.framework.jobqueue`);
- an existing scheduler, by address or scheduler file, joined within a bounded
  time or refused with a one-line reason;
- ``dask-mpi``: the scheduler, this client and the workers are the ranks of one MPI
  job (``mpiexec -n N scaleprobe run --dask-mpi SPEC``): rank 0 is the scheduler,
  rank 1 runs the sweep, ranks 2 and up are workers (dask-mpi's layout, booted by
  :func:`boot`).

Booting from MPI differs from ``dask_mpi.initialize`` in two ways:

- The ranks that wait for the scheduler's address wait in a non-blocking broadcast
  that they test between short sleeps. A blocking MPI call polls instead: with MPICH,
  the client and worker ranks each kept a core busy for the whole of the scheduler's
  start, the longest part of a small sweep on a loaded host.
- A scheduler or worker that fails to start aborts the whole MPI job
  (``MPI_Abort``). With a blocking broadcast the other ranks waited for an address
  that never came, and the job ran until its time limit.

Dask's distributed scheduler is imported when a cluster is started or joined, not
when this module is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
import traceback
from typing import TYPE_CHECKING

from . import config
from ._interrupt import terminal_signals_blocked
from ._logs import worker_options

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "UNMEASURED_EXIT",
    "ClusterError",
    "ClusterSizeError",
    "UnmeasuredError",
    "boot",
    "check_workers",
    "cluster_client",
    "connect",
    "connect_timeout",
    "named_cluster",
    "scheduler_address",
]

#: Room for the scheduler's address in the broadcast (``tcp://[v6 address]:port``).
ADDRESS_BYTES = 256
#: Seconds between two tests of the broadcast while a rank waits for the address.
POLL = 0.05
#: Seconds a failing server waits between writing why and ``MPI_Abort``, so that
#: mpiexec forwards the message before it kills the job.
ABORT_GRACE = 0.5


class ClusterError(RuntimeError):
    """The cluster could not be started or reached; the message says which and why."""


class ClusterSizeError(ClusterError, ValueError):
    """The MPI job is too small to hold a ``dask-mpi`` cluster (a user mistake)."""


class UnmeasuredError(ClusterError):
    """A sweep ended with points left unmeasured by the infrastructure.

    Its workers or their batch allocations went away (or the cluster had none for
    ``scaleprobe.cluster.worker-wait`` seconds); every finished point is stored and
    none of the others is stored as failed. The command exits with
    :data:`UNMEASURED_EXIT` (75, ``EX_TEMPFAIL``): run it again.
    """


#: Exit code of a run that left points unmeasured (``EX_TEMPFAIL``: try again).
UNMEASURED_EXIT = 75


def named_cluster(*, address=None, scheduler_file=None, backend=None):
    """The client of the cluster a command names, or a null context.

    Parameters
    ----------
    address : str, optional
        Scheduler address of an existing cluster.
    scheduler_file : str, optional
        Scheduler file of an existing cluster.
    backend : {"local", "slurm"}, optional
        Kind of cluster to start.

    Returns
    -------
    contextlib.AbstractContextManager
        :func:`cluster_client` for what is named; when nothing is, a null context
        that yields None (the caller starts its own embedded cluster, with its own
        worker count).
    """
    if address or scheduler_file:
        return cluster_client(address=address, scheduler_file=scheduler_file)
    if backend:
        return cluster_client(backend=backend)
    return contextlib.nullcontext()


@contextlib.contextmanager
def cluster_client(
    *,
    address=None,
    scheduler_file=None,
    workers=None,
    dask_mpi=False,
    dashboard_address=None,
    announce=True,
    backend=None,
    timeout=None,
):
    """Yield a connected client, starting or joining a cluster as asked.

    Parameters
    ----------
    address : str, optional
        Scheduler address (``tcp://host:8786``) of an existing cluster.
    scheduler_file : str, optional
        Scheduler file of an existing cluster.
    workers : int, optional
        Workers of the embedded cluster (setting ``scaleprobe.cluster.workers``).
    dask_mpi : bool, default=False
        Boot the cluster from this process's MPI job with dask-mpi. Only the client
        rank returns from this context; the scheduler and worker ranks serve until
        the client closes, then exit.
    dashboard_address : str, optional
        Where the embedded cluster serves its dashboard (``":0"`` for any free port).
    announce : bool, default=True
        Print the dashboard link to standard error.
    backend : {"local", "slurm"}, optional
        Cluster to start when joining none (setting ``scaleprobe.cluster.backend``):
        an embedded ``LocalCluster``, or dask-jobqueue's ``SLURMCluster`` whose jobs
        run the points in their allocations (:mod:`scaleprobe.framework.jobqueue`).
    timeout : float, optional
        Seconds to wait for an existing cluster's scheduler file, its scheduler and
        its first worker (setting ``scaleprobe.cluster.connect-timeout``).

    Yields
    ------
    distributed.Client
        The client; closed (and an embedded cluster shut down) on exit.

    Raises
    ------
    ClusterError
        An existing cluster's scheduler file, scheduler or workers did not answer
        within ``timeout``, or an MPI job is too small for ``dask_mpi``.
    SettingsError
        ``workers`` (or the setting) is not a whole number of at least 1.
    """
    if sum(bool(x) for x in (address, scheduler_file, dask_mpi)) > 1:
        raise ValueError("give at most one of address, scheduler_file and dask_mpi")
    if dask_mpi:
        joined = _mpi_job_client(dashboard_address)
    elif address or scheduler_file:
        joined = _existing_client(address, scheduler_file, timeout)
    else:
        joined = _started_client(backend, workers, dashboard_address)
    with joined as client:
        _announce(client, announce)
        yield client


@contextlib.contextmanager
def _mpi_job_client(dashboard_address):
    """Boot the cluster from this MPI job; only the client rank comes back."""
    import logging

    from distributed import Client
    from mpi4py import MPI

    size = MPI.COMM_WORLD.Get_size()
    if size < 3:
        raise ClusterSizeError(
            f"--dask-mpi needs at least 3 MPI ranks (one scheduler, one client, "
            f"one or more workers), this job has {size}: "
            "mpiexec -n 3 scaleprobe run --dask-mpi SPEC"
        )
    # At shutdown the ranks see each other's connections close; that is not news.
    for name in (
        "distributed.batched",
        "distributed.core",
        "distributed.worker",
        "distributed.scheduler",
        "distributed.comm",
    ):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    # Plain workers (a Nanny-spawned one would inherit PMI_FD and hang); ranks
    # wait for the scheduler without spinning, and one that cannot start aborts
    # the job instead of leaving the others waiting.
    address = boot(
        MPI.COMM_WORLD,
        interface=config.get("cluster.dask-mpi-interface"),
        dashboard_address=dashboard_address or config.get("cluster.dashboard-address"),
    )
    if address is None:  # scheduler and worker ranks: shut down by the client
        sys.exit(0)
    with Client(address) as client:
        try:
            yield client
        finally:
            # Scheduler and workers close, and their ranks exit with this one;
            # a scheduler that is already gone has nothing left to shut down.
            with contextlib.suppress(OSError, TimeoutError):
                client.shutdown()


@contextlib.contextmanager
def _existing_client(address, scheduler_file, timeout):
    """Join a running scheduler by address or scheduler file."""
    timeout = connect_timeout(timeout)
    if scheduler_file:
        address = scheduler_address(scheduler_file, timeout)
    with connect(address, timeout) as client:
        yield client


@contextlib.contextmanager
def _started_client(backend, workers, dashboard_address):
    """Start the configured kind of cluster and a client of it."""
    from distributed import Client, LocalCluster

    backend = config.resolve(backend, "cluster.backend")
    if backend not in ("local", "slurm"):
        raise ValueError(f"cluster backend must be 'local' or 'slurm', got {backend!r}")
    if backend == "slurm":
        from .jobqueue import slurm_cluster

        with slurm_cluster() as cluster, Client(cluster) as client:
            yield client
        return
    workers = check_workers(config.resolve(workers, "cluster.workers"))
    # Threads by default: a worker process would be spawned by importing the
    # caller's script again (a script without a __main__ guard would start its
    # sweep twice). Launches are child processes either way.
    processes = bool(config.get("cluster.processes"))
    with contextlib.ExitStack() as stack:
        # Worker processes do not get the terminal's Ctrl-C: the run closes them
        # (a signal that comes meanwhile is raised once the cluster is held).
        with terminal_signals_blocked():
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=config.get("cluster.threads-per-worker"),
                    dashboard_address=dashboard_address
                    or config.get("cluster.dashboard-address"),
                    processes=processes,
                    # a worker process sends its log lines to the run's file; a
                    # thread logs through this process's handlers already
                    **(worker_options() if processes else {}),
                )
            )
        yield stack.enter_context(Client(cluster))


def _announce(client: Client, announce: bool) -> None:
    if announce:
        from .dashboard import dashboard_root

        root = dashboard_root(client)
        print(
            "scaleprobe: Dask dashboard at "
            + (f"{root}/status" if root else "not available"),
            file=sys.stderr,
            flush=True,
        )


# ------------------------------------------------------ an existing cluster


def check_workers(workers) -> int:
    """Return ``workers`` as a positive int, or raise a one-line error.

    Examples
    --------
    >>> check_workers(2)
    2
    >>> check_workers(0)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    scaleprobe.framework.settings.SettingsError: workers must be ... got 0
    """
    from .settings import SettingsError

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SettingsError(
            f"workers must be a whole number of at least 1, got {workers!r}"
        )
    return workers


def connect_timeout(value=None) -> float:
    """Seconds to wait for a cluster (setting ``scaleprobe.cluster.connect-timeout``).

    Parameters
    ----------
    value : float, optional
        Explicit seconds; the setting when None.

    Returns
    -------
    float
    """
    from .settings import SettingsError

    value = config.resolve(value, "cluster.connect-timeout")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SettingsError(
            "setting 'scaleprobe.cluster.connect-timeout': a positive number of "
            f"seconds, got {value!r}"
        )
    return float(value)


def scheduler_address(path, timeout, *, clock=time.monotonic, sleep=time.sleep):
    """Read the scheduler address from a scheduler file, waiting for it to appear.

    Parameters
    ----------
    path : str or path-like
        Scheduler file written by ``dask scheduler --scheduler-file``.
    timeout : float
        Seconds to wait for the file to exist and hold an address.
    clock, sleep : callable
        Time source and sleeper (injected in tests).

    Returns
    -------
    str
        The address, e.g. ``"tcp://127.0.0.1:8786"``.

    Raises
    ------
    ClusterError
        The file did not appear, or held no address, within ``timeout``.
    """
    deadline = clock() + timeout
    problem = "does not exist"
    while True:
        try:
            with open(path) as f:
                address = json.load(f)["address"]
            if isinstance(address, str) and address:
                return address
            problem = "holds no scheduler address"
        except FileNotFoundError:
            problem = "does not exist"
        except IsADirectoryError:
            problem = "is a directory, not a scheduler file"
        except (ValueError, KeyError, TypeError):
            problem = "holds no scheduler address (not a Dask scheduler file?)"
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        if clock() >= deadline:
            raise ClusterError(
                f"scheduler file {os.fspath(path)} {problem} after waiting "
                f"{timeout:g} s (start the scheduler with 'dask scheduler "
                f"--scheduler-file {os.fspath(path)}', or raise "
                "scaleprobe.cluster.connect-timeout)"
            )
        sleep(min(0.1, max(deadline - clock(), 0)))


def connect(address, timeout):
    """Return a client of the scheduler at ``address`` that has a worker.

    Parameters
    ----------
    address : str
        Scheduler address.
    timeout : float
        Seconds to wait for the connection, and then again for a first worker.

    Returns
    -------
    distributed.Client

    Raises
    ------
    ClusterError
        No scheduler answered, or it has no worker, within ``timeout``.
    """
    from distributed import Client

    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(
            f"no Dask scheduler answered at {address} within {timeout:g} s "
            f"({_first_line(exc)}); check the address, or raise "
            "scaleprobe.cluster.connect-timeout"
        ) from None
    except ValueError as exc:  # e.g. an unknown protocol
        client = None
        problem = _first_line(exc)
    else:
        problem = None
    if client is None:
        raise ClusterError(f"cannot connect to {address!r}: {problem}")
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError):
        client.close()
        raise ClusterError(
            f"the Dask cluster at {address} has no worker after {timeout:g} s; "
            "start one ('dask worker ADDRESS') or raise "
            "scaleprobe.cluster.connect-timeout"
        ) from None
    return client


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# ------------------------------------------------------------- an MPI job


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
