"""Run a sweep: check and lock its store, plan it, measure what is missing.

:func:`prepare_sweep` does everything that needs no cluster (the spec, the launch
settings, the output's lock, the stored campaign, the plan); :func:`describe_plan`
does the same checks without writing anything and says what a run would measure
(``scaleprobe plan``); :func:`run_sweep` measures. Dask's distributed scheduler is
imported only when a sweep has points to measure.

How a sweep measures
    Every admissible point not yet in the store becomes one Dask task that launches
    the kernel under MPI; at most ``max_concurrent_launches`` run at once across the
    cluster (one distributed semaphore per cluster, shared by every sweep on it), so
    measurements do not disturb each other. The ``scaleprobe.launch`` settings are
    read on the client, validated, recorded in the provenance (``launch_settings``)
    and sent with every point. Results are stored as they arrive; a sweep that is
    killed and run again continues with the points that are missing. While it runs,
    the sweep holds the output's lock: a second run on the same output is refused at
    once. A launch is killed when the task that waits on it is cancelled, so no
    launch outlives the client that asked for it, on an external cluster too.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import TYPE_CHECKING

from ._warnings import OversubscriptionWarning
from .campaign import describe_campaign, identity_changes
from .launch import build_command, launch_environment, replay_line
from .launcher import check_launcher, describe_mpi
from .planning import below_min_ranks, oversubscription, plan
from .settings import LaunchSettings
from .spec import SpecError, load_spec
from .store import (
    OutputLockedError,
    ResultStore,
    StoreError,
    check_output,
    describe_holder,
)

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "RETRYABLE",
    "Sweep",
    "check_retry",
    "describe_plan",
    "prepare_sweep",
    "run_sweep",
]


#: Statuses ``retry`` may name.
RETRYABLE = ("failed", "timeout", "invalid")


def check_retry(retry) -> tuple[str, ...]:
    """Return the statuses to measure again, or raise a one-line error.

    Parameters
    ----------
    retry : str or iterable of str
        ``"failed,timeout"``, ``["failed"]``, or empty.

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> check_retry("failed, timeout")
    ('failed', 'timeout')
    >>> check_retry("ok")
    Traceback (most recent call last):
    ...
    scaleprobe.framework.spec.SpecError: retry: 'ok' is not a status to retry; allowed: failed, timeout, invalid
    """  # noqa: E501
    if isinstance(retry, str):
        retry = [part.strip() for part in retry.split(",") if part.strip()]
    statuses = tuple(dict.fromkeys(retry or ()))
    for status in statuses:
        if status not in RETRYABLE:
            raise SpecError(
                f"retry: {status!r} is not a status to retry; allowed: "
                + ", ".join(RETRYABLE)
            )
    return statuses


class Sweep:
    """A sweep whose store is locked, checked and planned, ready to run.

    Made by :func:`prepare_sweep`, which holds the store's lock while the sweep is
    open. Everything that can be checked without a cluster has been.

    Attributes
    ----------
    spec : Spec
    store : ResultStore
    settings : LaunchSettings
    todo : list of Point
        Points to measure, in run order (missing ones and those retried).
    total : int
        Points of the campaign.
    notes : list of str
        What preparing did that a user should hear of (a stale lock taken over, an
        earlier campaign moved aside).
    """

    def __init__(self, spec, store, settings, todo, total, notes, progress):
        self.spec, self.store, self.settings = spec, store, settings
        self.todo, self.total, self.notes = todo, total, notes
        self.progress = progress

    def run(self, client: Client | None = None, *, workers=None):
        """Measure the points to do and return the campaign's Dataset.

        Parameters
        ----------
        client : distributed.Client, optional
            Where to run; an embedded ``LocalCluster`` by default (only when there
            is something to measure).
        workers : int, optional
            Workers of the embedded cluster.

        Returns
        -------
        xarray.Dataset

        Raises
        ------
        UnmeasuredError
            Points were left unmeasured by the infrastructure (workers or their
            batch allocations gone); every finished point is stored, the same
            command measures the rest.
        """
        from ._execute import Progress, execute, warn_host_load, warn_slot_timeouts
        from ._linkprobe import warn_link_shortfall

        spec, store, todo = self.spec, self.store, self.todo
        reporter = Progress(
            total=self.total, already=self.total - len(todo), enabled=self.progress
        )
        if todo:
            with contextlib.ExitStack() as stack:
                stack.callback(reporter.close)  # an interrupted bar ends its line
                network = None
                if spec.throttle.mode == "netns":
                    from .netns import namespace_network

                    nodes = max(point.coords["nodes"] for point in todo)
                    network = stack.enter_context(namespace_network(int(nodes)))
                if client is None:
                    from .cluster import cluster_client

                    client = stack.enter_context(
                        cluster_client(workers=workers, announce=self.progress)
                    )
                unmeasured = execute(
                    client, spec, self.settings, store, todo, reporter, network
                )
        else:
            reporter.close()
        ds = store.consolidate()
        if todo and unmeasured.count:
            from .cluster import UnmeasuredError

            raise UnmeasuredError(unmeasured.message())
        warn_slot_timeouts(ds)
        warn_host_load(ds)
        warn_link_shortfall(ds)
        if self.progress:
            print(f"scaleprobe: results in {store.path}", file=sys.stderr, flush=True)
        return ds

    def succeeded(self) -> int:
        """How many of the points this sweep measured are stored ``ok``.

        Returns
        -------
        int
            Points of :attr:`todo` whose stored status is ``ok`` (0 before
            :meth:`run`, and when every launch failed or ran out of time).
        """
        statuses = self.store.statuses()
        return sum(statuses.get(point.key) == "ok" for point in self.todo)


@contextlib.contextmanager
def prepare_sweep(
    spec_or_path, *, output=None, retry=(), new_campaign=False, progress=True
):
    """Lock, check and plan a sweep; yield it ready to run, release the lock after.

    Nothing is launched and no cluster is needed: the spec and the launch settings
    are validated, the output's lock is taken (a second run on the same output is
    refused at once, naming the first), temporary files of crashed writes are
    removed, damaged point files are moved aside, and the stored campaign is
    checked to be this one.

    Parameters
    ----------
    spec_or_path : str, path-like, dict or Spec
        The campaign spec.
    output : str or path-like, optional
        Overrides the spec's ``output``.
    retry : str or iterable of str, optional
        Statuses of stored points to measure again (``failed``, ``timeout``,
        ``invalid``); their earlier results stay in the point's ``history``.
    new_campaign : bool, default=False
        Move a stored campaign aside and start a new one at the output.
    progress : bool, default=True
        Print notes and progress to standard error.

    Yields
    ------
    Sweep

    Raises
    ------
    SpecError, SettingsError
        The spec, ``retry`` or a launch setting is invalid.
    StoreError
        The output is in use by another run, holds another campaign, or cannot be
        written.
    """
    spec = load_spec(spec_or_path)
    retry = check_retry(retry)
    settings = check_launcher(spec, LaunchSettings.from_config())
    store = ResultStore(output if output is not None else spec.output)
    source = "output" if output is not None else "spec key 'output'"
    try:
        check_output(store.path, probe=True)
        notes = [store.lock.acquire()]
    except OutputLockedError:
        raise
    except StoreError as exc:  # name where the path came from
        raise type(exc)(f"{source}: {exc}") from None
    try:
        try:
            campaign = describe_campaign(spec, settings)
            notes.append(store.start(campaign, new_campaign=new_campaign))
        except StoreError as exc:
            if not store.exists():
                raise type(exc)(f"{source}: {exc}") from None
            raise
        statuses = store.statuses()
        again = {key for key, status in statuses.items() if status in retry}
        todo = plan(spec, done=set(statuses) - again)
        notes = [note for note in notes if note]
        if progress:
            for note in notes:
                print(f"scaleprobe: note: {note}", file=sys.stderr, flush=True)
            if again:
                print(
                    f"scaleprobe: measuring {len(again)} stored "
                    f"{'/'.join(retry)} points again",
                    file=sys.stderr,
                    flush=True,
                )
        yield Sweep(spec, store, settings, todo, len(plan(spec)), notes, progress)
    finally:
        store.lock.release()


def run_sweep(
    spec_or_path,
    client: Client | None = None,
    *,
    output=None,
    workers=None,
    progress=True,
    retry=(),
    new_campaign=False,
):
    """Run (or resume) a sweep and return its results.

    Every admissible point not yet in the store becomes one Dask task that launches
    the kernel under MPI (how, and what keeps measurements apart: see the module).

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
    retry : str or iterable of str, optional
        Statuses of stored points to measure again (``"failed,timeout"``); the
        earlier results stay in each point file's ``history``.
    new_campaign : bool, default=False
        Move a campaign with another identity (kernel, params, throttle, sweep
        keys) aside instead of refusing to run.

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
    StoreError
        Another run uses the output, it holds another campaign, or it cannot be
        written (:class:`~scaleprobe.framework.store.StoreIOError` for a full disk).

    Warns
    -----
    OversubscriptionWarning
        Wall-clock points (throttle ``none``, ``netns``) with more ranks than a
        worker's host has cores.
    DamagedPointWarning
        A stored point file was damaged and moved aside; the point runs again.

    Examples
    --------
    >>> ds = run_sweep("pingpong.yaml")                      # doctest: +SKIP
    >>> ds.achieved_bandwidth.mean("run").to_pandas()         # doctest: +SKIP
    """
    with prepare_sweep(
        spec_or_path,
        output=output,
        retry=retry,
        new_campaign=new_campaign,
        progress=progress,
    ) as sweep:
        return sweep.run(client, workers=workers)


# ------------------------------------------------------------------- the dry run


def _store_state(store, campaign: dict, new_campaign: bool) -> str:
    holder = store.lock.holder()
    if holder is not None:
        raise OutputLockedError(
            f"{store.path} is in use by another scaleprobe run "
            f"({describe_holder(holder)})"
        )
    if os.path.lexists(store.path) and not store.exists():
        raise StoreError(
            f"{store.path} exists and is not a scaleprobe store (no "
            f"{store.campaign_file}): it would be overwritten; give another output"
        )
    if not store.exists():
        return "new campaign"
    old = store.campaign()
    changes = identity_changes(old, campaign)
    if new_campaign:
        return "the stored campaign would be moved aside; a new one starts"
    if changes:
        raise StoreError(
            f"{store.path} holds another campaign ({'; '.join(changes)}); run with "
            "--new-campaign to move the old results aside, or give another output"
        )
    return "resumes the stored campaign"


def _first_command(spec, point, settings) -> str:
    if spec.throttle.mode == "netns":
        return (
            "(throttle mode netns: mpiexec runs inside the namespace network that "
            "the run builds; see the point's log for the exact line)"
        )
    command = build_command(spec, point, settings=settings)
    return replay_line(
        command, launch_environment(spec, point, settings), cwd=os.getcwd()
    )


def _stored_unsuccessful(statuses, again) -> list[str]:
    """A line on the stored points that did not succeed and are not measured again.

    >>> print(*_stored_unsuccessful({"a": "ok", "b": "failed", "c": "failed"}, set()))
    stored without success: failed 2 (`--retry failed` measures them again)
    >>> _stored_unsuccessful({"a": "ok", "b": "failed"}, {"b"})
    []
    """
    kinds = sorted({s for k, s in statuses.items() if s != "ok" and k not in again})
    if not kinds:
        return []
    counts = ", ".join(
        f"{kind} {sum(s == kind and k not in again for k, s in statuses.items())}"
        for kind in kinds
    )
    return [
        f"stored without success: {counts} (`--retry {','.join(kinds)}` measures "
        "them again)"
    ]


def _points_to_measure(spec, todo, settings) -> list[str]:
    """The first point with the shell line that runs it, then every point in order."""
    if not todo:
        return ["nothing to measure: every point is stored"]
    width = len(str(len(todo)))
    return [
        f"first point: {todo[0].label()}",
        f"  {_first_command(spec, todo[0], settings)}",
        "points to measure, in run order:",
        *(f"  {i:>{width}}  {p.label()}" for i, p in enumerate(todo, 1)),
    ]


def describe_plan(spec_or_path, *, output=None, retry=(), new_campaign=False) -> str:
    """Check a sweep as far as possible without MPI and describe what a run would do.

    Nothing is written (a folder made to probe the output's file system is removed
    at once) and nothing is launched: the spec and kernel parameters,
    ``retry``, the launch settings (``mpiexec`` found), that the output can be
    created, that no other run holds it, that a stored campaign there is this one,
    and how many points are stored, to measure, to retry or left out.

    Parameters
    ----------
    spec_or_path : str, path-like, dict or Spec
        The campaign spec.
    output : str or path-like, optional
        Overrides the spec's ``output``.
    retry : str or iterable of str, optional
        Statuses a run would measure again.
    new_campaign : bool, default=False
        Whether a run would move a stored campaign aside.

    Returns
    -------
    str
        The campaign, the output's state, point counts, the first point with the
        shell line that runs it, and every point to measure in run order.

    Raises
    ------
    SpecError, SettingsError, StoreError
        The first check that fails, as one line.

    Warns
    -----
    OversubscriptionWarning
        Wall-clock points with more ranks than this host's cores.
    """
    spec = load_spec(spec_or_path)
    retry = check_retry(retry)
    settings = check_launcher(spec, LaunchSettings.from_config())
    store = ResultStore(output if output is not None else spec.output)
    check_output(store.path, probe=True)
    state = _store_state(store, describe_campaign(spec, settings), new_campaign)
    statuses = {} if new_campaign or not store.exists() else store.statuses()
    again = {key for key, status in statuses.items() if status in retry}
    todo = plan(spec, done=set(statuses) - again)
    total = len(plan(spec))
    lines = [
        f"campaign {spec.name} (kernel {spec.kernel}, throttle {spec.throttle.mode})",
        f"output {os.path.abspath(store.path)}: {state}",
        f"points: {total} in the campaign, {total - len(todo)} stored, "
        f"{len(todo)} to measure"
        + (f" ({len(again)} of them again: {'/'.join(retry)})" if again else ""),
    ]
    lines += _stored_unsuccessful(statuses, again)
    small = below_min_ranks(spec)
    if small:
        lines.append(
            f"left out: {len(small)} admissible points with fewer than "
            f"{spec.min_ranks} ranks, the least kernel {spec.kernel!r} runs on"
        )
    launches_here = not (settings.hostfile or settings.launcher == "srun")
    message = oversubscription(
        spec, todo, os.cpu_count() or 1, settings.threads_per_rank
    )
    if launches_here and message:
        warnings.warn(message, OversubscriptionWarning, stacklevel=2)
    lines += _points_to_measure(spec, todo, settings)
    lines.append(f"mpi: {describe_mpi(settings)}")
    lines.append(
        "checks passed: spec and kernel parameters, launch settings, the program's "
        "MPI, output, campaign (not checked without running: the cluster and MPI "
        "itself)"
    )
    return "\n".join(lines)
