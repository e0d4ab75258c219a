"""Whether a launch failed because its batch allocation ended, not its program.

When a SLURM job reaches its walltime or is cancelled, the point its worker was
running ends too: its ``srun`` step is cancelled (``*** STEP 123.4 ON node CANCELLED
AT ... DUE TO TIME LIMIT ***``), and every ``srun`` started after that fails at once
(``Unable to create step for job 123: Job/step already completing or completed``).
Those are the infrastructure's failures, not the program's: stored as ``failed`` they
would hide that the point was never measured, and a worker whose allocation is ending
turned the rest of a sweep into failures within a second. :func:`allocation_failure`
tells them apart, from what ``srun`` printed and from the state of the allocation
itself (``squeue``).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess

__all__ = ["SLURM_SIGNS", "AllocationFailure", "allocation_failure", "allocation_state"]

#: What ``srun`` and ``slurmstepd`` print when the allocation, not the program, ended
#: a step (lower case). Only for launches that ended by themselves: when scaleprobe
#: kills a launch that ran out of time, ``srun`` prints "job step aborted" too.
SLURM_SIGNS = (
    "already completing",
    "unable to create step",
    "due to time limit",
    "cancelled at",
    "invalid job id specified",
    "job step aborted",
    "forcing job termination",
)


@dataclasses.dataclass(frozen=True)
class AllocationFailure:
    """Why a launch's failure is the allocation's.

    Attributes
    ----------
    reason : str
        One line: the allocation's state or what ``srun`` said.
    ended : bool
        Whether the allocation itself is over (its worker can launch nothing more).
    """

    reason: str
    ended: bool


def allocation_state(job: str) -> str | None:
    """Return the state of SLURM job ``job``, ``""`` if SLURM no longer knows it.

    Parameters
    ----------
    job : str
        The job id (``SLURM_JOB_ID``).

    Returns
    -------
    str or None
        ``"RUNNING"``, ``"COMPLETING"``, ``"CANCELLED"``, ``"TIMEOUT"``...; ``""``
        when the job is gone; None when ``squeue`` cannot be asked.
    """
    try:
        done = subprocess.run(
            ["squeue", "-h", "-j", str(job), "-o", "%T"],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return "" if "invalid job id" in done.stderr.lower() else None
    return done.stdout.strip().upper()


def _sign(text: str) -> str:
    """The first line of ``text`` that shows the allocation ended a step, or ``""``."""
    for line in text.splitlines():
        if any(sign in line.lower() for sign in SLURM_SIGNS):
            return line.strip()
    return ""


def allocation_failure(result: dict, environ=None) -> AllocationFailure | None:
    """Say whether a launch failed because its SLURM allocation ended.

    Parameters
    ----------
    result : dict
        The launch's result (:func:`~scaleprobe.framework.launch.launch_point`):
        ``status``, ``command``, ``stderr``.
    environ : mapping, optional
        The worker's environment (``SLURM_JOB_ID``); :data:`os.environ` by default.

    Returns
    -------
    AllocationFailure or None
        None for a launch outside SLURM, one that succeeded, or one whose program
        failed while its allocation runs.

    Examples
    --------
    >>> allocation_failure({"status": "failed", "command": ["mpiexec"]}, environ={})
    >>> failure = allocation_failure(
    ...     {"status": "failed", "command": ["srun", "--mpi=pmi2"], "stderr":
    ...      "srun: error: Unable to create step for job 7: Job/step already "
    ...      "completing or completed"}, environ={})
    >>> failure.ended, failure.reason[:30]
    (True, 'srun: error: Unable to create ')
    """
    environ = os.environ if environ is None else environ
    job = environ.get("SLURM_JOB_ID")
    command = result.get("command") or [""]
    if result.get("status") not in ("failed", "timeout"):
        return None
    if not job and command[0] != "srun":
        return None
    state = allocation_state(job) if job else None
    if state == "":
        return AllocationFailure(f"SLURM job {job} has ended", ended=True)
    if state and state != "RUNNING":
        return AllocationFailure(f"SLURM job {job} is {state.lower()}", ended=True)
    sign = _sign(result.get("stderr") or "") if result["status"] == "failed" else ""
    if sign:
        lower = sign.lower()
        ended = "already completing" in lower or "time limit" in lower
        return AllocationFailure(sign[:300], ended=ended or "invalid job id" in lower)
    return None
