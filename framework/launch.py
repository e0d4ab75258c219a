"""Launch one sweep point as a child MPI process and turn its output into a result.

One point is one ``mpiexec -n <ranks>`` (or ``srun`` inside a SLURM allocation) of
``python -m scaleprobe.kernels.<kernel>``. The child runs in its own process group
with an environment cleaned of the MPI variables a parent launched by MPI would leak
into it, with one BLAS/OpenMP thread per rank, and with the point's link
(:class:`~scaleprobe.kernels.schema.LinkConfig`) in its environment. A crash, a
non-zero exit, a missing or malformed record and a timeout are all results too: the
sweep records them and goes on.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time

from scaleprobe.kernels.record import RecordError, parse_record
from scaleprobe.kernels.registry import kernel_arguments, kernel_module
from scaleprobe.kernels.schema import LinkConfig

from ._hostload import LoadMeter
from ._process import terminate_group, wait_launch
from ._replay import replay_line
from .netns import NetnsError
from .planning import Point
from .settings import LaunchError, LaunchSettings, resolve_mpiexec
from .spec import Spec

__all__ = [
    "LaunchError",
    "build_command",
    "child_environment",
    "launch_environment",
    "launch_point",
    "point_link",
    "resolve_mpiexec",
    "spec_link",
]

STRIPPED_PREFIXES = ("PMI_", "PMIX_", "HYDRA_", "MPI_LOCAL", "OMPI_", "MPIEXEC_")
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
STATUSES = ("ok", "failed", "timeout", "invalid")
_GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_guard.py")


def _kernel_arguments(spec: Spec, point: Point) -> list[str]:
    params = dict(spec.params)
    params.update({k: point.coords[k] for k in spec.kernel_axes})
    return kernel_arguments(params)


def spec_link(spec: Spec) -> LinkConfig:
    """The link of a campaign at 100 % and one rank per node: its spec's throttle.

    In mode ``emulated`` the host's core slots default to one per core; other modes
    have none.

    Parameters
    ----------
    spec : Spec
        The campaign.

    Returns
    -------
    LinkConfig
    """
    throttle = spec.throttle
    slots = throttle.core_slots
    if slots is None:
        slots = os.cpu_count() or 1
    values = {
        "mode": throttle.mode,
        "link_bandwidth": throttle.link_bandwidth,
        "latency": throttle.latency,
        "memory_bandwidth": throttle.memory_bandwidth,
        "memory_latency": throttle.memory_latency,
        "core_slots": int(slots) if throttle.mode == "emulated" else 0,
        "topology": throttle.topology,
        "allocation": throttle.allocation,
    }
    return LinkConfig.from_dict(values)


def point_link(spec: Spec, point: Point) -> LinkConfig:
    """The link one point asks for: the spec's link at the point's coordinates.

    A random allocation draws anew every run (seed ``seed + run``).

    Parameters
    ----------
    spec : Spec
        The campaign.
    point : Point
        The point.

    Returns
    -------
    LinkConfig
        What :func:`launch_environment` sends to the ranks and what the kernel's
        record must echo.
    """
    link = spec_link(spec)
    allocation = link.allocation
    if spec.throttle.allocation is not None:
        seed = allocation.seed + int(point.coords.get("run", 0))
        allocation = dataclasses.replace(allocation, seed=seed)
    return link.at(
        ppn=int(point.coords["ppn"]),
        bandwidth=float(point.coords["bandwidth"]),
        allocation=allocation,
    )


def build_command(
    spec: Spec, point: Point, *, network=None, settings: LaunchSettings | None = None
) -> list[str]:
    """Return the command line that runs one point.

    Parameters
    ----------
    spec : Spec
        The campaign.
    point : Point
        The point to run.
    network : NamespaceNetwork, optional
        The sweep's namespace network; required in throttle mode ``netns``.
    settings : LaunchSettings, optional
        Launcher, ``mpiexec`` and host file; this process's configuration by default.

    Returns
    -------
    list of str
        ``srun --mpi=pmi2 -n R ...`` inside a SLURM allocation, else
        ``mpiexec -n R python -m scaleprobe.kernels.<kernel> --param value ...``; for
        ``kernel: external`` the user's command template, rendered. In throttle mode
        ``netns`` ``mpiexec`` runs in the first node's namespace and starts
        ``ppn`` ranks in each node's (:meth:`NamespaceNetwork.mpiexec_command`).
    """
    settings = settings or LaunchSettings.from_config()
    mpiexec = settings.mpiexec
    nodes, ppn = int(point.coords["nodes"]), int(point.coords["ppn"])
    netns = spec.throttle.mode == "netns"
    if netns:
        if network is None:
            raise LaunchError(
                "throttle mode 'netns' launches into the sweep's namespace network, "
                "and none was given"
            )
        launcher = network.mpiexec_command(mpiexec, nodes, ppn)
    if spec.kernel == "external":
        from scaleprobe.kernels.external import build_command as external_command

        return external_command(
            spec.params,
            dict(point.coords),
            mpiexec=shlex.join(launcher) if netns else mpiexec,
            ranks=point.ranks,
        )
    program = [
        sys.executable,
        "-m",
        kernel_module(spec.kernel),
        *_kernel_arguments(spec, point),
    ]
    if netns:
        return [*launcher, "-n", str(point.ranks), *program]
    real_nodes = spec.throttle.mode == "none"
    if settings.launcher == "srun" or (
        settings.launcher == "auto"
        and os.environ.get("SLURM_JOB_ID")
        and shutil.which("srun")
    ):
        # Placement is always explicit, or SLURM spreads the ranks as it likes: on
        # real nodes (throttle none) ppn per node; emulated nodes are virtual and
        # live on one host (its core slots are host-wide), so every rank goes to one
        # node, more ranks than CPUs allowed (virtual time charges CPU time).
        placement = (
            [f"--nodes={nodes}", f"--ntasks-per-node={ppn}"]
            if real_nodes
            else ["--nodes=1", f"--ntasks-per-node={point.ranks}", "--overcommit"]
        )
        return ["srun", "--mpi=pmi2", f"--ntasks={point.ranks}", *placement, *program]
    hostfile = settings.hostfile
    placement = ["-f", hostfile, "-ppn", str(ppn)] if hostfile and real_nodes else []
    return [mpiexec, "-n", str(point.ranks), *placement, *program]


def child_environment(threads: int = 1, environ=None) -> dict:
    """Return the environment for a child ``mpiexec``, free of the parent's MPI.

    Inherited ``PMI_*``, ``PMIX_*``, ``HYDRA_*``, ``MPI_LOCAL*``, ``OMPI_*`` and
    ``MPIEXEC_*`` variables are removed (a child ``mpiexec`` started from a process
    that MPI itself started would otherwise try to join the parent's job and hang),
    BLAS/OpenMP threads are pinned, and the Python environment's ``bin`` comes first
    on ``PATH`` (so the ranks' ``python`` and tools are this environment's).

    Parameters
    ----------
    threads : int, default=1
        BLAS/OpenMP threads per rank.
    environ : mapping, optional
        The environment to start from; :data:`os.environ` by default.

    Returns
    -------
    dict

    Examples
    --------
    >>> env = child_environment(2, {"PMI_FD": "7", "HOME": "/root", "PATH": "/bin"})
    >>> "PMI_FD" in env, env["OMP_NUM_THREADS"], env["HOME"]
    (False, '2', '/root')
    """
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if not k.startswith(STRIPPED_PREFIXES)}
    for name in THREAD_VARIABLES:
        env[name] = str(threads)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def launch_environment(
    spec: Spec, point: Point, settings: LaunchSettings | None = None
) -> dict:
    """Return the environment of a launch.

    The :func:`child_environment` with the configured threads per rank, plus
    the point's link (:func:`point_link`, in
    :data:`~scaleprobe.kernels.schema.LINK_ENV`), ``SCALEPROBE_POINT`` (the point's
    coordinates) and the spec's ``env``.

    Parameters
    ----------
    spec : Spec
        The campaign.
    point : Point
        The point to run.
    settings : LaunchSettings, optional
        Threads per rank; this process's configuration by default.

    Returns
    -------
    dict
        The environment for :class:`subprocess.Popen`.
    """
    settings = settings or LaunchSettings.from_config()
    env = child_environment(settings.threads_per_rank)
    env.update(point_link(spec, point).to_env())
    env["SCALEPROBE_POINT"] = json.dumps(point.coords)
    if spec.throttle.mode == "netns":
        from .netns import MPI_ENVIRONMENT

        env.update(MPI_ENVIRONMENT)
    env.update(spec.env)
    return env


def _parse(spec: Spec, stdout: str) -> dict:
    if spec.kernel == "external":
        from scaleprobe.kernels.external import parse_output

        return parse_output(stdout, spec.params)
    return parse_record(stdout)


def _link_mismatch(spec: Spec, point: Point, echoed) -> str:
    """How the link a kernel echoed differs from its point's, or ``""``."""
    if echoed is None:  # external programs and kernels without the communicator
        return ""
    try:
        applied = LinkConfig.from_dict(echoed)
    except ValueError as error:
        return f"the kernel's record holds a malformed link ({error})"
    return point_link(spec, point).mismatch(applied)


def _tail(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def launch_point(
    spec: Spec,
    point: Point,
    network=None,
    *,
    settings: LaunchSettings | None = None,
    keep_running=None,
) -> dict:
    """Run one point to completion and describe what happened.

    Never raises for a kernel's failure: a crash, a non-zero exit, a missing or
    malformed record and a timeout become a result with ``status`` ``failed`` or
    ``timeout`` and the error text.

    Parameters
    ----------
    spec : Spec
        The campaign.
    point : Point
        The point to run.
    network : NamespaceNetwork, optional
        The sweep's namespace network (throttle mode ``netns``); its links are
        shaped to the point's bandwidth before the launch.
    settings : LaunchSettings, optional
        How to launch (resolved once per sweep on the client); this process's
        configuration by default.
    keep_running : callable, optional
        Polled every half second while the launch runs; when it returns False (the
        sweep that wants the point went away) the launch's process group is killed
        and the result says so (``stopped``).

    Returns
    -------
    dict
        ``key``, ``coords``, ``status`` (ok / failed / timeout / invalid), ``error``,
        ``record`` (the kernel's record or None), ``returncode``, ``launch_time``
        (wall seconds of the whole launch), ``host_load`` (cores other work kept
        busy on this host meanwhile, on average; None when the ranks ran elsewhere
        or the host cannot tell, see :mod:`scaleprobe.framework._hostload`),
        ``started`` and ``finished`` (epoch seconds), ``host``, ``command``,
        ``replay`` (a shell line rerunning the launch with the environment
        scaleprobe set), ``stdout`` and ``stderr``.
    """
    result = {
        "key": point.key,
        "coords": dict(point.coords),
        "status": "failed",
        "error": "",
        "record": None,
        "returncode": None,
        "host": socket.gethostname(),
    }
    started = time.time()
    stdout = stderr = ""
    try:
        settings = settings or LaunchSettings.from_config()
        command = build_command(spec, point, network=network, settings=settings)
        result["command"] = command
        if spec.throttle.mode == "netns":
            network.shape(
                int(point.coords["nodes"]),
                spec.throttle.link_bandwidth * float(point.coords["bandwidth"]) / 100,
            )
        env = launch_environment(spec, point, settings)
        result["replay"] = replay_line(command, env, cwd=os.getcwd())
        # The guard makes the launch die with this process (see _guard.py).
        guarded = [sys.executable, "-S", _GUARD, str(os.getpid()), *command]
        # Ranks on this host: measure what else kept it busy meanwhile.
        meter = None
        if command[0] != "srun" and not settings.hostfile:
            meter = LoadMeter()
            meter.start()
        process = subprocess.Popen(
            guarded,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            text=True,
            errors="replace",
        )
    except (OSError, LaunchError, ValueError, NetnsError) as exc:  # incl. SettingsError
        result.update(
            error=f"could not launch: {exc}",
            started=started,
            finished=time.time(),
            launch_time=0.0,
            stdout="",
            stderr="",
        )
        return result
    try:
        stdout, stderr, stopped = wait_launch(process, spec.timeout, keep_running)
        if stopped:
            terminate_group(process, 0.5)
            stdout, stderr = process.communicate()
            result["error"] = (
                "the sweep that asked for this point went away; launch killed"
            )
            result["stopped"] = True
    except subprocess.TimeoutExpired:
        terminate_group(process, settings.kill_grace)
        stdout, stderr = process.communicate()
        result["status"] = "timeout"
        result["error"] = (
            f"no result within the timeout of {spec.timeout:g} s; process group killed"
        )
    finally:
        if process.poll() is None:
            terminate_group(process, 0.5)
    finished = time.time()
    result.update(
        started=started,
        finished=finished,
        launch_time=finished - started,
        returncode=process.returncode,
        stdout=stdout,
        stderr=stderr,
    )
    # A killed launch's ranks are nobody's waited-for children: their CPU would
    # count as other work.
    killed = result["status"] == "timeout" or result.get("stopped")
    result["host_load"] = None if meter is None or killed else meter.stop()
    if killed:
        return result
    if process.returncode != 0:
        detail = _tail(stderr, 1000) or "no error output"
        result["error"] = f"exit code {process.returncode}: {detail}"
        return result
    try:
        record = _parse(spec, stdout)
    except RecordError as exc:
        result["error"] = (
            f"{exc}; stderr: {_tail(stderr, 500)}" if stderr.strip() else str(exc)
        )
        return result
    result["record"] = record
    status = record.get("status", "ok")
    result["status"] = status if status in STATUSES else "invalid"
    result["error"] = str(record.get("reason", "")) if result["status"] != "ok" else ""
    mismatch = _link_mismatch(spec, point, record.get("link"))
    if result["status"] == "ok" and mismatch:
        result.update(status="invalid", error=mismatch)
    return result
