"""``scaleprobe plan``: what a run would do, every check that needs no MPI, no write."""

from __future__ import annotations

import os
import warnings

from ._identity import identity_changes
from ._lock import OutputLockedError, describe_holder
from ._storefiles import StoreError, check_output
from ._warnings import OversubscriptionWarning
from .planning import below_min_ranks, oversubscription, plan

__all__ = ["describe_plan"]


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
    from .launch import build_command, launch_environment, replay_line

    if spec.throttle.mode == "netns":
        return (
            "(throttle mode netns: mpiexec runs inside the namespace network that "
            "the run builds; see the point's log for the exact line)"
        )
    command = build_command(spec, point, settings=settings)
    return replay_line(
        command, launch_environment(spec, point, settings), cwd=os.getcwd()
    )


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
    from .runner import _campaign, check_retry
    from .settings import LaunchSettings
    from .spec import load_spec
    from .store import ResultStore

    spec = load_spec(spec_or_path)
    retry = check_retry(retry)
    settings = LaunchSettings.from_config()
    store = ResultStore(output if output is not None else spec.output)
    check_output(store.path, probe=True)
    state = _store_state(store, _campaign(spec, settings), new_campaign)
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
    small = below_min_ranks(spec)
    if small:
        lines.append(
            f"left out: {len(small)} admissible points with fewer than "
            f"{spec.min_ranks} ranks, the least kernel {spec.kernel!r} runs on"
        )
    launches_here = not (settings.hostfile or settings.launcher == "srun")
    message = oversubscription(spec, todo, os.cpu_count() or 1)
    if launches_here and message:
        warnings.warn(message, OversubscriptionWarning, stacklevel=2)
    if todo:
        lines.append(f"first point: {todo[0].label()}")
        lines.append(f"  {_first_command(spec, todo[0], settings)}")
        lines.append("points to measure, in run order:")
        width = len(str(len(todo)))
        lines += [f"  {i:>{width}}  {p.label()}" for i, p in enumerate(todo, 1)]
    else:
        lines.append("nothing to measure: every point is stored")
    lines.append(
        "checks passed: spec and kernel parameters, launch settings, output, "
        "campaign (not checked without running: the cluster and MPI itself)"
    )
    return "\n".join(lines)
