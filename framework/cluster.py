"""Start or connect to the Dask cluster that runs a sweep.

Three ways, one result (a :class:`distributed.Client`):

- embedded (default): a :class:`distributed.LocalCluster` started here;
- an existing scheduler, by address or scheduler file;
- ``dask-mpi``: the scheduler, this client and the workers are the ranks of one MPI job
  (``mpiexec -n N scaleprobe run --dask-mpi SPEC``): rank 0 is the scheduler, rank 1
  runs the sweep, ranks 2 and up are workers (dask-mpi's layout, booted by
  :mod:`scaleprobe.framework._dask_mpi`).
"""

from __future__ import annotations

import contextlib
import sys

from distributed import Client, LocalCluster

from . import config
from ._connect import (
    ClusterError,
    ClusterSizeError,
    check_workers,
    connect,
    connect_timeout,
)
from ._connect import scheduler_address as _scheduler_address

__all__ = ["ClusterError", "cluster_client"]


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
        import logging

        from mpi4py import MPI

        from ._dask_mpi import boot

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
            dashboard_address=dashboard_address
            or config.get("cluster.dashboard-address"),
        )
        if address is None:  # scheduler and worker ranks: shut down by the client
            sys.exit(0)
        with Client(address) as client:
            try:
                _announce(client, announce)
                yield client
            finally:
                # Scheduler and workers close, and their ranks exit with this one;
                # a scheduler that is already gone has nothing left to shut down.
                with contextlib.suppress(OSError, TimeoutError):
                    client.shutdown()
        return
    if address or scheduler_file:
        timeout = connect_timeout(timeout)
        if scheduler_file:
            address = _scheduler_address(scheduler_file, timeout)
        with connect(address, timeout) as client:
            _announce(client, announce)
            yield client
        return
    backend = config.resolve(backend, "cluster.backend")
    if backend not in ("local", "slurm"):
        raise ValueError(f"cluster backend must be 'local' or 'slurm', got {backend!r}")
    if backend == "slurm":
        from .jobqueue import slurm_cluster

        with slurm_cluster() as cluster, Client(cluster) as client:
            _announce(client, announce)
            yield client
        return
    with (
        LocalCluster(
            n_workers=check_workers(config.resolve(workers, "cluster.workers")),
            threads_per_worker=config.get("cluster.threads-per-worker"),
            dashboard_address=dashboard_address
            or config.get("cluster.dashboard-address"),
            processes=True,
        ) as cluster,
        Client(cluster) as client,
    ):
        _announce(client, announce)
        yield client


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
