"""Run a sweep inside a PBS Pro / OpenPBS / Torque job: a ``qsub`` script as a string.

The job selects ``nodes`` chunks of ``ppn`` MPI processes, one chunk per host and
the hosts its own (``place=scatter:excl``, by default). The Dask cluster (scheduler,
client, workers) is started with ``mpiexec -host FIRST:RANKS`` on the first host of
``$PBS_NODEFILE`` -- all of its ranks there, however few slots a chunk has; the
kernels are separate ``mpiexec`` launches of the worker, each told its hosts from
``$PBS_NODEFILE`` and its ranks per host (:mod:`scaleprobe.framework.hosts`). The
scheduler-file recipe starts the cluster in the background and connects to it.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ._script import (
    activation_lines,
    batch_options,
    batch_parameters,
    check_dask_ranks,
    check_name,
    positive_int,
    run_arguments,
    scheduler_file_lines,
)
from .mpirun import dask_mpi_worker_options

__all__ = ["render_pbs_script"]


@batch_parameters(
    "pbs", "#PBS", '["-l mem=8gb", "-m abe"]', "``place=scatter:excl``, Torque ``-n``"
)
def render_pbs_script(
    spec: str,
    *,
    nodes: int,
    ppn: int,
    walltime=None,
    exclusive: bool = True,
    queue: str | None = None,
    account: str | None = None,
    job_name: str = "scaleprobe",
    scheduler_file: str | None = None,
    dask_ranks: int = 3,
    mpiexec: str = "mpiexec",
    select_syntax: bool = True,
    output: str | None = None,
    python_env: str | None = None,
    setup: Sequence[str] = (),
    extra_directives: Sequence[str] | None = None,
) -> str:
    """Render a PBS script that runs a sweep inside its job.

    Parameters
    ----------
    spec : str
        Path of the campaign YAML file.
    nodes : int
        Nodes (``select=`` chunks, or ``nodes=`` with Torque syntax).
    ppn : int
        MPI ranks per node (``ncpus`` and ``mpiprocs`` of a chunk).
    mpiexec : str, default="mpiexec"
        The launcher of the Dask cluster's ranks: that of the MPI mpi4py loads (the
        ``mpich`` wheel's by default). ``-n`` and ``-host`` are all it is given;
        MPICH's and Open MPI's both take them.
    select_syntax : bool, default=True
        PBS Pro ``-l select=N:ncpus=P:mpiprocs=P``; False gives Torque's
        ``-l nodes=N:ppn=P``.
    {batch_parameters}

    Returns
    -------
    str
        The script text.

    Examples
    --------
    >>> script = render_pbs_script("g500.yaml", nodes=4, ppn=2, walltime="1 h")
    >>> "#PBS -l select=4:ncpus=2:mpiprocs=2" in script
    True
    >>> "#PBS -l place=scatter:excl" in script
    True
    """
    nodes, ppn = positive_int("nodes", nodes), positive_int("ppn", ppn)
    dask_ranks = check_dask_ranks(dask_ranks)
    batch = batch_options("pbs", queue, account, walltime, extra_directives)
    if select_syntax:
        resources = [
            f"select={nodes}:ncpus={ppn}:mpiprocs={ppn}",
            f"place=scatter{':excl' if exclusive else ''}",
        ]
    else:  # Torque: one entry per node; -n asks for the nodes alone
        resources = [f"nodes={nodes}:ppn={ppn}"]
        batch["extra_directives"] = [
            *(["-n"] if exclusive else []),
            *batch["extra_directives"],
        ]
    lines = [
        "#!/bin/bash",
        *_directives(check_name("job_name", job_name), resources, batch),
        "# scaleprobe sweep inside this job; kernels run as mpiexec launches",
        "set -euo pipefail",
        'cd "${PBS_O_WORKDIR:-.}"',
        "",
        *activation_lines(python_env, setup),
        "",
        *_sweep_lines(run_arguments(spec, output), scheduler_file, dask_ranks, mpiexec),
        "",
    ]
    return "\n".join(lines)


def _directives(job_name: str, resources: list, batch: dict) -> list[str]:
    lines = [
        f"#PBS -N {job_name}",
        *(f"#PBS -l {resource}" for resource in resources),
        f"#PBS -l walltime={batch['walltime']}",
        "#PBS -j oe",
    ]
    if batch["queue"] is not None:
        lines.append(f"#PBS -q {batch['queue']}")
    if batch["account"] is not None:
        lines.append(f"#PBS -A {batch['account']}")
    lines += [f"#PBS {directive}" for directive in batch["extra_directives"]]
    return lines


#: The first host of the job, where the Dask ranks run (and the script itself).
FIRST_HOST = '$(head -n 1 "$PBS_NODEFILE")'


def _sweep_lines(arguments: str, scheduler_file, dask_ranks: int, mpiexec: str):
    """The lines that start the Dask cluster on the job's first host and sweep.

    ``-host FIRST:RANKS`` puts every Dask rank there: left to ``$PBS_NODEFILE``,
    hydra would fill the first host's ``mpiprocs`` slots and start the rest on the
    second host.
    """
    if not isinstance(mpiexec, str) or not mpiexec.strip():
        raise ValueError(f"mpiexec must be a launcher command, got {mpiexec!r}")
    if scheduler_file is None:
        return [
            f'{mpiexec} -n {dask_ranks} -host "{FIRST_HOST}:{dask_ranks}" '
            f"scaleprobe run --dask-mpi {arguments}"
        ]
    ranks = dask_ranks - 1
    start = (
        f'{mpiexec} -n {ranks} -host "{FIRST_HOST}:{ranks}" dask-mpi '
        f"--scheduler-file {shlex.quote(scheduler_file)} {dask_mpi_worker_options()}"
    )
    run = f"scaleprobe run --scheduler-file {shlex.quote(scheduler_file)} {arguments}"
    return scheduler_file_lines(start, scheduler_file, run)
