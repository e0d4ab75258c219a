"""Where an adaptive campaign keeps its rounds: ``STEM.adaptive.json`` by its store.

Light on purpose: the sweep page reads it without importing the runner.
"""

from __future__ import annotations

import json
import os

__all__ = ["adaptive_record", "record_path", "round_note"]

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


def round_note(row):
    """What a round's line and the sweep page say of it beyond its numbers.

    Parameters
    ----------
    row : dict
        A round of the record: ``new`` (the counts it measured once, alone, before
        the next plan), ``unchecked`` and ``largest`` (no law held its check on the
        largest count measured before it), ``failed`` (node count -> statuses of
        the counts whose every run failed, not offered again); records written
        before one of them lack it.

    Returns
    -------
    str
        Empty when there is nothing to say.

    Examples
    --------
    >>> round_note({"new": [16, 64], "points": 2})
    'one at each new count: 16, 64 nodes'
    >>> round_note({"unchecked": True, "largest": 4.0})
    'no law held its check at 4 nodes: the width takes the uncalibrated factor'
    >>> round_note({"failed": {"64": ["timeout"]}, "points": 3})
    'not offered again, every run failed: 64 nodes (timeout)'
    >>> round_note({"points": 3})
    ''
    """
    words = []
    if row.get("new"):
        counts = ", ".join(f"{x:g}" for x in row["new"])
        words.append(f"one at each new count: {counts} nodes")
    if row.get("unchecked"):
        words.append(
            f"no law held its check at {row['largest']:g} nodes: the width takes "
            "the uncalibrated factor"
        )
    if row.get("failed"):
        failed = row["failed"].items()
        counts = ", ".join(f"{x} nodes ({', '.join(s)})" for x, s in failed)
        words.append(f"not offered again, every run failed: {counts}")
    return "; ".join(words)


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
        ``upper``, ``spent``, ``points`` and its :func:`round_note` as ``note``).
    """
    path = record_path(store)
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    for row in record.get("rounds", ()):
        row["note"] = round_note(row)
    return record
