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
"""

from __future__ import annotations

from . import config

__all__ = ["NODE_RESOURCE", "node_resources", "slurm_cluster"]

#: Dask worker resource: the nodes of the allocation a worker launches into.
NODE_RESOURCE = "scaleprobe-nodes"
_SHAPE_ATTRIBUTE = "scaleprobe_nodes_per_job"


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"scaleprobe.cluster.slurm.{name} must be a positive integer, got {value!r}"
        )
    return value


def slurm_cluster(
    *, jobs=None, nodes_per_job=None, ntasks_per_node=None, **jobqueue_options
):
    """Start a ``SLURMCluster`` whose jobs are allocations for sweep points.

    Parameters
    ----------
    jobs : int, optional
        Worker jobs to submit (setting ``scaleprobe.cluster.slurm.jobs``).
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
        cancel them.

    Raises
    ------
    ImportError
        If dask-jobqueue is not installed (``pip install dask-jobqueue``).
    """
    import dask
    from dask_jobqueue import SLURMCluster

    settings = config.get("cluster.slurm")
    jobs = _positive("jobs", settings["jobs"] if jobs is None else jobs)
    nodes = _positive(
        "nodes-per-job",
        settings["nodes-per-job"] if nodes_per_job is None else nodes_per_job,
    )
    tasks = _positive(
        "ntasks-per-node",
        settings["ntasks-per-node"] if ntasks_per_node is None else ntasks_per_node,
    )
    options = dict(jobqueue_options)
    for name, default in (("cores", 1), ("memory", "2GiB")):
        configured = dask.config.get(f"jobqueue.slurm.{name}")
        if options.get(name) is None and configured is None:
            options[name] = default
    options["processes"] = 1
    scheduler = dict(
        options.get("scheduler_options")
        or dask.config.get("jobqueue.slurm.scheduler-options")
        or {}
    )
    # The dashboard (and its sweep page) stays on loopback unless configured.
    scheduler.setdefault("dashboard_address", config.get("cluster.dashboard-address"))
    options["scheduler_options"] = scheduler
    # The job's shape replaces dask-jobqueue's one task with `cores` CPUs.
    options["job_directives_skip"] = [
        *(options.get("job_directives_skip")
          or dask.config.get("jobqueue.slurm.job-directives-skip") or []),
        "-n 1", "--cpus-per-task",
    ]  # fmt: skip
    options["job_extra_directives"] = [
        *(options.get("job_extra_directives")
          or dask.config.get("jobqueue.slurm.job-extra-directives") or []),
        f"--nodes={nodes}", f"--ntasks-per-node={tasks}",
        *(["--exclusive"] if settings.get("exclusive", True) else []),  # nodes alone
    ]  # fmt: skip
    options["worker_extra_args"] = [
        *(options.get("worker_extra_args")
          or dask.config.get("jobqueue.slurm.worker-extra-args") or []),
        "--resources", f"{NODE_RESOURCE}={nodes}",
    ]  # fmt: skip
    cluster = SLURMCluster(**options)
    setattr(cluster, _SHAPE_ATTRIBUTE, nodes)
    cluster.scale(jobs=jobs)
    return cluster


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
