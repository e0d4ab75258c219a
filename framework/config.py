"""scaleprobe settings in :mod:`dask.config`, under the ``scaleprobe`` namespace.

Defaults live in the packaged ``scaleprobe.yaml``; users override them in any Dask
config file (``~/.config/dask/scaleprobe.yaml``), in ``DASK_SCALEPROBE__...`` environment
variables, or with ``dask.config.set({"scaleprobe.launch.timeout": 60})``.
"""

from __future__ import annotations

import os

import dask.config
import yaml

__all__ = ["get", "resolve"]

_DEFAULTS = os.path.join(os.path.dirname(__file__), "scaleprobe.yaml")

with open(_DEFAULTS, encoding="utf-8") as _f:
    dask.config.update_defaults(yaml.safe_load(_f))


def get(key: str):
    """Return the setting ``scaleprobe.<key>``.

    Parameters
    ----------
    key : str
        Dotted kebab-case key below ``scaleprobe``, e.g. ``"launch.timeout"``.

    Returns
    -------
    object
        The configured value.

    Examples
    --------
    >>> get("launch.max-concurrent-launches")
    1
    """
    return dask.config.get(f"scaleprobe.{key}")


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
