"""Run a sweep on Dask: one task per point, launches serialized, results stored as they land."""

from __future__ import annotations

import contextlib
import os
import sys
import time

from distributed import Client, Semaphore, as_completed

from . import config
from ._progress import Progress
from ._provenance import provenance
from .dashboard import TOPIC, attach_sweep_page
from .jobqueue import node_resources
from .launch import launch_point, resolve_mpiexec
from .plan import Point, plan
from .spec import Spec, load_spec
from .store import ResultStore

__all__ = ["run_sweep"]


def _run_point(
    spec: Spec, point: Point, semaphore: str, leases: int, network=None
) -> dict:
    """The Dask task: wait for a launch slot, then run the point."""
    from distributed import get_worker

    with Semaphore(max_leases=leases, name=semaphore):
        get_worker().log_event(
            TOPIC,
            {
                "kind": "start",
                "sweep": semaphore,
                "key": point.key,
                "time": time.time(),
            },
        )
        result = launch_point(spec, point, network)
    result["worker"] = get_worker().address
    return result


def _campaign(spec: Spec) -> dict:
    return {
        "identity": {
            "kernel": spec.kernel,
            "params": spec.params,
            "throttle": spec.throttle.as_dict(),
        },
        "sweep": {k: list(v) for k, v in spec.sweep.items()},
        "attrs": provenance(spec, resolve_mpiexec()),
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


def _execute(
    client: Client,
    spec: Spec,
    store: ResultStore,
    todo: list[Point],
    progress: Progress,
    network=None,
) -> None:
    name = f"scaleprobe-launch-{os.path.abspath(store.path)}"
    _show_plan(client, spec, name, todo, progress.enabled)
    resources = node_resources(client, spec)
    futures = {}
    for rank, point in enumerate(todo):
        future = client.submit(
            _run_point,
            spec,
            point,
            name,
            spec.max_concurrent_launches,
            network,
            key=f"scaleprobe-point-{point.key}",
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
    cluster (a distributed semaphore), so measurements do not disturb each other.
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

    Examples
    --------
    >>> ds = run_sweep("pingpong.yaml")                      # doctest: +SKIP
    >>> ds.achieved_bandwidth.mean("run").to_pandas()         # doctest: +SKIP
    """
    spec = load_spec(spec_or_path)
    store = ResultStore(output if output is not None else spec.output)
    store.start(_campaign(spec))
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
            _execute(client, spec, store, todo, reporter, network)
    reporter.close()
    ds = store.consolidate()
    if progress:
        print(f"scaleprobe: results in {store.path}", file=sys.stderr, flush=True)
    return ds
