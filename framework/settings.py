"""Launch settings: read from ``dask.config`` once, on the client, shipped with tasks.

A sweep's launches happen in Dask workers, which are other processes (often on other
machines) with their own copy of the configuration. So that what a user sets on the
client — in a config file, a ``DASK_SCALEPROBE__LAUNCH__...`` variable or
``dask.config.set`` in a script — is what every launch uses, :func:`run_sweep
<scaleprobe.framework.run_sweep>` builds one frozen :class:`LaunchSettings` from the
client's configuration, validates it, records it in the Dataset's provenance and sends
it with every point.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys

from . import config
from ._names import did_you_mean
from .sitempi import MpiImplementation, launcher_mpi

__all__ = [
    "LAUNCHERS",
    "LaunchError",
    "LaunchSettings",
    "SettingsError",
    "resolve_mpiexec",
]

#: Values of ``scaleprobe.launch.launcher``.
LAUNCHERS = ("auto", "mpiexec", "srun")


class SettingsError(ValueError):
    """A setting is invalid; the message names the key and what is allowed."""


class LaunchError(RuntimeError):
    """The launcher itself cannot work (no mpiexec, unknown launcher)."""


def resolve_mpiexec() -> str:
    """Return the ``mpiexec`` to launch with.

    The setting ``scaleprobe.launch.mpiexec`` (a path, or a name looked up on
    ``PATH``) wins; otherwise the ``mpiexec`` beside the running Python (the MPICH
    wheel puts it in the environment's ``bin/``), then the first one on ``PATH``.
    This is the one place that decides; a sweep calls it once, on the client (see
    :class:`LaunchSettings`).

    Returns
    -------
    str
        Absolute path of ``mpiexec``.

    Raises
    ------
    LaunchError
        If no ``mpiexec`` can be found, or the configured one is not executable.
    """
    configured = config.get("launch.mpiexec")
    if configured:
        found = (
            shutil.which(configured)
            if isinstance(configured, str) and os.sep not in configured
            else configured
        )
        usable = isinstance(found, str) and os.path.isfile(found)
        if not (usable and os.access(found, os.X_OK)):
            raise LaunchError(
                f"setting 'scaleprobe.launch.mpiexec': {configured!r} is not an "
                "executable file (nor the name of one on PATH)"
            )
        return os.path.abspath(found)
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("mpiexec")
    if found is None:
        raise LaunchError(
            "no mpiexec found: install the 'mpich' wheel in this environment "
            "or set scaleprobe.launch.mpiexec"
        )
    return found


def _fail(key: str, message: str):
    raise SettingsError(f"setting 'scaleprobe.launch.{key}': {message}")


def _number(key: str, value, *, integer: bool, minimum: float) -> float:
    kind = "an integer" if integer else "a number"
    if isinstance(value, str):
        try:
            value = int(value) if integer else float(value)
        except ValueError:
            _fail(key, f"must be {kind} >= {minimum:g}, got {value!r}")
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (integer and not float(value).is_integer())
        or not value >= minimum
    ):
        _fail(key, f"must be {kind} >= {minimum:g}, got {value!r}")
    return int(value) if integer else float(value)


@dataclasses.dataclass(frozen=True)
class LaunchSettings:
    """How points are launched, resolved and validated once on the client.

    Parameters
    ----------
    launcher : {"auto", "mpiexec", "srun"}, default="auto"
        ``auto`` launches with ``srun`` where the launch runs inside a SLURM allocation
        (decided in the worker, which may hold an allocation the client has not) and
        with ``mpiexec`` elsewhere.
    mpiexec : str
        Absolute path of the ``mpiexec`` to launch with.
    hostfile : str or None, default=None
        Hydra host file, for throttle mode ``none`` on real nodes.
    threads_per_rank : int, default=1
        BLAS/OpenMP threads of each rank.
    kill_grace : float, default=2.0
        Seconds between SIGTERM and SIGKILL of a launch that ran out of time.
    mpiexec_family : str, default="unknown"
        The MPI family of ``mpiexec`` (:data:`~scaleprobe.framework.sitempi.FAMILIES`):
        Open MPI's takes other placement options than hydra's, and as root its
        ``OMPI_ALLOW_RUN_AS_ROOT`` variables.
    mpiexec_mpi : str, default=""
        What ``mpiexec --version`` says it is, e.g. ``MPICH 5.0.2 (hydra)``.
    program : MpiImplementation or None, default=None
        The MPI the program links, where a sweep found out
        (:func:`~scaleprobe.framework.launcher.check_launcher`): its family picks
        the ``srun --mpi`` plugin (``pmix`` for Open MPI, else ``pmi2``), and the
        ``mpich`` wheel's library
        (:func:`~scaleprobe.framework.sitempi.is_wheel_mpich`) is given its
        transport for ``srun`` (:data:`~scaleprobe.framework.launch.SRUN_PMI1`).

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"scaleprobe.launch.threads-per-rank": 2}):
    ...     settings = LaunchSettings.from_config()
    >>> settings.threads_per_rank, settings.launcher
    (2, 'auto')
    >>> with dask.config.set({"scaleprobe.launch.launcher": "sruun"}):
    ...     LaunchSettings.from_config()
    Traceback (most recent call last):
    ...
    scaleprobe.framework.settings.SettingsError: setting 'scaleprobe.launch.launcher': got 'sruun'; allowed: auto, mpiexec, srun (did you mean 'srun'?)
    """  # noqa: E501

    mpiexec: str
    launcher: str = "auto"
    hostfile: str | None = None
    threads_per_rank: int = 1
    kill_grace: float = 2.0
    mpiexec_family: str = "unknown"
    mpiexec_mpi: str = ""
    program: MpiImplementation | None = None

    @classmethod
    def from_config(cls) -> LaunchSettings:
        """Read and validate the ``scaleprobe.launch`` settings of this process.

        Returns
        -------
        LaunchSettings

        Raises
        ------
        SettingsError
            A one-line message naming the setting, the value and what is allowed.
        """
        launcher = config.get("launch.launcher")
        if launcher not in LAUNCHERS:
            _fail(
                "launcher",
                f"got {launcher!r}; allowed: {', '.join(LAUNCHERS)}"
                + did_you_mean(launcher, LAUNCHERS),
            )
        try:
            mpiexec = resolve_mpiexec()
        except LaunchError as exc:
            raise SettingsError(str(exc)) from None
        hostfile = config.get("launch.hostfile")
        if hostfile is not None:
            if not isinstance(hostfile, str) or not os.path.isfile(hostfile):
                _fail("hostfile", f"{hostfile!r} is not a file")
            hostfile = os.path.abspath(hostfile)
        mpi = launcher_mpi(mpiexec)
        return cls(
            mpiexec=mpiexec,
            mpiexec_family=mpi.family if mpi is not None else "unknown",
            mpiexec_mpi=mpi.name if mpi is not None else "",
            launcher=launcher,
            hostfile=hostfile,
            threads_per_rank=_number(
                "threads-per-rank",
                config.get("launch.threads-per-rank"),
                integer=True,
                minimum=1,
            ),
            kill_grace=_number(
                "kill-grace", config.get("launch.kill-grace"), integer=False, minimum=0
            ),
        )

    def as_dict(self) -> dict:
        """The settings as a plain dict (for provenance).

        Returns
        -------
        dict
        """
        return dataclasses.asdict(self)
