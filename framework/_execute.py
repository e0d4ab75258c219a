"""The Dask side of a sweep: one task per point, one launch at a time, results kept.

A launch lives only as long as the sweep that wants it. The task that runs a point
on a Dask worker may outlive the client that submitted it: on an external cluster
(``--address``, ``--scheduler-file``, ``dask-mpi``) a client killed with ``kill -9``
leaves its workers running. The scheduler notices at once (the client's connection
closes) and releases the client's tasks; the worker then marks a running task
``cancelled`` but cannot stop its thread. :func:`task_wanted` lets the task see that,
so the launch it waits on is killed within a poll interval, and a task that was
still waiting for the launch slot does not launch at all.

:class:`~scaleprobe.framework._progress.Progress` reports on standard error what the
sweep measured so far.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import time
import warnings
from concurrent.futures import CancelledError

from distributed import Client, Semaphore, as_completed

from . import config
from ._hostload import HOST_LOAD_LIMIT
from ._progress import Progress
from ._warnings import OversubscriptionWarning
from .cluster import ClusterError
from .dashboard import TOPIC, attach_sweep_page, done_event, plan_event
from .jobqueue import node_resources
from .launch import launch_point
from .planning import Point, oversubscription, plan
from .settings import LaunchSettings
from .spec import Spec, SpecError
from .store import ResultStore

__all__ = [
    "LAUNCH_SEMAPHORE",
    "Progress",
    "execute",
    "task_wanted",
    "warn_host_load",
    "warn_slot_timeouts",
]


#: The one launch semaphore of a cluster: every sweep on the cluster shares it.
LAUNCH_SEMAPHORE = "scaleprobe-launch"


#: Worker-side states of a task whose result someone still waits for.
_WANTED = ("executing", "long-running")


def task_wanted():
    """Return a predicate that is true while the calling Dask task is still wanted.

    Call it from inside a task. The predicate reads the worker's own state of the task
    (no message to the scheduler): it turns false when the task is cancelled (its
    client went away, or cancelled it) or the worker is closing.

    Returns
    -------
    callable
        ``wanted() -> bool``; always true outside a Dask worker.
    """
    try:
        from distributed import get_worker

        worker = get_worker()
        key = worker.get_current_task()
    except (ImportError, ValueError):
        return lambda: True
    from distributed.core import Status

    live = (Status.running, Status.paused, Status.closing_gracefully)

    def wanted() -> bool:
        task = worker.state.tasks.get(key)
        return task is not None and task.state in _WANTED and worker.status in live

    return wanted


def _run_point(
    spec: Spec,
    point: Point,
    settings: LaunchSettings,
    sweep: str,
    network=None,
) -> dict:
    """The Dask task: wait for the cluster's launch slot, then run the point."""
    from distributed import get_worker

    wanted = task_wanted()
    with Semaphore(max_leases=spec.max_concurrent_launches, name=LAUNCH_SEMAPHORE):
        if not wanted():  # the sweep went away while this task waited for the slot
            return {"key": point.key, "status": "failed", "stopped": True}
        get_worker().log_event(
            TOPIC,
            {
                "kind": "start",
                "sweep": sweep,
                "key": point.key,
                "time": time.time(),
            },
        )
        result = launch_point(
            spec, point, network, settings=settings, keep_running=wanted
        )
    result["worker"] = get_worker().address
    return result


def _show_plan(client: Client, spec: Spec, sweep: str, todo, progress, store) -> None:
    """Put the sweep on the dashboard's sweep page and print the page's address."""
    link = attach_sweep_page(client)
    if progress and link:
        print(f"scaleprobe: sweep page at {link}", file=sys.stderr, flush=True)
    pending = {point.key for point in todo}
    points = [(p.key, p.coords) for p in plan(spec)]
    dims = {k: list(v) for k, v in spec.sweep.items()}
    stored = store.results() if len(pending) < len(points) else []
    client.log_event(TOPIC, plan_event(sweep, spec.name, dims, points, pending, stored))


def _lost(point: Point, exc: BaseException) -> dict:
    now = time.time()
    return {
        "key": point.key,
        "coords": dict(point.coords),
        "status": "failed",
        "error": f"the Dask task failed: {type(exc).__name__}: {exc}",
        "record": None,
        "returncode": None,
        "started": now,
        "finished": now,
        "launch_time": 0.0,
    }


def _claim_launch_slots(client: Client, spec: Spec) -> None:
    """Register the cluster's launch semaphore, or refuse a second, different limit."""
    leases = spec.max_concurrent_launches
    semaphore = Semaphore(
        max_leases=leases,
        name=LAUNCH_SEMAPHORE,
        scheduler_rpc=client.scheduler,
        loop=client.loop,
    )
    try:
        semaphore.register()
    except ValueError:
        raise SpecError(
            f"spec key 'max_concurrent_launches': {leases} launches at once asked, "
            "but an earlier sweep set a different limit on this cluster (one limit "
            "per cluster keeps sweeps from disturbing each other's measurements); "
            "use that sweep's value or a new cluster"
        ) from None


def _warn_oversubscription(client: Client, spec: Spec, settings, todo) -> None:
    """Warn when wall-clock points would share cores on a worker's host."""
    if (
        settings.hostfile
        or settings.launcher == "srun"
        or os.environ.get("SLURM_JOB_ID")
    ):
        return  # ranks are placed on other nodes
    try:
        cores = min(client.run(os.cpu_count).values())
    except Exception:  # a worker that cannot answer must not stop the sweep
        cores = os.cpu_count()
    message = oversubscription(spec, todo, cores)
    if message:
        warnings.warn(message, OversubscriptionWarning, stacklevel=3)


def _flagged(ds, name, limit):
    """Successful points whose ``name`` exceeds ``limit``: their values (a Series),
    how many points have a value, and the first flagged point in words."""
    if name not in ds.data_vars:
        return (), 0, ""
    values = ds[name]
    if "status" in ds.data_vars:
        values = values.where(ds["status"] == "ok")
    table = values.to_dataframe()
    hit = table[table[name] > limit]
    total = int(table[name].notna().sum())
    if hit.empty:
        return (), total, ""
    key = hit.index[0] if isinstance(hit.index[0], tuple) else (hit.index[0],)
    first = ", ".join(
        f"{dim}={value}" for dim, value in zip(hit.index.names, key, strict=True)
    )
    return hit[name], total, first


def warn_slot_timeouts(ds) -> None:
    """Warn when ranks of stored points computed without a core slot.

    In emulated mode a rank waits for a host-wide core slot before it computes; after
    ``max_wait`` (60 s) it gives up and computes beside the ranks that hold the
    slots (the record's ``slot_timeouts``). Its CPU time, hence its virtual
    computation time, then includes sharing a core, and says more about the host
    than about the program.

    Parameters
    ----------
    ds : xarray.Dataset
        The campaign's results.

    Warns
    -----
    OversubscriptionWarning
        Naming how many successful points are affected and the first of them.
    """
    hit, total, first = _flagged(ds, "slot_timeouts", 0)
    if not len(hit):
        return
    warnings.warn(
        f"{len(hit)} of {total} point(s) have ranks that waited 60 s for a core slot "
        f"and then computed beside the others (slot_timeouts; first: {first}): their "
        "virtual computation times include sharing a core — measure them with fewer "
        "ranks per host, or read them with care",
        OversubscriptionWarning,
        stacklevel=3,
    )


def warn_host_load(ds, limit=HOST_LOAD_LIMIT) -> None:
    """Warn when stored points ran while other work kept their host busy.

    Computation is measured as CPU time, which other work on the host inflates
    through shared caches and memory bandwidth even when every rank has a core.

    Parameters
    ----------
    ds : xarray.Dataset
        The campaign's results (``host_load``: cores other work kept busy, on
        average over each launch).
    limit : float, default=HOST_LOAD_LIMIT
        Cores of other work from which a point is flagged.

    Warns
    -----
    OversubscriptionWarning
        Naming how many successful points are affected, the first of them and the
        largest load.
    """
    hit, total, first = _flagged(ds, "host_load", limit)
    if not len(hit):
        return
    warnings.warn(
        f"{len(hit)} of {total} point(s) ran while other work kept their host busy "
        f"(host_load above {limit:g} core(s), up to {hit.max():.2f}; first: {first}): "
        "their computation times include contention for caches and memory — "
        "measure them again on a quiet host, or read them with care",
        OversubscriptionWarning,
        stacklevel=3,
    )


def execute(
    client: Client,
    spec: Spec,
    settings: LaunchSettings,
    store: ResultStore,
    todo: list[Point],
    progress: Progress,
    network=None,
) -> None:
    """Submit every point of ``todo`` and store each result as it arrives.

    Parameters
    ----------
    client : distributed.Client
        Where the points run.
    spec : Spec
        The campaign.
    settings : LaunchSettings
        How to launch, sent with every point.
    store : ResultStore
        Where results go (its lock held by the caller).
    todo : list of Point
        Points to measure, in run order.
    progress : Progress
        The progress reporter.
    network : NamespaceNetwork, optional
        The namespace network in throttle mode ``netns``.
    """
    where = os.path.abspath(store.path)
    name = f"scaleprobe-sweep-{where}"
    # Task keys name the sweep too: two sweeps of the same points on one cluster are
    # two measurements, not one task Dask would compute once for both.
    sweep_id = hashlib.sha1(where.encode()).hexdigest()[:10]
    _claim_launch_slots(client, spec)
    try:
        resources = node_resources(client, spec)
    except ValueError as exc:
        raise SpecError(f"spec key 'sweep.nodes': {exc}") from None
    _warn_oversubscription(client, spec, settings, todo)
    _show_plan(client, spec, name, todo, progress.enabled, store)
    futures = _submit(client, spec, settings, todo, name, sweep_id, network, resources)
    try:
        dropped, why = _collect(client, futures, store, progress, name)
    except BaseException:
        client.cancel(list(futures))
        raise
    if dropped:
        raise ClusterError(
            f"the Dask cluster dropped {dropped} unfinished point(s) ({why}); "
            "every finished point is stored: run the same command again to measure "
            "the rest"
        )


def _submit(client, spec, settings, todo, name, sweep_id, network, resources) -> dict:
    """One task per point, the first of the run order first; future -> point."""
    futures = {}
    for rank, point in enumerate(todo):
        future = client.submit(
            _run_point,
            spec,
            point,
            settings,
            name,
            network,
            key=f"scaleprobe-point-{sweep_id}-{point.key}",
            pure=False,
            priority=len(todo) - rank,
            resources=resources(point) if resources else None,
        )
        futures[future] = point
    return futures


def _collect(client, futures: dict, store, progress, name: str) -> tuple[int, str]:
    """Store each result as it arrives; return the points dropped and why.

    ``futures`` loses each future as it is done, so that a caller interrupted
    meanwhile cancels only what is left.
    """
    every = max(1, int(config.get("store.consolidate-every")))
    dropped, why = 0, ""
    for count, future in enumerate(as_completed(list(futures)), start=1):
        point = futures.pop(future)
        try:
            result = future.result()
        except CancelledError as exc:  # the cluster gave it up: not measured
            dropped += 1
            why = why or (str(exc).strip().splitlines() or ["cancelled"])[0]
            continue
        except Exception as exc:  # a lost worker must not stop the sweep
            result = _lost(point, exc)
        if result.get("stopped"):  # its launch was killed with its worker
            dropped += 1
            why = why or result.get("error", "")
            continue
        store.write_point(result)
        _log(client, done_event(name, point.key, result, time.time()))
        log = os.path.join(store.logs_dir, f"{point.key}.log")
        progress.update(result["status"], point.label(), result.get("error", ""), log)
        if count % every == 0:
            store.consolidate()
    return dropped, why


def _log(client: Client, event: dict) -> None:
    """Tell the sweep page; a cluster that went away must not stop the sweep."""
    with contextlib.suppress(Exception):  # the page is a view, the store the record
        client.log_event(TOPIC, event)
