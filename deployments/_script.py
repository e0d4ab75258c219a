"""Pieces shared by the job-script renderers: checks, time limits, shell lines."""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import re
import shlex
import textwrap
from collections.abc import Sequence
from numbers import Integral, Real

from scaleprobe.framework.units import UnitError, parse_duration

__all__ = [
    "activation_lines",
    "batch_options",
    "batch_parameters",
    "check_dask_ranks",
    "check_name",
    "positive_int",
    "run_arguments",
    "scheduler_file_lines",
]

#: The parameters every batch-job renderer takes, documented once for all of them:
#: ``{system}`` is the batch system's name in the Dask config (``slurm``, ``pbs``),
#: ``{prefix}`` its directive, ``{example}`` two of its options and ``{exclusive}``
#: the directives that give a job its nodes alone.
_BATCH_PARAMETERS = """\
walltime : str or float, optional
    Wall-clock limit of the job: seconds, ``"90 min"``, ``"2 h"`` or
    ``"[D-]HH:MM:SS"``. Default: ``jobqueue.{system}.walltime`` of the Dask config;
    one of them is needed (dask-jobqueue's own 30 minutes are not taken: a sweep
    cut at a limit nobody chose is a surprise).
exclusive : bool, default=True
    The job's nodes are its own ({exclusive}): another job's processes there would
    be measured too. False lets the batch system share them.
queue, account : str, optional
    Queue (partition) and account of the job. Default: ``jobqueue.{system}.queue``
    and ``jobqueue.{system}.account``.
job_name : str, default="scaleprobe"
    The job's name.
scheduler_file : str, optional
    Use the scheduler-file recipe with this file instead of ``--dask-mpi``.
dask_ranks : int, default=3
    MPI ranks of the Dask cluster (scheduler, client, workers), on the job's first
    node.
output : str, optional
    Results path, overriding the spec's ``output``.
python_env : str, optional
    Virtual environment directory to activate, or ``conda:NAME``.
setup : sequence of str, default=()
    Shell lines run first (``module load ...``).
extra_directives : sequence of str, optional
    More ``{prefix}`` options, e.g. ``{example}``. Default:
    ``jobqueue.{system}.job-extra-directives``.
"""
_PLACEHOLDER = re.compile(r"^( *)\{batch_parameters\}\n", re.MULTILINE)


def batch_parameters(system: str, prefix: str, example: str, exclusive: str):
    """Decorate a renderer: its docstring's ``{batch_parameters}`` line becomes the
    shared parameters' documentation, worded for one batch system.

    Parameters
    ----------
    system : str
        The batch system's section of the ``jobqueue`` Dask config.
    prefix : str
        Its directive, e.g. ``#SBATCH``.
    example : str
        Extra directives to show, e.g. ``["--mem=8G"]``.
    exclusive : str
        What ``exclusive`` asks for, e.g. ``#SBATCH --exclusive``.

    Returns
    -------
    callable
        The decorator.

    Examples
    --------
    >>> @batch_parameters("pbs", "#PBS", '["-m abe"]', "``place=scatter:excl``")
    ... def render(**options):
    ...     '''Render.
    ...
    ...     Parameters
    ...     ----------
    ...     {batch_parameters}
    ...     '''
    >>> "More ``#PBS`` options" in render.__doc__
    True
    """
    text = _BATCH_PARAMETERS.format(
        system=system, prefix=prefix, example=example, exclusive=exclusive
    )

    def decorate(function):
        function.__doc__ = _PLACEHOLDER.sub(
            lambda match: textwrap.indent(text, match.group(1)), function.__doc__, 1
        )
        return function

    return decorate


_CLOCK = re.compile(r"^(?:(\d+)-)?(\d+):([0-5]?\d):([0-5]?\d)$")
_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_name(name: str, value):
    """Return ``value`` if it is None or a plain word a batch directive can hold."""
    if value is not None and (not isinstance(value, str) or not _NAME.match(value)):
        raise ValueError(
            f"{name} must be a word of letters, digits and _.+- (it goes into a batch "
            f"directive), got {value!r}"
        )
    return value


def check_dask_ranks(value) -> int:
    """dask-mpi needs a scheduler, a client and at least one worker."""
    value = positive_int("dask_ranks", value)
    if value < 3:
        raise ValueError(
            "dask_ranks must be at least 3 (scheduler, client, one worker), "
            f"got {value}"
        )
    return value


def _walltime(value) -> str:
    """Normalize a time limit to ``HH:MM:SS`` (hours may exceed 24).

    Accepts seconds (a number), a duration string (``"90 min"``, ``"2 h"``) or a clock
    string (``"1:30:00"``, ``"2-00:00:00"`` with days).
    """
    if isinstance(value, str) and _CLOCK.match(value.strip()):
        days, hours, minutes, seconds = _CLOCK.match(value.strip()).groups()
        total = ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(
            seconds
        )
    else:
        if isinstance(value, bool) or not isinstance(value, (Real, str)):
            raise ValueError(
                f"walltime must be seconds, a duration such as '2 h' or a clock time "
                f"such as '01:30:00', got {value!r}"
            )
        try:
            total = math.ceil(parse_duration(value))
        except UnitError as exc:
            raise ValueError(f"walltime: {exc}") from None
    if total < 1:
        raise ValueError(f"walltime must be at least one second, got {value!r}")
    hours, rest = divmod(total, 3600)
    return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"


@functools.cache
def _jobqueue_defaults() -> dict:
    """dask-jobqueue's own defaults, the ``jobqueue`` section of its YAML file.

    Read without importing dask_jobqueue (which would import the scheduler) and
    without touching the global Dask config.
    """
    import yaml

    spec = importlib.util.find_spec("dask_jobqueue")  # finds, does not import
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(folder, "jobqueue.yaml")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as file:
                return (yaml.safe_load(file) or {}).get("jobqueue") or {}
    return {}


def _configured_walltime(system: str):
    """``jobqueue.<system>.walltime`` as the user configured it, or None.

    dask-jobqueue registers its defaults in the Dask config when it is imported;
    its 30 minutes there are nobody's choice. (Where it is imported, a limit
    configured to exactly its default cannot be told from it, and is refused too:
    give it as ``walltime``.)
    """
    import dask.config  # the config alone: light

    value = dask.config.get(f"jobqueue.{system}.walltime", None)
    packaged = (_jobqueue_defaults().get(system) or {}).get("walltime")
    if value is not None and value == packaged:
        for defaults in dask.config.defaults:
            section = (defaults.get("jobqueue") or {}).get(system) or {}
            if section.get("walltime") == value:
                return None
    return value


def batch_options(system: str, queue, account, walltime, extra_directives) -> dict:
    """Resolve and check the batch options every job-script renderer shares.

    The names are dask-jobqueue's, and so are the defaults: an argument left None
    takes ``jobqueue.<system>.queue``, ``.account``, ``.walltime`` or
    ``.job-extra-directives`` from the Dask config (``~/.config/dask/jobqueue.yaml``,
    ``DASK_JOBQUEUE__SLURM__QUEUE``...), whose own defaults are dask-jobqueue's: no
    queue or account, no extra directive. The time limit has no default: it is
    given, or configured.

    Parameters
    ----------
    system : {"slurm", "pbs"}
        The ``jobqueue`` section to read.
    queue, account : str or None
        Queue (SLURM partition) and account to charge.
    walltime : str, float or None
        Seconds, a duration (``"90 min"``) or a clock time (``"[D-]HH:MM:SS"``).
    extra_directives : sequence of str or None
        More options of the batch system, one per directive line.

    Returns
    -------
    dict
        ``queue``, ``account``, ``walltime`` (``HH:MM:SS``) and ``extra_directives``
        (a list).

    Raises
    ------
    ValueError
        A value that cannot go into a directive, or no time limit at all.

    Examples
    --------
    >>> batch_options("pbs", "workq", None, "90 min", None)
    {'queue': 'workq', 'account': None, 'walltime': '01:30:00', 'extra_directives': []}
    """
    given = {
        "queue": queue,
        "account": account,
        "job-extra-directives": extra_directives,
    }
    if any(value is None for value in given.values()):
        import dask.config  # the config alone: light

        defaults = _jobqueue_defaults().get(system) or {}
        for key, value in given.items():
            if value is None:
                given[key] = dask.config.get(
                    f"jobqueue.{system}.{key}", defaults.get(key)
                )
    if walltime is None:
        walltime = _configured_walltime(system)
    directives = given["job-extra-directives"] or ()
    if isinstance(directives, str) or not all(
        isinstance(d, str) and "\n" not in d for d in directives
    ):
        raise ValueError(
            f"extra_directives must be a list of single-line strings such as "
            f"'--mem=8G', got {directives!r}"
        )
    if walltime is None:
        raise ValueError(
            f"walltime is needed: give walltime= (e.g. '2 h') or set "
            f"jobqueue.{system}.walltime in the Dask config; the job ends at it"
        )
    return {
        "queue": check_name("queue", given["queue"]),
        "account": check_name("account", given["account"]),
        "walltime": _walltime(walltime),
        "extra_directives": list(directives),
    }


def activation_lines(python_env: str | None, setup: Sequence[str]) -> list[str]:
    """Shell lines that make ``scaleprobe`` available in the job.

    ``setup`` lines (``module load ...``) come first, verbatim; ``python_env`` is a
    virtual environment directory whose ``bin/activate`` is sourced, or a conda
    environment written ``conda:NAME``.
    """
    if isinstance(setup, str) or not all(isinstance(s, str) for s in setup):
        raise ValueError(f"setup must be a list of shell lines, got {setup!r}")
    lines = list(setup)
    if python_env is None:
        lines.append("# scaleprobe must be on PATH (activate its environment here)")
    elif not isinstance(python_env, str) or not python_env.strip():
        raise ValueError(
            "python_env must be a virtual environment directory or 'conda:NAME', "
            f"got {python_env!r}"
        )
    elif python_env.startswith("conda:"):
        lines.append(f"conda activate {shlex.quote(python_env[len('conda:') :])}")
    else:
        lines.append(f". {shlex.quote(python_env.rstrip('/') + '/bin/activate')}")
    return lines


def run_arguments(spec: str, output: str | None) -> str:
    """``SPEC [--output PATH]``, quoted for the shell."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"spec must be the path of a campaign YAML file, got {spec!r}")
    text = shlex.quote(spec)
    if output is not None:
        text += f" --output {shlex.quote(output)}"
    return text


def scheduler_file_lines(
    start_cluster: str, scheduler_file: str, run: str
) -> list[str]:
    """Start a dask-mpi cluster in the background, run the sweep on it, shut it down.

    The sweep starts when the scheduler file appears; if the cluster ends before it
    does, the script fails saying so.
    """
    if (
        not isinstance(scheduler_file, str)
        or not scheduler_file
        or any(c in scheduler_file for c in "'\"$`\\\n")
    ):
        raise ValueError(
            "scheduler_file must be a path without quotes, '$', '`', backslashes or "
            f"newlines, got {scheduler_file!r}"
        )
    quoted = shlex.quote(scheduler_file)
    return [
        f"rm -f {quoted}",
        f"{start_cluster} &",
        "cluster_pid=$!",
        # Wait as long as the cluster lives: on a busy machine its start takes minutes.
        f'while [ ! -s {quoted} ] && kill -0 "$cluster_pid" 2>/dev/null; do '
        "sleep 1; done",
        f'[ -s {quoted} ] || {{ echo "the Dask cluster ended without writing '
        f'{quoted}" >&2; exit 1; }}',
        "status=0",
        f"{run} || status=$?",
        f"python -m scaleprobe.deployments.shutdown {quoted} || true",
        'wait "$cluster_pid" || true',
        'exit "$status"',
    ]
