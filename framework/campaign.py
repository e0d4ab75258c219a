"""A campaign: what it is (its identity), where it was measured (its provenance).

A store's ``campaign.json`` holds one campaign description
(:func:`describe_campaign`): the identity a run must match to resume the campaign
(kernel, fixed parameters, throttle settings, sweep keys), the sweep's axes, the
spec's link at 100 % (:meth:`LinkConfig.to_dict
<scaleprobe.kernels.schema.LinkConfig.to_dict>`, the one form the link is stored in)
and the provenance that becomes the Dataset's attributes (versions, MPI library,
host, git commit, start time, launch settings).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import socket
import subprocess
import time

from .launch import spec_link
from .settings import LaunchSettings
from .spec import Spec

__all__ = [
    "campaign_identity",
    "describe_campaign",
    "identity_changes",
    "mpi_library",
    "provenance",
]


def describe_campaign(spec: Spec, settings: LaunchSettings) -> dict:
    """The description of a campaign that its store keeps in ``campaign.json``.

    Parameters
    ----------
    spec : Spec
        The campaign.
    settings : LaunchSettings
        How its points are launched (recorded in the provenance).

    Returns
    -------
    dict
        ``identity`` (:func:`campaign_identity`), ``sweep`` (axis to list of
        values), ``link`` (the spec's :class:`~scaleprobe.kernels.schema.LinkConfig`
        as a dict) and ``attrs`` (:func:`provenance` and ``launch_settings``).
    """
    attrs = provenance(spec, settings.mpiexec)
    attrs["launch_settings"] = json.dumps(settings.as_dict())
    return {
        "identity": campaign_identity(
            spec.kernel, spec.params, spec.throttle.as_dict(), spec.sweep
        ),
        "sweep": {k: list(v) for k, v in spec.sweep.items()},
        "link": spec_link(spec).to_dict(),
        "attrs": attrs,
    }


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


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _run(command: list[str]) -> str:
    try:
        out = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def mpi_library(mpiexec: str) -> str:
    """Describe the MPI library behind ``mpiexec`` (e.g. ``MPICH 5.0.2 (HYDRA)``)."""
    text = _run([mpiexec, "--version"])
    for line in text.splitlines():
        if line.strip().lower().startswith("version:"):
            return f"MPICH {line.split(':', 1)[1].strip()} (hydra mpiexec)"
        if "open mpi" in line.lower() or "(open mpi)" in line.lower():
            return line.strip()
    return text.splitlines()[0] if text else "unknown"


def provenance(spec: Spec, mpiexec: str) -> dict:
    """Return the provenance attributes of a campaign.

    Parameters
    ----------
    spec : Spec
        The campaign.
    mpiexec : str
        The launcher in use.

    Returns
    -------
    dict
        JSON-serialisable attributes for the Dataset.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    commit = _run(["git", "-C", here, "rev-parse", "HEAD"]) or "unknown"
    attrs = {
        "title": spec.name,
        "kernel": spec.kernel,
        "scaleprobe_version": _version("scaleprobe"),
        "git_commit": commit,
        "python_version": platform.python_version(),
        "numpy_version": _version("numpy"),
        "mpi4py_version": _version("mpi4py"),
        "dask_version": _version("dask"),
        "xarray_version": _version("xarray"),
        "mpi_library": mpi_library(mpiexec),
        "mpiexec": mpiexec,
        "hostname": socket.gethostname(),
        "throttle_mode": spec.throttle.mode,
        "admissible": spec.admissible,
        "spec": spec.text,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if spec.throttle.mode == "netns":
        from .netns import shaping_provenance

        attrs.update(shaping_provenance())
    return attrs
