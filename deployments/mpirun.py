"""Run a sweep inside one ``mpiexec`` job with dask-mpi (no batch system).

Two recipes, both on the hosts of a host file (or this host alone):

- **in-job** (default): ``mpiexec -n 3 scaleprobe run --dask-mpi SPEC`` -- rank 0 is
  the Dask scheduler, rank 1 runs the sweep, ranks 2 and up are workers;
- **scheduler file**: ``mpiexec -n 2 dask-mpi --scheduler-file F`` starts the
  scheduler (with its dashboard) and workers in the background, ``scaleprobe run
  --scheduler-file F SPEC`` connects to them, and the cluster is shut down at the end.
  Useful when several campaigns share one cluster or the dashboard should outlive a
  sweep.

The Dask ranks need little CPU: the kernels of the sweep are separate ``mpiexec``
launches started by a worker, one at a time by default.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from ._script import (
    activation_lines,
    check_dask_ranks,
    run_arguments,
    scheduler_file_lines,
)

__all__ = [
    "WORKER_DEATH_TIMEOUT",
    "dask_mpi_launch_line",
    "dask_mpi_worker_options",
    "render_mpirun_script",
]

#: Workers run plain (no nanny): a nanny would fork MPI-initialised processes.
WORKER_CLASS = "distributed.Worker"

#: Seconds a dask-mpi worker waits for its scheduler before it closes. A plain
#: ``Worker`` without one tries for ever: a rank that never reached its scheduler (or
#: lost it) held the recipe's ``mpiexec``, and the job, until the walltime.
WORKER_DEATH_TIMEOUT = 300


def dask_mpi_worker_options(death_timeout: float = WORKER_DEATH_TIMEOUT) -> str:
    """The ``dask-mpi`` options of the recipes' workers.

    Parameters
    ----------
    death_timeout : float, default=WORKER_DEATH_TIMEOUT
        Seconds a worker waits for its scheduler (at its start, or after losing it)
        before it closes, so that its rank ends and the job with it.

    Returns
    -------
    str
        ``--worker-class`` and ``--worker-options``, quoted for a shell.

    Examples
    --------
    >>> print(dask_mpi_worker_options(60))
    --worker-class distributed.Worker --worker-options '{"death_timeout": 60}'
    """
    if isinstance(death_timeout, bool) or not isinstance(death_timeout, int | float):
        raise ValueError(f"death_timeout must be seconds, got {death_timeout!r}")
    if not death_timeout > 0:
        raise ValueError(f"death_timeout must be positive, got {death_timeout!r}")
    options = json.dumps({"death_timeout": death_timeout})
    return f"--worker-class {WORKER_CLASS} --worker-options {shlex.quote(options)}"


def _mpiexec(mpiexec: str, ranks: int, hostfile: str | None) -> str:
    if not isinstance(mpiexec, str) or not mpiexec.strip():
        raise ValueError(f"mpiexec must be a launcher command, got {mpiexec!r}")
    text = f"{mpiexec} -n {ranks}"
    if hostfile is not None:
        text += f" -f {shlex.quote(hostfile)}"
    return text


def dask_mpi_launch_line(
    scheduler_file: str,
    *,
    ranks: int = 2,
    mpiexec: str = "mpiexec",
    hostfile: str | None = None,
    death_timeout: float = WORKER_DEATH_TIMEOUT,
) -> str:
    """The ``mpiexec`` line that boots a Dask cluster with ``dask-mpi``.

    Parameters
    ----------
    scheduler_file : str
        Where the scheduler writes its address; clients connect with
        ``scaleprobe run --scheduler-file``.
    ranks : int, default=2
        MPI ranks: rank 0 is the scheduler, the others are workers.
    mpiexec : str, default="mpiexec"
        The MPI launcher (MPICH hydra syntax: ``-n``, ``-f hostfile``).
    hostfile : str, optional
        Host file passed as ``-f``.
    death_timeout : float, default=WORKER_DEATH_TIMEOUT
        Seconds a worker waits for its scheduler before it closes
        (:func:`dask_mpi_worker_options`).

    Returns
    -------
    str
        One shell command line.

    Examples
    --------
    >>> for part in dask_mpi_launch_line("sched.json", ranks=3).split(" --"):
    ...     print(part)
    mpiexec -n 3 dask-mpi
    scheduler-file sched.json
    worker-class distributed.Worker
    worker-options '{"death_timeout": 300}'
    """
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 2:
        raise ValueError(
            f"ranks must be at least 2 (scheduler and one worker), got {ranks!r}"
        )
    return (
        f"{_mpiexec(mpiexec, ranks, hostfile)} dask-mpi --scheduler-file "
        f"{shlex.quote(scheduler_file)} {dask_mpi_worker_options(death_timeout)}"
    )


def render_mpirun_script(
    spec: str,
    *,
    dask_ranks: int = 3,
    hostfile: str | None = None,
    scheduler_file: str | None = None,
    mpiexec: str = "mpiexec",
    output: str | None = None,
    python_env: str | None = None,
    setup: Sequence[str] = (),
) -> str:
    """Render a bash script that runs a sweep on a dask-mpi cluster under ``mpiexec``.

    Parameters
    ----------
    spec : str
        Path of the campaign YAML file.
    dask_ranks : int, default=3
        MPI ranks of the Dask cluster (scheduler, client, workers); at least 3.
    hostfile : str, optional
        Host file for ``mpiexec -f``.
    scheduler_file : str, optional
        Use the scheduler-file recipe with this file instead of ``--dask-mpi``.
    mpiexec : str, default="mpiexec"
        The MPI launcher.
    output : str, optional
        Results path, overriding the spec's ``output``.
    python_env : str, optional
        Virtual environment directory to activate, or ``conda:NAME``.
    setup : sequence of str, default=()
        Shell lines run first.

    Returns
    -------
    str
        The script text.

    Examples
    --------
    >>> print(render_mpirun_script("graph500.yaml").splitlines()[-1])
    mpiexec -n 3 scaleprobe run --dask-mpi graph500.yaml
    """
    dask_ranks = check_dask_ranks(dask_ranks)
    lines = [
        "#!/bin/bash",
        "# scaleprobe sweep on a dask-mpi cluster started by mpiexec",
        "set -euo pipefail",
        "",
        *activation_lines(python_env, setup),
        "",
    ]
    arguments = run_arguments(spec, output)
    if scheduler_file is None:
        lines.append(
            f"{_mpiexec(mpiexec, dask_ranks, hostfile)} scaleprobe run --dask-mpi "
            f"{arguments}"
        )
    else:
        start = dask_mpi_launch_line(
            scheduler_file, ranks=dask_ranks - 1, mpiexec=mpiexec, hostfile=hostfile
        )
        run = (
            f"scaleprobe run --scheduler-file {shlex.quote(scheduler_file)} {arguments}"
        )
        lines += scheduler_file_lines(start, scheduler_file, run)
    lines.append("")
    return "\n".join(lines)
