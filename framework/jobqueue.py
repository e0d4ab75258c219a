"""Dask workers as SLURM jobs (dask-jobqueue), each job an allocation its points run in.

For sweeps that outgrow one allocation: :func:`slurm_cluster` starts a
:class:`dask_jobqueue.SLURMCluster` whose every job holds ``nodes-per-job`` nodes with
``ntasks-per-node`` tasks each and runs one Dask worker; the worker launches its points
inside its own allocation as ``srun --mpi=pmi2`` steps. Each worker offers the Dask
resource ``scaleprobe-nodes`` equal to its nodes, and each point asks for its node count
(one for emulated nodes, which share a node), so a point only runs in a job big enough
for it.

Everything about the jobs themselves is dask-jobqueue's: its parameters and its
``jobqueue.slurm`` config section (``queue``, ``account``, ``walltime``, ``cores``,
``memory``, ``job-extra-directives``, ``job-script-prologue``, ``interface``...).
scaleprobe only adds the allocation's shape, from ``scaleprobe.cluster.slurm``::

    # ~/.config/dask/jobqueue.yaml              # ~/.config/dask/scaleprobe.yaml
    jobqueue:                                   scaleprobe:
      slurm:                                      cluster:
        queue: batch                                backend: slurm
        account: proj42                             slurm:
        walltime: "02:00:00"                          jobs: 4
        cores: 1                                      nodes-per-job: 2
        memory: 4GiB                                  ntasks-per-node: 8
                                                      exclusive: true

Each job holds its nodes alone (``--exclusive``) unless ``exclusive`` is false.

Time limits
    A job ends at its walltime, whatever its worker is doing. So that this never
    costs a measurement, each worker retires before: Dask's ``--lifetime`` is the
    walltime less ``lifetime-margin`` and ``lifetime-stagger`` seconds, and
    ``--lifetime-stagger`` spreads the jobs' ends so that they do not all stop at
    once. A retiring worker kills the launch it runs, which is measured again by
    another worker, and its job ends; :func:`keep_jobs`, called while a sweep waits
    for its points, submits a job for each one that ended, so the sweep keeps
    ``jobs`` jobs to the end. (``--lifetime-restart`` is not used: a worker restarted
    inside its job would meet the same walltime.)
"""

from __future__ import annotations

import re

from . import config

__all__ = [
    "NODE_RESOURCE",
    "keep_jobs",
    "node_resources",
    "slurm_cluster",
    "slurm_options",
    "walltime_seconds",
]

#: Dask worker resource: the nodes of the allocation a worker launches into.
NODE_RESOURCE = "scaleprobe-nodes"
_SHAPE_ATTRIBUTE = "scaleprobe_nodes_per_job"
_JOBS_ATTRIBUTE = "scaleprobe_jobs"
#: SLURM's time formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
_WALLTIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def _positive(name: str, value) -> int:
    from .settings import SettingsError

    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SettingsError(
            f"setting 'scaleprobe.cluster.slurm.{name}': a positive integer, "
            f"got {value!r}"
        )
    return value


def _seconds(name: str, value) -> float:
    from .settings import SettingsError

    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SettingsError(
            f"setting 'scaleprobe.cluster.slurm.{name}': seconds, a number >= 0, "
            f"got {value!r}"
        )
    return float(value)


def walltime_seconds(walltime) -> int | None:
    """Return a SLURM time limit in seconds.

    Parameters
    ----------
    walltime : str or None
        ``"MM"``, ``"MM:SS"``, ``"HH:MM:SS"``, ``"D-HH"``, ``"D-HH:MM"`` or
        ``"D-HH:MM:SS"`` (``sbatch --time``).

    Returns
    -------
    int or None
        None when ``walltime`` is None (the partition's limit applies).

    Raises
    ------
    SettingsError
        ``walltime`` is none of SLURM's formats.

    Examples
    --------
    >>> walltime_seconds("00:30:00"), walltime_seconds("90"), walltime_seconds("1-2")
    (1800, 5400, 93600)
    >>> walltime_seconds("5:30")
    330
    """
    from .settings import SettingsError

    if walltime is None:
        return None
    match = _WALLTIME.match(str(walltime).strip())
    if match is None:
        raise SettingsError(
            f"setting 'jobqueue.slurm.walltime': {walltime!r} is not a SLURM time "
            "(MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS)"
        )
    days, first, second, third = match.groups()
    numbers = [int(x) for x in (first, second, third) if x is not None]
    if days is not None:  # D-H, D-H:M, D-H:M:S
        hours, minutes, seconds = [*numbers, 0, 0][:3]
        return ((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds
    if len(numbers) == 3:
        return (numbers[0] * 60 + numbers[1]) * 60 + numbers[2]
    minutes, seconds = [*numbers, 0][:2]
    return minutes * 60 + seconds


def _lifetime(walltime, settings: dict) -> list[str]:
    """The worker's ``--lifetime`` arguments for jobs of ``walltime``."""
    from .settings import SettingsError

    limit = walltime_seconds(walltime)
    if limit is None:
        return []
    margin = _seconds("lifetime-margin", settings["lifetime-margin"])
    stagger = _seconds("lifetime-stagger", settings["lifetime-stagger"])
    lifetime = limit - margin - stagger
    if lifetime - stagger < 1:
        raise SettingsError(
            f"jobs of walltime {walltime} ({limit} s) leave a worker no time once "
            f"scaleprobe.cluster.slurm.lifetime-margin ({margin:g} s) and twice "
            f"lifetime-stagger ({stagger:g} s) are kept; lower them or raise "
            "jobqueue.slurm.walltime"
        )
    return ["--lifetime", f"{lifetime:g}s", "--lifetime-stagger", f"{stagger:g}s"]


def _configured(options: dict, name: str):
    """A dask-jobqueue option: the keyword argument, else its ``jobqueue.slurm`` key."""
    import dask

    value = options.get(name)
    if value is None:
        value = dask.config.get(f"jobqueue.slurm.{name.replace('_', '-')}", None)
    return value


def _shape(nodes_per_job, ntasks_per_node) -> tuple[int, int]:
    """Nodes of each job and tasks per node: the arguments, else the settings."""
    settings = config.get("cluster.slurm")
    nodes = _positive(
        "nodes-per-job",
        settings["nodes-per-job"] if nodes_per_job is None else nodes_per_job,
    )
    tasks = _positive(
        "ntasks-per-node",
        settings["ntasks-per-node"] if ntasks_per_node is None else ntasks_per_node,
    )
    return nodes, tasks


def _dask_jobqueue():
    """Import dask-jobqueue, keeping this process's Ctrl-C handler.

    Importing it replaces the SIGINT handler with one that exits at once (its
    ``runner`` module does so for the processes it starts), which would turn a
    user's Ctrl-C into an exit without the clean-up of an interrupted run.
    """
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    try:
        import dask_jobqueue
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGINT, previous)
    return dask_jobqueue


def slurm_options(
    *, nodes_per_job=None, ntasks_per_node=None, **jobqueue_options
) -> dict:
    """Return the keyword arguments of the ``SLURMCluster`` a sweep starts.

    Nothing is submitted: :func:`slurm_cluster` starts the cluster with them.

    Parameters
    ----------
    nodes_per_job, ntasks_per_node : int, optional
        The allocation's shape (settings ``scaleprobe.cluster.slurm.nodes-per-job``
        and ``ntasks-per-node``).
    **jobqueue_options
        dask-jobqueue's own options; unset ones come from its ``jobqueue.slurm``
        config.

    Returns
    -------
    dict
        ``job_extra_directives`` with ``--nodes``, ``--ntasks-per-node`` and
        ``--exclusive`` (unless ``exclusive`` is false),
        ``worker_extra_args`` with the ``scaleprobe-nodes`` resource and, when the
        jobs have a walltime, ``--lifetime`` and ``--lifetime-stagger`` (unless given).

    Raises
    ------
    SettingsError
        A shape or lifetime setting, or the walltime, is invalid, or the walltime
        leaves no time for a worker.
    """
    _dask_jobqueue()  # its jobqueue.slurm defaults (walltime...)
    settings = config.get("cluster.slurm")
    nodes, tasks = _shape(nodes_per_job, ntasks_per_node)
    options = dict(jobqueue_options)
    for name, default in (("cores", 1), ("memory", "2GiB")):
        if _configured(options, name) is None:
            options[name] = default
    options["processes"] = 1
    scheduler = dict(_configured(options, "scheduler_options") or {})
    # The dashboard (and its sweep page) stays on loopback unless configured.
    scheduler.setdefault("dashboard_address", config.get("cluster.dashboard-address"))
    options["scheduler_options"] = scheduler
    # The job's shape replaces dask-jobqueue's one task with `cores` CPUs.
    options["job_directives_skip"] = [
        *(_configured(options, "job_directives_skip") or []), "-n 1", "--cpus-per-task",
    ]  # fmt: skip
    options["job_extra_directives"] = [
        *(_configured(options, "job_extra_directives") or []),
        f"--nodes={nodes}", f"--ntasks-per-node={tasks}",
        *(["--exclusive"] if settings.get("exclusive", True) else []),  # nodes alone
    ]  # fmt: skip
    extra = list(_configured(options, "worker_extra_args") or [])
    if "--lifetime" not in extra:
        extra += _lifetime(_configured(options, "walltime"), settings)
    options["worker_extra_args"] = [*extra, "--resources", f"{NODE_RESOURCE}={nodes}"]
    return options


def slurm_cluster(
    *, jobs=None, nodes_per_job=None, ntasks_per_node=None, **jobqueue_options
):
    """Start a ``SLURMCluster`` whose jobs are allocations for sweep points.

    Parameters
    ----------
    jobs : int, optional
        Worker jobs to keep (setting ``scaleprobe.cluster.slurm.jobs``).
    nodes_per_job : int, optional
        Nodes of each job's allocation (``scaleprobe.cluster.slurm.nodes-per-job``); at
        least the largest ``nodes`` of a sweep on real nodes (throttle ``none``).
    ntasks_per_node : int, optional
        MPI tasks per node of each allocation
        (``scaleprobe.cluster.slurm.ntasks-per-node``); at least the largest ``ppn``.
    **jobqueue_options
        Passed to :class:`dask_jobqueue.SLURMCluster` (``queue``, ``account``,
        ``walltime``, ``job_extra_directives``...); unset ones come from its
        ``jobqueue.slurm`` config. ``cores`` and ``memory`` default to 1 and
        ``"2GiB"`` when neither is configured: the worker only starts launches.

    Returns
    -------
    dask_jobqueue.SLURMCluster
        The cluster with ``jobs`` jobs requested; close it (or use it in ``with``) to
        cancel them. Its workers retire before the walltime (see the module).

    Raises
    ------
    ImportError
        If dask-jobqueue is not installed (``pip install dask-jobqueue``).
    SettingsError
        A setting is invalid (see :func:`slurm_options`).
    """
    SLURMCluster = _dask_jobqueue().SLURMCluster
    jobs = _positive("jobs", config.get("cluster.slurm.jobs") if jobs is None else jobs)
    options = slurm_options(
        nodes_per_job=nodes_per_job, ntasks_per_node=ntasks_per_node,
        **jobqueue_options,
    )  # fmt: skip
    cluster = SLURMCluster(**options)
    setattr(cluster, _SHAPE_ATTRIBUTE, _shape(nodes_per_job, ntasks_per_node)[0])
    setattr(cluster, _JOBS_ATTRIBUTE, jobs)
    cluster.scale(jobs=jobs)
    return cluster


def keep_jobs(client) -> None:
    """Submit a job for each of the sweep's worker jobs that has ended.

    A job whose worker retired (its lifetime) or was lost is replaced once Dask has
    given its worker up (``distributed.deploy.lost-worker-timeout``, 15 s). Any
    other cluster is left alone.

    Parameters
    ----------
    client : distributed.Client
        The sweep's client.
    """
    cluster = getattr(client, "cluster", None)
    jobs = getattr(cluster, _JOBS_ATTRIBUTE, None)
    if jobs is not None:
        cluster.scale(jobs=jobs)


def node_resources(client, spec):
    """Return the Dask resources of each point if ``client`` runs on a job cluster.

    Parameters
    ----------
    client : distributed.Client
        The sweep's client.
    spec : Spec
        The campaign.

    Returns
    -------
    callable or None
        None for any other cluster; otherwise a function of a point that returns
        ``{"scaleprobe-nodes": n}``, ``n`` the point's nodes on real nodes (throttle
        ``none``) and 1 for emulated or namespace nodes, which share one node.

    Raises
    ------
    ValueError
        If a point needs more nodes than a job has: it could never run.
    """
    per_job = getattr(getattr(client, "cluster", None), _SHAPE_ATTRIBUTE, None)
    if per_job is None:
        return None
    real = spec.throttle.mode == "none"
    largest = max(spec.sweep["nodes"]) if real else 1
    if largest > per_job:
        raise ValueError(
            f"points of {largest} nodes cannot run in SLURM jobs of {per_job} nodes; "
            f"set scaleprobe.cluster.slurm.nodes-per-job to at least {largest}"
        )
    return lambda point: {NODE_RESOURCE: int(point.coords["nodes"]) if real else 1}
