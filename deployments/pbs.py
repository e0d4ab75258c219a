"""Run a sweep inside a PBS Pro / OpenPBS / Torque job: a ``qsub`` script as a string.

The job selects ``nodes`` chunks of ``ppn`` MPI processes. The Dask cluster (scheduler,
client, workers) is started with MPICH's ``mpiexec`` on the first host of
``$PBS_NODEFILE``; the kernels are separate ``mpiexec`` launches of the worker. The
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
from .mpirun import dask_mpi_launch_line

__all__ = ["render_pbs_script"]


@batch_parameters("pbs", "#PBS", '["-l mem=8gb", "-m abe"]')
def render_pbs_script(
    spec: str,
    *,
    nodes: int,
    ppn: int,
    walltime=None,
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
        MPI processes per node (``ncpus`` and ``mpiprocs`` of a chunk).
    mpiexec : str, default="mpiexec"
        The MPI launcher (MPICH hydra: ``-f $PBS_NODEFILE``).
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
    >>> script = render_pbs_script("g500.yaml", nodes=4, ppn=2, queue="workq")
    >>> "#PBS -l select=4:ncpus=2:mpiprocs=2" in script, "#PBS -q workq" in script
    (True, True)
    """
    nodes, ppn = positive_int("nodes", nodes), positive_int("ppn", ppn)
    dask_ranks = check_dask_ranks(dask_ranks)
    batch = batch_options("pbs", queue, account, walltime, extra_directives)
    resources = (
        f"select={nodes}:ncpus={ppn}:mpiprocs={ppn}"
        if select_syntax
        else f"nodes={nodes}:ppn={ppn}"
    )
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


def _directives(job_name: str, resources: str, batch: dict) -> list[str]:
    lines = [
        f"#PBS -N {job_name}",
        f"#PBS -l {resources}",
        f"#PBS -l walltime={batch['walltime']}",
        "#PBS -j oe",
    ]
    if batch["queue"] is not None:
        lines.append(f"#PBS -q {batch['queue']}")
    if batch["account"] is not None:
        lines.append(f"#PBS -A {batch['account']}")
    lines += [f"#PBS {directive}" for directive in batch["extra_directives"]]
    return lines


def _sweep_lines(arguments: str, scheduler_file, dask_ranks: int, mpiexec: str):
    """The lines that start the Dask cluster on the job's first host and sweep."""
    if scheduler_file is None:
        return [
            f'{mpiexec} -n {dask_ranks} -f "$PBS_NODEFILE" scaleprobe run '
            f"--dask-mpi {arguments}"
        ]
    start = dask_mpi_launch_line(
        scheduler_file,
        ranks=dask_ranks - 1,
        mpiexec=mpiexec,
        hostfile="$PBS_NODEFILE",
    )
    # shlex.quote put $PBS_NODEFILE in single quotes; the shell must expand it
    start = start.replace("'$PBS_NODEFILE'", '"$PBS_NODEFILE"')
    run = f"scaleprobe run --scheduler-file {shlex.quote(scheduler_file)} {arguments}"
    return scheduler_file_lines(start, scheduler_file, run)
