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
from ._allocation import allocation_failure
from ._hostload import HOST_LOAD_LIMIT
from ._linkprobe import probe_link
from ._progress import Progress
from ._warnings import OversubscriptionWarning
from .dashboard import TOPIC, attach_sweep_page, done_event, plan_event
from .jobqueue import keep_jobs, node_resources
from .launch import launch_point, point_link
from .planning import Point, oversubscription, plan
from .settings import LaunchSettings
from .spec import Spec, SpecError
from .store import ResultStore

__all__ = [
    "INFRASTRUCTURE_ATTEMPTS",
    "LAUNCH_SEMAPHORE",
    "Progress",
    "Unmeasured",
    "WorkerWatch",
    "execute",
    "task_wanted",
    "warn_host_load",
    "warn_slot_timeouts",
    "worker_wait",
]


#: The one launch semaphore of a cluster: every sweep on the cluster shares it.
LAUNCH_SEMAPHORE = "scaleprobe-launch"


#: Worker-side states of a task whose result someone still waits for.
_WANTED = ("executing", "long-running")
#: Launches of one point the infrastructure may end (its worker went away, its batch
#: allocation ended) before the run leaves the point unmeasured.
INFRASTRUCTURE_ATTEMPTS = 3
#: Seconds between two looks at the cluster while a sweep waits for its points.
POLL = 0.2
#: Seconds between two requests that a job cluster keep its jobs.
KEEP_JOBS_EVERY = 5.0


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
    """The Dask task: wait for the cluster's launch slot, then run the point.

    A result with ``stopped`` set was not measured: the worker went away or the
    point's batch allocation ended (then the worker retires: it cannot launch any
    more). The client measures such a point again.
    """
    from distributed import get_worker

    wanted = task_wanted()
    worker = get_worker()
    with Semaphore(max_leases=spec.max_concurrent_launches, name=LAUNCH_SEMAPHORE):
        if not wanted():  # the sweep went away while this task waited for the slot
            return {"key": point.key, "status": "failed", "stopped": True}
        worker.log_event(
            TOPIC,
            {
                "kind": "start",
                "sweep": sweep,
                "key": point.key,
                "time": time.time(),
            },
        )
        link = _probe(spec, point, network)
        result = launch_point(
            spec, point, network, settings=settings, keep_running=wanted
        )
        result.update(link)
    failure = None if result.get("stopped") else allocation_failure(result)
    if failure is not None:
        if failure.ended:  # no more launches here: the job's worker retires
            worker.loop.add_callback(
                worker.close_gracefully, reason=f"scaleprobe: {failure.reason}"
            )
        result = {
            "key": point.key,
            "status": result["status"],
            "stopped": True,
            "error": f"the batch allocation ended the launch: {failure.reason}",
        }
    result["worker"] = worker.address
    return result


def _probe(spec: Spec, point: Point, network) -> dict:
    """In throttle mode ``netns``: shape the point's links and probe what they carry.

    Returns the entries ``link_shaped_rate`` and ``link_rate`` of the point's result
    (none in other modes).
    """
    if network is None or spec.throttle.mode != "netns":
        return {}
    rate = point_link(spec, point).effective_bandwidth
    network.shape(min(network.nodes, max(2, int(point.coords["nodes"]))), rate)
    return {"link_shaped_rate": rate, "link_rate": probe_link(network, rate)}


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
    message = oversubscription(spec, todo, cores, settings.threads_per_rank)
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
    from ._hostload import MIN_SECONDS

    hit, total, first = _flagged(ds, "host_load", limit)
    if not len(hit):
        return
    ok = int((ds["status"] == "ok").sum()) if "status" in ds.data_vars else total
    # a launch shorter than MIN_SECONDS has no load: out of the count, said so
    told = (
        f"the {total} point(s) long enough to tell (launches of {MIN_SECONDS:g} s or "
        f"more; {ok - total} ok point(s) were shorter)"
        if ok > total
        else f"{total} point(s)"
    )
    warnings.warn(
        f"{len(hit)} of {told} ran while other work kept their host busy "
        f"(host_load above {limit:g} core(s), up to {hit.max():.2f}; first: {first}): "
        "their computation times include contention for caches and memory — "
        "measure them again on a quiet host, or read them with care",
        OversubscriptionWarning,
        stacklevel=3,
    )


def worker_wait(value=None) -> float:
    """Seconds a sweep waits with no Dask worker before it stops.

    Parameters
    ----------
    value : float, optional
        Explicit seconds; the setting ``scaleprobe.cluster.worker-wait`` when None.

    Returns
    -------
    float

    Raises
    ------
    SettingsError
        The value is not a positive number.
    """
    from .settings import SettingsError

    value = config.resolve(value, "cluster.worker-wait")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SettingsError(
            "setting 'scaleprobe.cluster.worker-wait': a positive number of seconds, "
            f"got {value!r}"
        )
    return float(value)


class WorkerWatch:
    """Tell when a cluster has had no worker for ``limit`` seconds.

    Parameters
    ----------
    limit : float
        Seconds without a worker that end the wait.
    clock : callable, default=time.monotonic
        The time source.

    Examples
    --------
    >>> now = [0.0]
    >>> watch = WorkerWatch(10, clock=lambda: now[0])
    >>> watch.expired(workers=0), watch.expired(workers=2)
    (False, False)
    >>> now[0] = 5; watch.expired(0)
    False
    >>> now[0] = 14; watch.expired(0)
    False
    >>> now[0] = 15; watch.expired(0)
    True
    """

    def __init__(self, limit: float, clock=time.monotonic):
        self.limit, self.clock = limit, clock
        self.since: float | None = None

    def expired(self, workers: int) -> bool:
        """Note how many workers the cluster has; True once none for ``limit`` s."""
        if workers:
            self.since = None
            return False
        now = self.clock()
        if self.since is None:
            self.since = now
        return now - self.since >= self.limit


class Unmeasured:
    """Points a sweep leaves unmeasured, and why (the first reason).

    Attributes
    ----------
    count : int
    why : str
    """

    def __init__(self):
        self.count, self.why = 0, ""

    def add(self, why: str) -> None:
        """Count one point."""
        self.count += 1
        self.why = self.why or why

    def message(self) -> str:
        """One line: how many, why, and what to do."""
        return (
            f"{self.count} point(s) left unmeasured ({self.why}); every finished "
            "point is stored: run the same command again to measure the rest"
        )


def execute(
    client: Client,
    spec: Spec,
    settings: LaunchSettings,
    store: ResultStore,
    todo: list[Point],
    progress: Progress,
    network=None,
) -> Unmeasured:
    """Submit every point of ``todo`` and store each result as it arrives.

    A point whose launch the infrastructure ended (its worker went away, its batch
    allocation ended) is never stored: it is submitted again, at most
    :data:`INFRASTRUCTURE_ATTEMPTS` times, then left unmeasured. When the cluster
    has had no worker for ``scaleprobe.cluster.worker-wait`` seconds the sweep stops
    waiting and leaves the rest unmeasured.

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

    Returns
    -------
    Unmeasured
        The points left unmeasured (none when every point was stored).
    """
    where = os.path.abspath(store.path)
    name = f"scaleprobe-sweep-{where}"
    # Task keys name the sweep too: two sweeps of the same points on one cluster are
    # two measurements, not one task Dask would compute once for both.
    sweep_id = hashlib.sha1(where.encode()).hexdigest()[:10]
    watch = WorkerWatch(worker_wait())
    _claim_launch_slots(client, spec)
    try:
        resources = node_resources(client, spec)
    except ValueError as exc:
        raise SpecError(f"spec key 'sweep.nodes': {exc}") from None
    _warn_oversubscription(client, spec, settings, todo)
    _show_plan(client, spec, name, todo, progress.enabled, store)

    def submit(point, priority, attempt=0):
        again = f"-again{attempt}" if attempt else ""
        return client.submit(
            _run_point, spec, point, settings, name, network,
            key=f"scaleprobe-point-{sweep_id}-{point.key}{again}",
            pure=False, priority=priority,
            resources=resources(point) if resources else None,
        )  # fmt: skip

    futures = {submit(p, len(todo) - i): p for i, p in enumerate(todo)}
    collector = _Collector(client, futures, store, progress, name, submit)
    try:
        collector.run(watch)
    except BaseException:
        client.cancel(list(futures))
        raise
    return collector.unmeasured


def _workers(client: Client) -> int:
    """Workers the cluster has now (the sweep goes on when the cluster cannot say)."""
    try:
        return len(client.scheduler_info(n_workers=-1)["workers"])
    except Exception:  # an unanswered question is not a missing worker
        return 1


class _Collector:
    """Stores each result as it arrives; submits again what was not measured.

    ``futures`` loses each future as it is done, so that a caller interrupted
    meanwhile cancels only what is left.
    """

    def __init__(self, client, futures: dict, store, progress, name: str, submit):
        self.client, self.futures, self.store = client, futures, store
        self.progress, self.name, self.submit = progress, name, submit
        self.every = max(1, int(config.get("store.consolidate-every")))
        self.attempts: dict[str, int] = {}
        self.unmeasured = Unmeasured()
        self.stored = 0
        self.pending = as_completed(list(futures))

    def run(self, watch: WorkerWatch) -> None:
        """Collect until every point is stored or given up."""
        kept = time.monotonic()
        while not self.pending.is_empty():
            batch = self.pending.next_batch(block=False)
            for future in batch:
                self.take(future)
            if batch:
                continue
            if watch.expired(_workers(self.client)):
                self.give_up(f"no Dask worker for {watch.limit:g} s")
                return
            if time.monotonic() - kept >= KEEP_JOBS_EVERY:
                with contextlib.suppress(Exception):  # a job system that fails
                    keep_jobs(self.client)  # to answer leaves it to the watch
                kept = time.monotonic()
            time.sleep(POLL)

    def give_up(self, why: str) -> None:
        """Leave every point still waiting unmeasured."""
        self.client.cancel(list(self.futures))
        for _ in self.futures:
            self.unmeasured.add(why)
        self.futures.clear()

    def again(self, point, why: str) -> None:
        """Measure ``point`` again, or leave it unmeasured after enough attempts."""
        attempt = self.attempts.get(point.key, 0) + 1
        self.attempts[point.key] = attempt
        if attempt >= INFRASTRUCTURE_ATTEMPTS:
            self.unmeasured.add(why)
            return
        future = self.submit(point, 10**9, attempt)  # before any other point
        self.futures[future] = point
        self.pending.add(future)

    def take(self, future) -> None:
        """Store one finished future's result, or see to its point again."""
        from distributed import KilledWorker

        point = self.futures.pop(future)
        try:
            result = future.result()
        except CancelledError as exc:  # the cluster gave it up: not measured
            first = (str(exc).strip().splitlines() or ["cancelled"])[0]
            self.unmeasured.add(f"the Dask cluster dropped them: {first}")
            return
        except KilledWorker:  # its workers died under it: not measured
            self.again(point, "the workers that ran it died")
            return
        except Exception as exc:  # a bug of the task must not stop the sweep
            result = _lost(point, exc)
        if result.get("stopped"):  # its worker or allocation went away
            self.again(point, result.get("error") or "its worker went away")
            return
        self.store.write_point(result)
        _log(self.client, done_event(self.name, point.key, result, time.time()))
        log = os.path.join(self.store.logs_dir, f"{point.key}.log")
        self.progress.update(
            result["status"], point.label(), result.get("error", ""), log
        )
        self.stored += 1
        if self.stored % self.every == 0:
            self.store.consolidate()


def _log(client: Client, event: dict) -> None:
    """Tell the sweep page; a cluster that went away must not stop the sweep."""
    with contextlib.suppress(Exception):  # the page is a view, the store the record
        client.log_event(TOPIC, event)
