"""Run a sweep inside a SLURM allocation: an ``sbatch`` script rendered as a string.

The job allocates the nodes the kernels run on, alone (``--exclusive``, by default),
for a time limit that is given, never assumed. The Dask cluster is small (scheduler,
client, one or more workers) and shares the first node: its ``srun`` step is started
with ``--overcommit`` (its ranks fit even in an allocation of one task per node) and
``--overlap`` so that the kernel launches -- ``srun --mpi=pmi2 --ntasks=R`` steps the
worker starts inside the same allocation, one at a time by default -- still get every
CPU of the allocation; ``--kill-on-bad-exit=1`` ends the step when one of its ranks
fails, instead of leaving the job to its time limit.

Two recipes:

- **in-job** (default): ``srun --mpi=pmi2 ... scaleprobe run --dask-mpi SPEC``;
- **scheduler file**: ``srun ... dask-mpi --scheduler-file F &`` then
  ``scaleprobe run --scheduler-file F SPEC``, and the cluster is shut down at the end.
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

__all__ = ["render_slurm_script"]


def _directives(nodes, ppn, exclusive, job_name, log, batch: dict) -> list[str]:
    lines = [
        f"#SBATCH -J {check_name('job_name', job_name)}",
        f"#SBATCH -N {positive_int('nodes', nodes)}",
        f"#SBATCH --ntasks-per-node={positive_int('ppn', ppn)}",
        f"#SBATCH -t {batch['walltime']}",
    ]
    # another job's processes on the nodes would be measured too
    if exclusive and "--exclusive" not in batch["extra_directives"]:
        lines.append("#SBATCH --exclusive")
    if batch["queue"] is not None:
        lines.append(f"#SBATCH -p {batch['queue']}")
    if batch["account"] is not None:
        lines.append(f"#SBATCH -A {batch['account']}")
    if log is not None:
        lines.append(f"#SBATCH -o {shlex.quote(log)}")
    lines += [f"#SBATCH {directive}" for directive in batch["extra_directives"]]
    return lines


def _check_mpi(mpi) -> None:
    if not isinstance(mpi, str) or not mpi.isidentifier():
        raise ValueError(
            f"mpi must be an srun --mpi plugin name such as 'pmi2', got {mpi!r}"
        )


@batch_parameters(
    "slurm", "#SBATCH", '["--mem=8G", "--constraint=ib"]', "``#SBATCH --exclusive``"
)
def render_slurm_script(
    spec: str,
    *,
    nodes: int,
    ppn: int,
    walltime=None,
    exclusive: bool = True,
    queue: str | None = None,
    account: str | None = None,
    job_name: str = "scaleprobe",
    log: str | None = "scaleprobe-%j.out",
    scheduler_file: str | None = None,
    dask_ranks: int = 3,
    mpi: str = "pmi2",
    overlap: bool = True,
    output: str | None = None,
    python_env: str | None = None,
    setup: Sequence[str] = (),
    extra_directives: Sequence[str] | None = None,
) -> str:
    """Render an ``sbatch`` script that runs a sweep inside its allocation.

    Parameters
    ----------
    spec : str
        Path of the campaign YAML file.
    nodes : int
        Nodes to allocate (``#SBATCH -N``); at least the largest ``nodes`` of the sweep.
    ppn : int
        MPI ranks per node (``#SBATCH --ntasks-per-node``); at least the largest
        ``ppn`` of the sweep.
    log : str or None, default="scaleprobe-%j.out"
        ``#SBATCH -o``; None leaves SLURM's default.
    mpi : str, default="pmi2"
        ``srun --mpi`` plugin; ``pmi2`` works with the MPICH of the ``mpich`` wheel.
    overlap : bool, default=True
        Start the (overcommitted) Dask step with ``srun --overlap`` (SLURM 20.11 and
        later): it holds no CPU the kernel steps need.
    {batch_parameters}

    Returns
    -------
    str
        The script text.

    Raises
    ------
    ValueError
        Naming the parameter that is not valid.

    Examples
    --------
    >>> script = render_slurm_script("g500.yaml", nodes=4, ppn=2,
    ...                              walltime="2 h", queue="batch")
    >>> "#SBATCH --exclusive" in script and "#SBATCH -t 02:00:00" in script
    True
    >>> print(script.splitlines()[-1])  # doctest: +NORMALIZE_WHITESPACE
    srun --mpi=pmi2 --overlap --overcommit --kill-on-bad-exit=1 --nodes=1 --ntasks=3
    --ntasks-per-node=3 scaleprobe run --dask-mpi g500.yaml
    """
    dask_ranks = check_dask_ranks(dask_ranks)
    _check_mpi(mpi)
    batch = batch_options("slurm", queue, account, walltime, extra_directives)
    lines = [
        "#!/bin/bash",
        *_directives(nodes, ppn, exclusive, job_name, log, batch),
        "# scaleprobe sweep inside this allocation; kernels run as srun steps",
        "set -euo pipefail",
        'cd "${SLURM_SUBMIT_DIR:-.}"',
        "",
        *activation_lines(python_env, setup),
        "",
    ]
    arguments = run_arguments(spec, output)
    lines += _sweep_lines(mpi, overlap, arguments, scheduler_file, dask_ranks)
    lines.append("")
    return "\n".join(lines)


def _sweep_lines(mpi, overlap, arguments: str, scheduler_file, dask_ranks: int):
    """The lines that start the Dask step on the first node and sweep."""
    # A rank that dies ends the step: the others would wait for it until the time limit.
    step = (
        f"srun --mpi={mpi}{' --overlap' if overlap else ''} --overcommit "
        "--kill-on-bad-exit=1 --nodes=1"
    )
    if scheduler_file is None:
        return [
            f"{step} --ntasks={dask_ranks} --ntasks-per-node={dask_ranks} "
            f"scaleprobe run --dask-mpi {arguments}"
        ]
    ranks = dask_ranks - 1
    start = (
        f"{step} --ntasks={ranks} --ntasks-per-node={ranks} dask-mpi "
        f"--scheduler-file {shlex.quote(scheduler_file)} "
        f"{dask_mpi_worker_options()}"
    )
    run = f"scaleprobe run --scheduler-file {shlex.quote(scheduler_file)} {arguments}"
    return scheduler_file_lines(start, scheduler_file, run)
