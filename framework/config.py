"""scaleprobe settings in :mod:`dask.config`, under the ``scaleprobe`` namespace.

Defaults live in the packaged ``scaleprobe.yaml``; users override them in any Dask
config file (``~/.config/dask/scaleprobe.yaml``), in ``DASK_SCALEPROBE__...``
environment variables, or with ``dask.config.set({"scaleprobe.launch.timeout": 60})``.

Every setting is read through :func:`get`, which accepts ``-`` and ``_`` alike, as Dask
does: an environment variable cannot hold a ``-`` in a shell, so
``DASK_SCALEPROBE__CLUSTER__SLURM__NTASKS_PER_NODE=2`` arrives as the key
``ntasks_per_node``. A section read whole (``get("cluster.slurm")``) comes back with
kebab-case keys whichever way each was written.
"""

from __future__ import annotations

import os

import dask.config
import yaml
from scaleprobe.kernels.schema import LINK_DEFAULTS

__all__ = ["default", "get", "resolve"]

_DEFAULTS = os.path.join(os.path.dirname(__file__), "scaleprobe.yaml")

with open(_DEFAULTS, encoding="utf-8") as _f:
    _defaults = yaml.safe_load(_f)
# The link's defaults have one source, the kernels' link model, which cannot read
# Dask's config; the throttle settings take theirs from it.
_defaults["scaleprobe"]["throttle"] = {
    **LINK_DEFAULTS,
    **_defaults["scaleprobe"]["throttle"],
}
dask.config.update_defaults(_defaults)


def _kebab(value):
    """``value`` with every mapping key below it in kebab-case (``a_b`` -> ``a-b``)."""
    if isinstance(value, dict):
        return {
            (k.replace("_", "-") if isinstance(k, str) else k): _kebab(v)
            for k, v in value.items()
        }
    return value


def get(key: str):
    """Return the setting ``scaleprobe.<key>``, ``-`` and ``_`` alike.

    Parameters
    ----------
    key : str
        Dotted key below ``scaleprobe``, e.g. ``"launch.timeout"``; each part may be
        written with ``-`` or ``_``.

    Returns
    -------
    object
        The configured value; a section (a mapping) with its keys in kebab-case,
        also those set as ``DASK_SCALEPROBE__...`` environment variables, which
        Dask keeps as written (``ntasks_per_node``).

    Examples
    --------
    >>> get("launch.max-concurrent-launches")
    1
    >>> get("throttle.latency")
    '5 us'
    >>> import dask
    >>> with dask.config.set({"scaleprobe.cluster.slurm.ntasks_per_node": 4}):
    ...     section, leaf = get("cluster.slurm"), get("cluster.slurm.ntasks_per_node")
    >>> section["ntasks-per-node"], leaf
    (4, 4)
    """
    return _kebab(dask.config.get(f"scaleprobe.{key}"))


def default(key: str):
    """Return the packaged default of the setting ``scaleprobe.<key>``.

    The value before any user configuration: what a reference documents.

    Parameters
    ----------
    key : str
        Dotted key below ``scaleprobe``, e.g. ``"launch.timeout"`` (``-`` or ``_``).

    Returns
    -------
    object

    Examples
    --------
    >>> import dask
    >>> with dask.config.set({"scaleprobe.launch.timeout": 5}):
    ...     get("launch.timeout"), default("launch.timeout")
    (5, 600)
    """
    value = _defaults["scaleprobe"]
    for part in key.split("."):
        value = value[part.replace("_", "-")]
    return value


def resolve(value, key: str):
    """Return ``value`` unless it is None, else the setting ``scaleprobe.<key>``.

    Parameters
    ----------
    value : object
        An explicit keyword argument, or None.
    key : str
        The setting to fall back on.

    Returns
    -------
    object
        ``value`` or the configured default.

    Examples
    --------
    >>> resolve(None, "cluster.workers")
    2
    >>> resolve(4, "cluster.workers")
    4
    """
    return get(key) if value is None else value
