"""Launch one sweep point as a child MPI process and turn its output into a result.

One point is one ``mpiexec -n <ranks>`` (or ``srun`` inside a SLURM allocation) of
``python -m scaleprobe.kernels.<kernel>``. The child runs in its own process group
with an environment cleaned of the MPI variables a parent launched by MPI would leak
into it and of the tuning a Dask Nanny gave its worker process, with one BLAS/OpenMP
thread per rank, and with the point's link
(:class:`~scaleprobe.kernels.schema.LinkConfig`) in its environment. A crash, a
non-zero exit, a missing or malformed record and a timeout are all results too: the
sweep records them and goes on.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import TYPE_CHECKING

from scaleprobe.kernels.registry import kernel_arguments, kernel_module, kernel_parser
from scaleprobe.kernels.schema import (
    RECORD_MARKER,
    THREADS_ENV,
    LinkConfig,
    Record,
    RecordError,
)

from ._hostload import LoadMeter
from .hosts import hosts_given, launch_hosts, placement_arguments, this_host
from .netns import NetnsError
from .settings import LaunchError, LaunchSettings, resolve_mpiexec
from .sitempi import is_wheel_mpich
from .spec import Spec

if TYPE_CHECKING:
    from .planning import Point

__all__ = [
    "OPENMPI_AS_ROOT",
    "SRUN_PMI1",
    "LaunchError",
    "build_command",
    "child_environment",
    "launch_environment",
    "launch_point",
    "launcher_words",
    "nanny_variables",
    "parse_output",
    "point_link",
    "point_threads",
    "record_mismatch",
    "replay_line",
    "resolve_mpiexec",
    "separate_jobs",
    "spec_link",
    "terminate_group",
    "wait_launch",
]

STRIPPED_PREFIXES = (
    "PMI_",
    "PMIX_",
    "HYDRA_",
    "MPI_LOCAL",
    "OMPI_",
    "MPIEXEC_",
    # the SLURM node of the process that launches, not of the ranks (srun sets each
    # task's own; an mpiexec would pass this one to ranks on every host)
    "SLURMD_NODENAME",
)
#: What Open MPI's launcher needs to start ranks as root; it refuses without them.
OPENMPI_AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
#: The ``mpich`` wheel's transport in ``srun`` steps: OFI over TCP. That MPICH speaks
#: PMI-1 to SLURM's ``pmi2`` plugin, which reads a PMI-1 request in one read of
#: 1024 bytes; MPICH splits a value into segments of up to 1022 characters, and
#: UCX's worker address (its default netmod, one entry per network interface) makes
#: segments whose request line runs past 1024 bytes: the plugin answers "invalid
#: client request", the rank exits and its step's other ranks wait for ever. With
#: 12 interfaces more on a host, 19 of 19 4-node steps failed so; an OFI/TCP
#: address is one socket address (a 72-byte request).
SRUN_PMI1 = {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp"}
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
STATUSES = ("ok", "failed", "timeout", "invalid")
#: The name distributed gives the process a Nanny spawns for its worker.
NANNY_PROCESS = "Dask Worker process (from Nanny)"
_GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_guard.py")


def _kernel_arguments(spec: Spec, point: Point) -> list[str]:
    params = dict(spec.params)
    params.update({k: point.coords[k] for k in spec.kernel_axes})
    if "threads" in point.coords and _takes_threads(spec.kernel):
        params["threads"] = point.threads
    return kernel_arguments(params)


def _takes_threads(kernel: str) -> bool:
    """Whether a registered kernel takes ``--threads`` (every one the harness runs;
    a kernel with a parser of its own only where it declares one)."""
    parser = kernel_parser(kernel)
    return any("--threads" in action.option_strings for action in parser._actions)


def point_threads(point: Point, settings: LaunchSettings) -> int:
    """Threads of each rank of a launch: the point's ``threads`` where swept, else
    the setting ``scaleprobe.launch.threads-per-rank``.

    Parameters
    ----------
    point : Point
        The point.
    settings : LaunchSettings
        The launch settings.

    Returns
    -------
    int
    """
    if "threads" in point.coords:
        return point.threads
    return settings.threads_per_rank


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

    Placement is always explicit (:func:`launcher_words`): the launcher is told
    the hosts and the ranks on each, never left to its defaults.

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
        ``srun --mpi=pmi2 --ntasks=R --nodes=N --ntasks-per-node=P ...`` inside a
        SLURM allocation, else ``mpiexec -hosts h1:P,... -ppn P -n R python -m
        scaleprobe.kernels.<kernel> --param value ...`` (no hosts: the ranks run
        on this host); for ``kernel: external`` the user's command template,
        rendered with those launcher words as ``{mpiexec}``. In throttle mode
        ``netns`` ``mpiexec`` runs in the first node's namespace and starts
        ``ppn`` ranks in each node's (:meth:`NamespaceNetwork.mpiexec_command`).

    Raises
    ------
    LaunchError
        Throttle mode ``netns`` without its network.
    ValueError
        The point asks more nodes than the hosts there are.
    """
    settings = settings or LaunchSettings.from_config()
    launcher = launcher_words(spec, point, network=network, settings=settings)
    if spec.kernel == "external":
        from scaleprobe.kernels.external import build_command as external_command

        return external_command(
            spec.params,
            dict(point.coords),
            mpiexec=shlex.join(launcher),
            ranks=point.ranks,
        )
    program = [
        sys.executable,
        "-m",
        kernel_module(spec.kernel),
        *_kernel_arguments(spec, point),
    ]
    if launcher[0] == "srun":
        return [*launcher, *program]
    return [*launcher, "-n", str(point.ranks), *program]


def launcher_words(
    spec: Spec, point: Point, *, network=None, settings: LaunchSettings
) -> list[str]:
    """The launcher and the options that place one point's ranks.

    Everything of the command line before the program but the rank count of an
    ``mpiexec`` (``-n R``, which follows); for ``srun`` the rank count too. This is what
    ``{mpiexec}`` stands for in an external program's command template.

    Parameters
    ----------
    spec : Spec
        The campaign.
    point : Point
        The point.
    network : NamespaceNetwork, optional
        The namespace network of throttle mode ``netns``.
    settings : LaunchSettings
        How to launch.

    Returns
    -------
    list of str

    Raises
    ------
    LaunchError
        Throttle mode ``netns`` without its network.
    ValueError
        The point asks more nodes than the hosts there are.
    """
    nodes, ppn = int(point.coords["nodes"]), int(point.coords["ppn"])
    if spec.throttle.mode == "netns":
        if network is None:
            raise LaunchError(
                "throttle mode 'netns' launches into the sweep's namespace network, "
                "and none was given"
            )
        return network.mpiexec_command(settings.mpiexec, nodes, ppn)
    real_nodes = spec.throttle.mode == "none"
    if _uses_srun(settings):
        # SLURM spreads the ranks as it likes unless told: on real nodes (throttle
        # none) ppn per node; emulated nodes are virtual and live on one host (its
        # core slots are host-wide), so every rank goes to one node, more ranks
        # than CPUs allowed (virtual time charges CPU time).
        openmpi = settings.program is not None and settings.program.family == "openmpi"
        plugin = "pmix" if openmpi else "pmi2"
        placement = (
            [f"--nodes={nodes}", f"--ntasks-per-node={ppn}"]
            if real_nodes
            else ["--nodes=1", f"--ntasks-per-node={point.ranks}", "--overcommit"]
        )
        return ["srun", f"--mpi={plugin}", f"--ntasks={point.ranks}", *placement]
    hosts = launch_hosts(settings.hostfile)
    family = settings.mpiexec_family
    if hosts is None:  # this host alone: the launcher's own placement is the only one
        local = ["--oversubscribe"] if family == "openmpi" else []
        return [settings.mpiexec, *local]
    if real_nodes:
        placement = placement_arguments(family, hosts.first(nodes), ppn)
    else:  # emulated nodes share this host, wherever a job's other hosts are
        placement = placement_arguments(family, this_host().names, point.ranks)
    return [settings.mpiexec, *placement]


def nanny_variables(process_name: str | None = None) -> dict:
    """The variables a Dask Nanny set for the worker process it spawned, by value.

    A Nanny puts ``distributed.nanny.pre-spawn-environ`` (glibc's
    ``MALLOC_TRIM_THRESHOLD_`` at 65536, one OpenMP/BLAS thread) and a fixed
    ``PYTHONHASHSEED`` into the environment of its worker, for the worker's own
    sake; a launch from that worker would hand them to every rank. The trim
    threshold also turns off glibc's adaptive ``mmap`` threshold: every array of
    128 KiB or more is then mapped and unmapped afresh, and NPB EP's class S on one
    rank took 0.43 s of CPU, 0.25 s of it in the kernel's page faults, against
    0.16 s without it.

    Parameters
    ----------
    process_name : str, optional
        The process's name; :func:`multiprocessing.current_process`'s by default.

    Returns
    -------
    dict
        Name -> the value the Nanny sets; empty outside a Nanny-spawned worker.

    Examples
    --------
    >>> nanny_variables("MainProcess")
    {}
    >>> nanny_variables(NANNY_PROCESS)["MALLOC_TRIM_THRESHOLD_"]
    '65536'
    """
    import multiprocessing

    if process_name is None:
        process_name = multiprocessing.current_process().name
    if process_name != NANNY_PROCESS:
        return {}
    import dask
    import distributed  # noqa: F401  (its defaults enter Dask's configuration)

    found = dask.config.get("distributed.nanny.pre-spawn-environ", default={}) or {}
    values = {k: str(v) for k, v in found.items() if v is not None}
    if values.get("PYTHONHASHSEED") in (None, "0"):
        values["PYTHONHASHSEED"] = "6640"  # what distributed's Nanny sets then
    return values


def child_environment(threads: int = 1, environ=None, nanny=None) -> dict:
    """Return the environment for a child ``mpiexec``, free of the parent's MPI.

    Inherited ``PMI_*``, ``PMIX_*``, ``HYDRA_*``, ``MPI_LOCAL*``, ``OMPI_*`` and
    ``MPIEXEC_*`` variables are removed (a child ``mpiexec`` started from a process
    that MPI itself started would otherwise try to join the parent's job and hang),
    and so is ``SLURMD_NODENAME`` (the ranks name their hosts by it); in a worker
    a Dask Nanny spawned, so is every variable that still holds the value the Nanny
    gave it (:func:`nanny_variables`: a program measured from such a worker ran
    with glibc tuned for Dask's worker). BLAS/OpenMP threads are pinned, and the
    Python environment's ``bin`` comes first on ``PATH`` (so the ranks' ``python``
    and tools are this environment's). A spec's ``env`` sets any of them again.

    Parameters
    ----------
    threads : int, default=1
        BLAS/OpenMP threads per rank.
    environ : mapping, optional
        The environment to start from; :data:`os.environ` by default.
    nanny : mapping, optional
        The Nanny's variables; :func:`nanny_variables` of this process by default.

    Returns
    -------
    dict

    Examples
    --------
    >>> env = child_environment(2, {"PMI_FD": "7", "HOME": "/root", "PATH": "/bin"})
    >>> "PMI_FD" in env, env["OMP_NUM_THREADS"], env["HOME"]
    (False, '2', '/root')
    >>> tuned = {"MALLOC_TRIM_THRESHOLD_": "65536"}
    >>> "MALLOC_TRIM_THRESHOLD_" in child_environment(1, tuned, nanny=tuned)
    False
    """
    environ = os.environ if environ is None else environ
    nanny = nanny_variables() if nanny is None else nanny
    env = {
        k: v
        for k, v in environ.items()
        if not k.startswith(STRIPPED_PREFIXES) and nanny.get(k) != v
    }
    for name in THREAD_VARIABLES:
        env[name] = str(threads)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def launch_environment(
    spec: Spec, point: Point, settings: LaunchSettings | None = None
) -> dict:
    """Return the environment of a launch.

    The :func:`child_environment` with the point's threads per rank
    (:func:`point_threads`, also in ``SCALEPROBE_THREADS``), plus
    the point's link (:func:`point_link`, in
    :data:`~scaleprobe.kernels.schema.LINK_ENV`), ``SCALEPROBE_POINT`` (the point's
    coordinates), :data:`OPENMPI_AS_ROOT` where root launches with Open MPI's
    ``mpiexec``, :data:`SRUN_PMI1` where ``srun`` starts the ``mpich`` wheel's
    ranks, and the spec's ``env`` (which may override any of them).

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
    threads = point_threads(point, settings)
    env = child_environment(threads)
    env[THREADS_ENV] = str(threads)
    env.update(point_link(spec, point).to_env())
    env["SCALEPROBE_POINT"] = json.dumps(point.coords)
    if settings.mpiexec_family == "openmpi" and os.geteuid() == 0:
        env.update(OPENMPI_AS_ROOT)
    if spec.throttle.mode == "netns":
        from .netns import MPI_ENVIRONMENT

        env.update(MPI_ENVIRONMENT)
    elif (
        _uses_srun(settings)
        and settings.program is not None
        and is_wheel_mpich(settings.program.library)
    ):
        env.update(SRUN_PMI1)
    env.update(spec.env)
    return env


def _uses_srun(settings: LaunchSettings) -> bool:
    """Whether a launch starts its ranks with ``srun`` (inside a SLURM allocation)."""
    return settings.launcher == "srun" or bool(
        settings.launcher == "auto"
        and os.environ.get("SLURM_JOB_ID")
        and shutil.which("srun")
    )


def _places_real_hosts(spec: Spec, settings: LaunchSettings) -> bool:
    """Whether the launch puts the point's nodes on real hosts, ``ppn`` ranks each.

    Only in throttle mode ``none``, and only where scaleprobe places the ranks
    itself: ``srun`` inside an allocation, or ``mpiexec`` given hosts (a host file,
    ``$PBS_NODEFILE``, a SLURM allocation: :func:`~scaleprobe.framework.hosts.
    launch_hosts`); an external program only where its command starts with
    ``{mpiexec}``. Emulated and namespace nodes all live on one host.
    """
    if spec.throttle.mode != "none":
        return False
    if spec.kernel == "external":
        from scaleprobe.kernels.external.command import template_fields

        if "mpiexec" not in template_fields(str(spec.params.get("command", ""))):
            return False
    return _uses_srun(settings) or hosts_given(settings.hostfile)


def _ranks_here(spec: Spec, settings: LaunchSettings) -> bool:
    """Whether every rank of a launch runs on this host (its load is measured)."""
    if _uses_srun(settings):
        return False
    return spec.throttle.mode != "none" or not hosts_given(settings.hostfile)


def parse_output(spec: Spec, stdout: str) -> Record:
    """Read the record of a launch from its standard output.

    Parameters
    ----------
    spec : Spec
        The campaign; ``kernel: external`` reads the program's output with the
        parser its ``params`` name.
    stdout : str
        Everything the launch printed on standard output.

    Returns
    -------
    Record
        Validated.

    Raises
    ------
    RecordError
        No record, or one of the wrong shape; the message says which.

    Examples
    --------
    >>> from scaleprobe.framework.spec import load_spec
    >>> spec = load_spec({"name": "d", "kernel": "commbench.compute",
    ...                   "sweep": {"nodes": [1]}})
    >>> line = Record(metrics={"time": 2.0}, kernel="commbench.compute").to_line()
    >>> parse_output(spec, "hello\\n" + line).metrics
    {'time': 2.0}
    """
    if spec.kernel != "external":
        return Record.parse(stdout)
    from scaleprobe.kernels.external import parse_output as parse_external

    try:
        return parse_external(stdout, spec.params)
    except ValueError as error:  # the parsers' RecordError, a ValueError
        raise RecordError(str(error)) from None


def record_mismatch(
    spec: Spec,
    point: Point,
    record: Record,
    *,
    real_hosts: bool = False,
    threads: int | None = None,
) -> str:
    """Say how what a kernel saw differs from what its point asks, or ``""``.

    The link the kernel applied is compared with :func:`point_link` where the
    record echoes one, the ranks it ran on with the point's where the record
    reports its placement, and the hosts and ranks per host too where the point's
    nodes are real hosts.

    Parameters
    ----------
    spec : Spec
        The campaign.
    point : Point
        The point.
    record : Record
        The kernel's record.
    real_hosts : bool, default=False
        Whether the launch placed the point's nodes on real hosts (throttle mode
        ``none`` under ``srun`` or with a host file), so that the record's hosts
        must be ``nodes`` of ``ppn`` ranks each.
    threads : int, optional
        Threads per rank the launch asked for (:func:`point_threads`), compared
        with the record's where given.

    Returns
    -------
    str
        One line naming every difference.

    Examples
    --------
    >>> from scaleprobe.framework.spec import load_spec
    >>> from scaleprobe.framework.planning import plan
    >>> from scaleprobe.kernels.schema import Placement
    >>> spec = load_spec({"name": "d", "kernel": "commbench.compute",
    ...                   "sweep": {"nodes": [2]}, "throttle": {"mode": "none"}})
    >>> seen = Record(metrics={}, placement=Placement(ranks=1))
    >>> record_mismatch(spec, plan(spec)[0], seen).split(" (")[0]
    'the program ran as 1 rank(s) but the point asks 2'
    """
    where = {"ranks": point.ranks}
    if real_hosts:
        where.update(nodes=int(point.coords["nodes"]), ppn=int(point.coords["ppn"]))
    return record.mismatch(link=point_link(spec, point), threads=threads, **where)


def separate_jobs(stdout: str, ranks: int) -> str:
    """Say whether a launch's ranks ran as jobs of their own, or ``""``.

    A program started by another MPI's ``mpiexec`` runs every rank as rank 0 of a
    world of one, and every one of them prints the record rank 0 prints: ``ranks``
    records, each of a world of one.

    Parameters
    ----------
    stdout : str
        What the launch printed.
    ranks : int
        Ranks the point asks for.

    Returns
    -------
    str
        The reason the point is invalid, or ``""``.

    Examples
    --------
    >>> from scaleprobe.kernels.schema import Placement
    >>> line = Record(metrics={"time": 1.0}, placement=Placement(ranks=1)).to_line()
    >>> separate_jobs("\\n".join([line] * 4), 4)
    "the program ran as 4 separate jobs of 1 rank but the point asks one job of 4 ranks (was it launched by another MPI's mpiexec?)"
    """  # noqa: E501
    lines = [ln for ln in stdout.splitlines() if ln.startswith(RECORD_MARKER)]
    if len(lines) < 2:
        return ""
    try:
        seen = [Record.parse(line).placement for line in lines]
    except RecordError:
        return ""
    if any(p is None for p in seen) or sum(p.ranks for p in seen) != ranks:
        return ""
    size = seen[0].ranks
    return (
        f"the program ran as {len(lines)} separate jobs of {size} "
        f"rank{'s' if size != 1 else ''} but the point asks one job of {ranks} ranks "
        "(was it launched by another MPI's mpiexec?)"
    )


def _tail(text: str, limit: int = 2000) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _start(spec: Spec, point: Point, network, settings: LaunchSettings, result):
    """Start the launch in its own process group; note its command and replay line.

    Returns the process and the meter of this host's load (None when the ranks
    run elsewhere).
    """
    command = build_command(spec, point, network=network, settings=settings)
    result["command"] = command
    if spec.throttle.mode == "netns":  # the links carry the point's throttled rate
        rate = point_link(spec, point).effective_bandwidth
        network.shape(int(point.coords["nodes"]), rate)
    env = launch_environment(spec, point, settings)
    result["replay"] = replay_line(command, env, cwd=os.getcwd())
    # The guard makes the launch die with this process (see _guard.py).
    guarded = [sys.executable, "-S", _GUARD, str(os.getpid()), *command]
    meter = None
    if _ranks_here(spec, settings):
        meter = LoadMeter()  # ranks on this host: measure what else kept it busy
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
    return process, meter


def _wait(process, spec: Spec, settings: LaunchSettings, keep_running, result):
    """Wait for the launch to end, run out of time, or not be wanted any more.

    Returns its standard output and error; a launch killed for either reason has
    ``status`` ``timeout`` or ``stopped`` set in ``result``.
    """
    stdout = stderr = ""
    try:
        stdout, stderr, stopped = wait_launch(process, spec.timeout, keep_running)
        if stopped:
            terminate_group(process, _grace(settings))
            stdout, stderr = process.communicate()
            result["error"] = (
                "the sweep that asked for this point went away; launch killed"
            )
            result["stopped"] = True
    except subprocess.TimeoutExpired:
        terminate_group(process, _grace(settings))
        stdout, stderr = process.communicate()
        result["status"] = "timeout"
        result["error"] = (
            f"no result within the timeout of {spec.timeout:g} s (spec key 'timeout'); "
            "process group killed"
        )
    finally:
        if process.poll() is None:
            terminate_group(process, _grace(settings))
    return stdout, stderr


def _judge(spec: Spec, point: Point, settings, process, stdout, stderr, result):
    """Set ``status``, ``error`` and ``record`` from a launch that ended by itself."""
    if process.returncode != 0:
        detail = _tail(stderr, 1000) or "no error output"
        result["error"] = f"exit code {process.returncode}: {detail}"
        return
    try:
        record = parse_output(spec, stdout)
    except RecordError as exc:
        alone = separate_jobs(stdout, point.ranks)
        if alone:
            result.update(status="invalid", error=alone)
            return
        result["error"] = (
            f"{exc}; stderr: {_tail(stderr, 500)}" if stderr.strip() else str(exc)
        )
        return
    threads = point_threads(point, settings)
    if spec.kernel == "external":  # the program got the threads in its environment
        record = dataclasses.replace(record, threads=threads)
    result["record"] = record.to_dict()
    result["status"] = record.status
    result["error"] = record.reason if record.status != "ok" else ""
    if record.status == "ok":
        real = _places_real_hosts(spec, settings)
        asked = (
            threads
            if spec.kernel == "external" or _takes_threads(spec.kernel)
            else None
        )
        mismatch = record_mismatch(spec, point, record, real_hosts=real, threads=asked)
        if mismatch:
            result.update(status="invalid", error=mismatch)


def _not_launched(result: dict, exc: Exception, started: float) -> dict:
    result.update(
        error=f"could not launch: {exc}",
        started=started,
        finished=time.time(),
        launch_time=0.0,
        stdout="",
        stderr="",
    )
    return result


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
    ``timeout`` and the error text. A record whose link, rank count or (on real
    hosts) placement differs from the point's is ``invalid``, the difference its
    error (:func:`record_mismatch`).

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
        ``record`` (the kernel's :class:`~scaleprobe.kernels.schema.Record` as
        :meth:`~scaleprobe.kernels.schema.Record.to_dict`, or None),
        ``returncode``, ``launch_time`` (wall seconds of the whole launch),
        ``host_load`` (cores other work kept busy on this host meanwhile, on
        average; None when the ranks ran elsewhere or the host cannot tell, see
        :mod:`scaleprobe.framework._hostload`), ``started`` and ``finished``
        (epoch seconds), ``host``, ``command``, ``replay`` (a shell line rerunning
        the launch with the environment scaleprobe set), ``stdout`` and
        ``stderr``.
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
    try:
        settings = settings or LaunchSettings.from_config()
        process, meter = _start(spec, point, network, settings, result)
    except (OSError, LaunchError, ValueError, NetnsError) as exc:  # incl. SettingsError
        return _not_launched(result, exc, started)
    stdout, stderr = _wait(process, spec, settings, keep_running, result)
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
    if not killed:
        _judge(spec, point, settings, process, stdout, stderr, result)
    return result


# ------------------------------------------------------------ the launch's process


def _grace(settings: LaunchSettings) -> float:
    """Seconds from SIGTERM to SIGKILL of a launch that is killed.

    ``srun`` ends its step on SIGTERM (it signals the tasks, then waits up to
    SLURM's ``KillWait`` for them); killed before, it can leave the step's ranks
    running on the nodes, where the next points would share their cores.
    """
    if not _uses_srun(settings):
        return settings.kill_grace
    return max(settings.kill_grace, _slurm_kill_wait() + 2.0)


def _slurm_kill_wait() -> float:
    """SLURM's ``KillWait``: seconds between a step's SIGTERM and its SIGKILL.

    Read from ``scontrol show config`` (only a launch that ran out of time asks);
    SLURM's default, 30, where it cannot be read.

    Returns
    -------
    float
    """
    try:
        out = subprocess.run(
            ["scontrol", "show", "config"],
            capture_output=True,
            text=True,
            timeout=5,  # a controller answers in milliseconds
            stdin=subprocess.DEVNULL,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 30.0
    for line in out.splitlines():
        name, _, value = line.partition("=")
        if name.strip() == "KillWait" and value.split():
            with contextlib.suppress(ValueError):
                return float(value.split()[0])
    return 30.0


def terminate_group(process: subprocess.Popen, grace: float) -> None:
    """Kill the launch's whole process group: SIGTERM, then SIGKILL after ``grace``.

    The group, not only its leader, has ``grace`` seconds to end: the leader (the
    guard of ``_guard.py``) dies at once on SIGTERM, while ``srun`` in the same group
    still signals the step's tasks and waits for them.

    Parameters
    ----------
    process : subprocess.Popen
        The launch, leader of its own process group.
    grace : float
        Seconds between SIGTERM and SIGKILL.
    """
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)  # reaped, the leader no longer holds the group
    while time.monotonic() < deadline and _group_alive(process.pid):
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=5.0)
    deadline = time.monotonic() + 5.0  # the killed members end
    while time.monotonic() < deadline and _group_alive(process.pid):
        time.sleep(0.05)


def _group_alive(pgid: int) -> bool:
    """Whether a process that has not ended is left in the process group ``pgid``.

    Ended processes not yet reaped by their new parent (zombies) do not count;
    without ``/proc``, any member does.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    return any(entry.isdigit() and _running_member(entry, pgid) for entry in entries)


def _running_member(pid: str, pgid: int) -> bool:
    """Whether process ``pid`` is in group ``pgid`` and not a zombie (``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return False
    return len(fields) > 2 and fields[0] != "Z" and fields[2] == str(pgid)


def wait_launch(process, timeout: float, keep_running, poll: float = 0.5):
    """Wait for a launch; stop early once it is not wanted.

    Parameters
    ----------
    process : subprocess.Popen
        The launch.
    timeout : float
        Seconds it may take.
    keep_running : callable or None
        Polled every ``poll`` seconds; False stops the wait.
    poll : float, default=0.5

    Returns
    -------
    (str, str, bool)
        Standard output and error, and whether the wait stopped early (then the
        launch still runs and the outputs are empty).

    Raises
    ------
    subprocess.TimeoutExpired
        The launch ran out of time.
    """
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        step = left if keep_running is None else min(poll, left)
        try:
            stdout, stderr = process.communicate(timeout=max(step, 0))
            return stdout, stderr, False
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
            if not keep_running():
                return "", "", True


def replay_line(command, env, base=None, cwd=None) -> str:
    """Return a shell-quoted line that reruns ``command`` with ``env``.

    The line names every variable the launch set or changed relative to ``base``
    (``env VAR=value``) and every one it removed (``env -u VAR``), so pasting it in a
    shell with the worker's environment reruns the point as measured, throttle
    settings (``SCALEPROBE_LINK``) included.

    Parameters
    ----------
    command : list of str
        The launch's argument vector.
    env : mapping
        The launch's environment.
    base : mapping, optional
        The environment the launch started from; :data:`os.environ` by default.
    cwd : str, optional
        The launch's working directory, prefixed as ``cd DIR &&``.

    Returns
    -------
    str

    Examples
    --------
    >>> replay_line(["mpiexec", "-n", "2", "prog"], {"A": "x y", "HOME": "/root"},
    ...             base={"HOME": "/root", "PMI_FD": "7"})
    "env -u PMI_FD 'A=x y' mpiexec -n 2 prog"
    """
    base = os.environ if base is None else base
    argv = ["env"]
    for name in sorted(k for k in base if k not in env):
        argv += ["-u", name]
    argv += [f"{k}={env[k]}" for k in sorted(env) if base.get(k) != env[k]]
    line = shlex.join([*argv, *map(str, command)])
    return f"cd {shlex.quote(cwd)} && {line}" if cwd else line
