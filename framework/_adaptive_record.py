"""Where an adaptive campaign keeps its rounds: ``STEM.adaptive.json`` by its store.

Light on purpose: the sweep page reads it without importing the runner.
"""

from __future__ import annotations

import json
import os

__all__ = ["adaptive_record", "record_path"]

SUFFIX = ".adaptive.json"


def record_path(store):
    """The record file of the store at ``store``.

    Parameters
    ----------
    store : str
        The store's path (``results/demo.zarr``).

    Returns
    -------
    str

    Examples
    --------
    >>> record_path("results/demo.zarr")
    'results/demo.adaptive.json'
    """
    path = os.fspath(store).rstrip("/")
    stem, ext = os.path.splitext(path)
    return (stem if ext in (".zarr", ".nc") else path) + SUFFIX


def adaptive_record(store):
    """The rounds of a store's adaptive campaign, or None when it had none.

    Parameters
    ----------
    store : str
        The store's path.

    Returns
    -------
    dict or None
        ``goal``, ``target`` and ``rounds`` (each with ``width``, ``lower``,
        ``upper``, ``spent`` and ``points``).
    """
    path = record_path(store)
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
