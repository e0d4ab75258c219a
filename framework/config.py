"""scaleprobe settings in :mod:`dask.config`, under the ``scaleprobe`` namespace.

Defaults live in the packaged ``scaleprobe.yaml``; users override them in any Dask
config file (``~/.config/dask/scaleprobe.yaml``), in ``DASK_SCALEPROBE__...``
environment variables, or with ``dask.config.set({"scaleprobe.launch.timeout": 60})``.
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
    >>> get("throttle.latency")
    '5 us'
    """
    return dask.config.get(f"scaleprobe.{key}")


def default(key: str):
    """Return the packaged default of the setting ``scaleprobe.<key>``.

    The value before any user configuration: what a reference documents.

    Parameters
    ----------
    key : str
        Dotted kebab-case key below ``scaleprobe``, e.g. ``"launch.timeout"``.

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
        value = value[part]
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
