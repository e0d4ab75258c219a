"""What makes a campaign the same campaign, and what changed when it is not."""

from __future__ import annotations

import json
import os
import re

__all__ = ["archive_campaign", "archive_name", "campaign_identity", "identity_changes"]


def campaign_identity(kernel: str, params: dict, throttle: dict, sweep) -> dict:
    """Return what must match for a run to resume a stored campaign.

    The kernel, its fixed parameters, the throttle settings and the sweep's keys.
    The values of the keys are not part of it: a campaign may grow (more node
    counts, more runs) and still be the same campaign.

    Examples
    --------
    >>> campaign_identity("k", {"a": 1}, {"mode": "none"}, {"nodes": [1], "run": [0]})
    {'kernel': 'k', 'params': {'a': 1}, 'throttle': {'mode': 'none'}, 'sweep_keys': ['nodes', 'run']}
    """  # noqa: E501
    return {
        "kernel": kernel,
        "params": params,
        "throttle": throttle,
        "sweep_keys": sorted(sweep),
    }


def _text(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _mapping_changes(name: str, old, new) -> list[str]:
    if not isinstance(old, dict) or not isinstance(new, dict):
        return [] if _text(old) == _text(new) else [f"{name} changed"]
    # A key that is null is one that is not set: a setting a newer scaleprobe
    # added (default null) leaves the campaigns stored before it the same.
    old = {k: v for k, v in old.items() if v is not None}
    new = {k: v for k, v in new.items() if v is not None}
    changes = []
    for key in sorted(set(old) | set(new), key=str):
        if key not in new:
            changes.append(f"{name}.{key} removed")
        elif key not in old:
            changes.append(f"{name}.{key} added ({_text(new[key])})")
        elif _text(old[key]) != _text(new[key]):
            changes.append(
                f"{name}.{key} changed ({_text(old[key])} -> {_text(new[key])})"
            )
    return changes


def identity_changes(old: dict, new: dict) -> list[str]:
    """Say how a new campaign differs from a stored one; empty when it resumes it.

    Parameters
    ----------
    old, new : dict
        Campaign descriptions (``identity`` and ``sweep``). A stored identity
        without ``sweep_keys`` (written by an older scaleprobe) takes them from its
        ``sweep``.

    Returns
    -------
    list of str
        One phrase per change, e.g. ``"sweep keys: n removed, bandwidth added"``.

    Examples
    --------
    >>> old = {"identity": {"kernel": "k", "params": {"a": 1}}, "sweep": {"n": [1]}}
    >>> new = {"identity": {"kernel": "k", "params": {"a": 2},
    ...                     "sweep_keys": ["m"]}, "sweep": {"m": [1]}}
    >>> identity_changes(old, new)
    ['params.a changed (1 -> 2)', 'sweep keys: n removed, m added']
    """
    before = dict(old.get("identity") or {})
    after = dict(new.get("identity") or {})
    before.setdefault("sweep_keys", sorted(old.get("sweep") or {}))
    after.setdefault("sweep_keys", sorted(new.get("sweep") or {}))
    changes = []
    if before.get("kernel") != after.get("kernel"):
        changes.append(
            f"kernel changed ({before.get('kernel')} -> {after.get('kernel')})"
        )
    for name in ("params", "throttle"):
        changes += _mapping_changes(name, before.get(name), after.get(name))
    removed = [k for k in before["sweep_keys"] if k not in after["sweep_keys"]]
    added = [k for k in after["sweep_keys"] if k not in before["sweep_keys"]]
    if removed or added:
        parts = [f"{k} removed" for k in removed] + [f"{k} added" for k in added]
        changes.append("sweep keys: " + ", ".join(parts))
    for key in sorted(set(before) | set(after)):
        known = key in ("kernel", "params", "throttle", "sweep_keys")
        if not known and _text(before.get(key)) != _text(after.get(key)):
            changes.append(f"{key} changed")
    return changes


def archive_name(stem: str, started) -> str:
    """Return a free stem for an earlier campaign moved aside.

    ``results/pingpong`` started at 2026-01-02T03:04:05 becomes
    ``results/pingpong.campaign-20260102T030405`` (its ``.points``, ``.logs`` and
    ``.zarr`` keep working together: ``scaleprobe show`` opens it).

    Examples
    --------
    >>> archive_name("/nonexistent/r", "2026-01-02T03:04:05+0000")
    '/nonexistent/r.campaign-20260102T030405'
    """
    digits = re.sub(r"[^0-9T]", "", str(started or ""))[:15] or "unknown"
    base = f"{stem}.campaign-{digits}"
    candidate, n = base, 2
    while any(
        os.path.exists(candidate + ext) for ext in (".points", ".logs", ".zarr", ".nc")
    ):
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def archive_campaign(store, started) -> str:
    """Move a store's campaign aside (see :func:`archive_name`); return a note.

    Parameters
    ----------
    store : ResultStore
        The store whose points, logs and consolidated Dataset move.
    started : str
        The campaign's start time (its attribute ``started``).

    Raises
    ------
    StoreError
        A folder cannot be moved.
    """
    from ._storefiles import io_error

    stem = archive_name(store.stem, started)
    ext = store.path[len(store.stem) :]
    for source, target in (
        (store.points_dir, stem + ".points"),
        (store.logs_dir, stem + ".logs"),
        (store.path, stem + ext),
    ):
        if os.path.exists(source):
            try:
                os.replace(source, target)
            except OSError as exc:
                raise io_error(exc, "archive of the earlier campaign", target) from None
    return f"moved the earlier campaign at {store.path} to {stem + ext}"
