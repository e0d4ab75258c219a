"""Run a sweep on Dask: one task per point, one launch at a time, results kept."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time

from distributed import Client, Semaphore, as_completed

from . import config
from ._progress import Progress
from ._provenance import provenance
from .dashboard import TOPIC, attach_sweep_page
from .jobqueue import node_resources
from .launch import launch_point
from .plan import Point, plan
from .settings import LaunchSettings
from .spec import Spec, SpecError, load_spec
from .store import ResultStore

__all__ = ["run_sweep"]


#: The one launch semaphore of a cluster: every sweep on the cluster shares it.
LAUNCH_SEMAPHORE = "scaleprobe-launch"


def _run_point(
    spec: Spec,
    point: Point,
    settings: LaunchSettings,
    sweep: str,
    network=None,
) -> dict:
    """The Dask task: wait for the cluster's launch slot, then run the point."""
    from distributed import get_worker

    with Semaphore(max_leases=spec.max_concurrent_launches, name=LAUNCH_SEMAPHORE):
        get_worker().log_event(
            TOPIC,
            {
                "kind": "start",
                "sweep": sweep,
                "key": point.key,
                "time": time.time(),
            },
        )
        result = launch_point(spec, point, network, settings=settings)
    result["worker"] = get_worker().address
    return result


def _campaign(spec: Spec, settings: LaunchSettings) -> dict:
    attrs = provenance(spec, settings.mpiexec)
    attrs["launch_settings"] = json.dumps(settings.as_dict())
    return {
        "identity": {
            "kernel": spec.kernel,
            "params": spec.params,
            "throttle": spec.throttle.as_dict(),
        },
        "sweep": {k: list(v) for k, v in spec.sweep.items()},
        "attrs": attrs,
    }


def _metric(result: dict, name: str = "time"):
    value = ((result.get("record") or {}).get("metrics") or {}).get(name)
    return value if isinstance(value, (int, float)) else None


def _show_plan(client: Client, spec: Spec, sweep: str, todo, progress) -> None:
    """Put the sweep on the dashboard's sweep page and print the page's address."""
    link = attach_sweep_page(client)
    if progress and link:
        print(f"scaleprobe: sweep page at {link}", file=sys.stderr, flush=True)
    pending = {point.key for point in todo}
    client.log_event(
        TOPIC,
        {
            "kind": "plan",
            "sweep": sweep,
            "name": spec.name,
            "metric": "time",
            "dims": {k: list(v) for k, v in spec.sweep.items()},
            "points": [
                {
                    "key": p.key,
                    "coords": p.coords,
                    "status": "pending" if p.key in pending else "stored",
                }
                for p in plan(spec)
            ],
        },
    )


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


def _execute(
    client: Client,
    spec: Spec,
    settings: LaunchSettings,
    store: ResultStore,
    todo: list[Point],
    progress: Progress,
    network=None,
) -> None:
    where = os.path.abspath(store.path)
    name = f"scaleprobe-sweep-{where}"
    # Task keys name the sweep too: two sweeps of the same points on one cluster are
    # two measurements, not one task Dask would compute once for both.
    sweep_id = hashlib.sha1(where.encode()).hexdigest()[:10]
    _claim_launch_slots(client, spec)
    _show_plan(client, spec, name, todo, progress.enabled)
    resources = node_resources(client, spec)
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
    every = max(1, int(config.get("store.consolidate-every")))
    try:
        for count, future in enumerate(as_completed(futures), start=1):
            point = futures.pop(future)
            try:
                result = future.result()
            except Exception as exc:  # a lost worker must not stop the sweep
                result = _lost(point, exc)
            store.write_point(result)
            client.log_event(
                TOPIC,
                {
                    "kind": "done",
                    "sweep": name,
                    "key": point.key,
                    "status": result["status"],
                    "value": _metric(result),
                    "time": time.time(),
                },
            )
            progress.update(result["status"], point.label(), result.get("error", ""))
            if count % every == 0:
                store.consolidate()
    except BaseException:
        client.cancel(list(futures))
        raise


def run_sweep(
    spec_or_path,
    client: Client | None = None,
    *,
    output=None,
    workers=None,
    progress=True,
):
    """Run (or resume) a sweep and return its results.

    Every admissible point not yet in the store becomes one Dask task that launches
    the kernel under MPI; at most ``max_concurrent_launches`` run at once across the
    cluster (one distributed semaphore per cluster, shared by every sweep on it), so
    measurements do not disturb each other. The ``scaleprobe.launch`` settings are
    read here, on the client, validated, recorded in the provenance
    (``launch_settings``) and sent with every point.
    Results are stored as they arrive; a sweep that is killed and run again
    continues with the points that are missing.

    Parameters
    ----------
    spec_or_path : str, path-like, dict or Spec
        The campaign spec (see :func:`scaleprobe.framework.spec.load_spec`).
    client : distributed.Client, optional
        Where to run. By default an embedded ``LocalCluster`` is started and its
        dashboard link printed.
    output : str or path-like, optional
        Overrides the spec's ``output``.
    workers : int, optional
        Workers of the embedded cluster.
    progress : bool, default=True
        Print progress (points done / failed / remaining) to standard error.

    Returns
    -------
    xarray.Dataset
        Every point of the campaign, labelled by the sweep dimensions.

    Raises
    ------
    SpecError
        The spec is invalid, or asks for a launch limit other than the one already
        set on the cluster by an earlier sweep.
    SettingsError
        A ``scaleprobe.launch`` setting is invalid.

    Examples
    --------
    >>> ds = run_sweep("pingpong.yaml")                      # doctest: +SKIP
    >>> ds.achieved_bandwidth.mean("run").to_pandas()         # doctest: +SKIP
    """
    spec = load_spec(spec_or_path)
    settings = LaunchSettings.from_config()
    store = ResultStore(output if output is not None else spec.output)
    store.start(_campaign(spec, settings))
    todo = plan(spec, done=store.done_keys())
    total = len(plan(spec))
    reporter = Progress(total=total, already=total - len(todo), enabled=progress)
    if todo:
        with contextlib.ExitStack() as stack:
            network = None
            if spec.throttle.mode == "netns":
                from .netns import namespace_network

                nodes = max(point.coords["nodes"] for point in todo)
                network = stack.enter_context(namespace_network(int(nodes)))
            if client is None:
                from .cluster import cluster_client

                client = stack.enter_context(
                    cluster_client(workers=workers, announce=progress)
                )
            _execute(client, spec, settings, store, todo, reporter, network)
    reporter.close()
    ds = store.consolidate()
    if progress:
        print(f"scaleprobe: results in {store.path}", file=sys.stderr, flush=True)
    return ds
