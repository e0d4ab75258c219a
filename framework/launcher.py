"""Check a sweep's launcher before anything runs: the program's MPI, the hosts.

An ``mpiexec`` of another MPI than the program's does not fail: every rank starts as
a job of its own, and the points are measured on one rank each. So before a sweep
plans or runs, :func:`check_launcher` finds out which MPI the program links
(:mod:`~scaleprobe.framework.sitempi`: ``ldd`` of an executable, the mpi4py of a
Python program) and compares it with the ``mpiexec`` of the launch settings. Where
they differ it launches with the matching ``mpiexec`` installed beside the program's
MPI library (Debian's ``/usr/bin/mpiexec.openmpi``, ``PREFIX/bin/mpiexec`` of a
module), unless ``scaleprobe.launch.mpiexec`` names one; where there is none, or the
one named is of the other MPI, the sweep is refused in one line that says which
``mpiexec`` to set. It also refuses points of more nodes than the hosts a launch
is given (a host file, ``$PBS_NODEFILE``).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil

from . import config
from .hosts import launch_hosts
from .launch import _uses_srun, launch_environment
from .planning import plan
from .settings import LaunchSettings, SettingsError
from .sitempi import (
    MpiImplementation,
    binary_mpi,
    family_name,
    launcher_mpi,
    launchers_beside,
    python_mpi,
)
from .spec import Spec

__all__ = ["check_launcher", "describe_mpi", "program_mpi"]

_SENTINEL = "__scaleprobe_launcher__"
_PYTHON = re.compile(r"^python[\d.]*$")


def _executable(word: str, env: dict) -> str | None:
    path = word if os.sep in word else shutil.which(word, path=env.get("PATH"))
    if path and os.path.isfile(path) and os.access(path, os.X_OK):
        return os.path.abspath(path)
    return None


def _interpreter(path: str, env: dict) -> str | None:
    """The Python that runs ``path``: itself, or the one its ``#!`` line names."""
    if _PYTHON.match(os.path.basename(path)):
        return path
    try:
        with open(path, "rb") as file:
            first = file.readline(256).decode("utf-8", "replace")
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        words = words[1:]
        words[0] = shutil.which(words[0], path=env.get("PATH")) or words[0]
    if words and _PYTHON.match(os.path.basename(words[0])):
        return words[0]
    return None


def _external_program(spec: Spec, point, env: dict) -> str | None:
    """The program an external command starts under ``{mpiexec}``, or None.

    None where the template does not start its program with ``{mpiexec}`` (its
    launcher is the user's) or no word after it is an executable file.
    """
    from scaleprobe.kernels.external import build_command as external_command

    argv = external_command(
        spec.params, dict(point.coords), mpiexec=_SENTINEL, ranks=point.ranks
    )
    if _SENTINEL not in argv:
        return None
    for word in argv[argv.index(_SENTINEL) + 1 :]:
        if word.startswith("-") or word.isdigit():
            continue
        found = _executable(word, env)
        if found is not None:
            return found
    return None


def program_mpi(spec: Spec, settings: LaunchSettings) -> MpiImplementation | None:
    """The MPI a campaign's program links, where it can be told.

    A registered kernel runs in this Python: the MPI its mpi4py loads in the
    launch's environment. An external program: the MPI its executable links, or,
    for a Python program, that interpreter's mpi4py.

    Parameters
    ----------
    spec : Spec
        The campaign.
    settings : LaunchSettings
        How it is launched.

    Returns
    -------
    MpiImplementation or None
        None for a campaign without points, a program linking no MPI, or one this
        cannot find.
    """
    points = plan(spec)
    if not points:
        return None
    env = launch_environment(spec, points[0], settings)
    if spec.kernel != "external":
        return python_mpi(None, env)
    program = _external_program(spec, points[0], env)
    if program is None:
        return None
    python = _interpreter(program, env)
    return python_mpi(python, env) if python else binary_mpi(program, env)


def _matching_launcher(program: MpiImplementation):
    """The first ``mpiexec`` beside the program's MPI that is of its family:
    ``(path, MpiImplementation)``, or None."""
    for path in launchers_beside(program.library, program.family):
        found = launcher_mpi(path)
        if found is not None and found.family == program.family:
            return path, found
    return None


def _refusal(program, settings: LaunchSettings, configured, found) -> str:
    wanted = family_name(program.family)
    have = settings.mpiexec_mpi or family_name(settings.mpiexec_family)
    where = (
        f"setting 'scaleprobe.launch.mpiexec': {configured} is {have}"
        if configured
        else f"the mpiexec found, {settings.mpiexec}, is {have}"
    )
    example = found[0] if found else f"/path/to/{program.family}/bin/mpiexec"
    return (
        f"{where} but the program links {program.describe()}, so every rank would "
        f"run alone; set scaleprobe.launch.mpiexec to {wanted}'s mpiexec (e.g. "
        f"DASK_SCALEPROBE__LAUNCH__MPIEXEC={example})"
    )


def _check_hosts(spec: Spec, settings: LaunchSettings) -> None:
    if spec.throttle.mode != "none" or _uses_srun(settings):
        return
    try:
        hosts = launch_hosts(settings.hostfile)
    except OSError as exc:
        raise SettingsError(f"the launches' hosts cannot be read: {exc}") from None
    points = plan(spec)
    if hosts is None or not points:
        return
    largest = max(int(point.coords["nodes"]) for point in points)
    try:
        hosts.first(largest)
    except ValueError as exc:
        raise SettingsError(f"{exc}; give more hosts or fewer nodes") from None


def check_launcher(spec: Spec, settings: LaunchSettings) -> LaunchSettings:
    """Check that a sweep's launches can run as its points ask; fix what can be.

    Parameters
    ----------
    spec : Spec
        The campaign.
    settings : LaunchSettings
        The launch settings of this process's configuration.

    Returns
    -------
    LaunchSettings
        ``settings`` with the program's MPI (``program``) and, where the
        ``mpiexec`` found is of another MPI than the program's, the matching one
        installed beside the program's MPI library.

    Raises
    ------
    SettingsError
        One line: the ``mpiexec`` is of another MPI than the program and none
        matches (or the configured one does not), a namespace network (which
        launches with MPICH's hydra) for an Open MPI program, or points of more
        nodes than the hosts given.
    """
    _check_hosts(spec, settings)
    program = program_mpi(spec, settings)
    if program is None:
        return settings
    settings = dataclasses.replace(settings, program=program)
    if spec.throttle.mode == "netns":
        if program.family != "mpich":
            raise SettingsError(
                f"throttle mode 'netns' starts ranks with MPICH's hydra and the "
                f"program links {program.describe()}; run it on MPICH (or an MPI of "
                "its ABI), or use throttle mode 'emulated' or 'none'"
            )
        return settings
    if _uses_srun(settings) or settings.mpiexec_family in (program.family, "unknown"):
        return settings
    configured = config.get("launch.mpiexec")
    found = _matching_launcher(program)
    if found is None or configured:
        raise SettingsError(_refusal(program, settings, configured, found))
    path, mpi = found
    return dataclasses.replace(
        settings, mpiexec=path, mpiexec_family=mpi.family, mpiexec_mpi=mpi.name
    )


def describe_mpi(settings: LaunchSettings) -> str:
    """One line: the program's MPI and the launcher that starts it.

    Parameters
    ----------
    settings : LaunchSettings
        As :func:`check_launcher` returned them.

    Returns
    -------
    str

    Examples
    --------
    >>> from scaleprobe.framework.sitempi import MpiImplementation
    >>> program = MpiImplementation("openmpi", "Open MPI", "/usr/lib/libmpi.so.40")
    >>> describe_mpi(LaunchSettings(mpiexec="/usr/bin/mpiexec.openmpi",
    ...                             mpiexec_mpi="Open MPI 4.1.4", program=program))
    'the program links Open MPI (/usr/lib/libmpi.so.40); mpiexec /usr/bin/mpiexec.openmpi is Open MPI 4.1.4'
    """  # noqa: E501
    program = settings.program.describe() if settings.program else None
    program = program or "an MPI this cannot tell"
    launcher = settings.mpiexec_mpi or "of an MPI this cannot tell"
    return f"the program links {program}; mpiexec {settings.mpiexec} is {launcher}"
