"""Caliper profiles: ``.cali`` files, Caliper's JSON (``json-split``, the input of
Hatchet's and Thicket's Caliper readers) and Hatchet's own JSON.

One file is one run of the application: its call paths (the region ``path``, joined
with ``->`` as Extra-P writes call paths) and their metrics (every numeric value
attribute, such as ``avg#inclusive#sum#time.duration``; the unit from its
``attribute.unit``). The run's process count comes from its global metadata
(:data:`RANK_KEYS`, :data:`NODE_KEYS`, as Caliper and Adiak record them), or is
given; files at the same parameters are repetitions. ``.cali`` files are read with
the ``caliper-reader`` package (``pip install caliper-reader``).
"""

from __future__ import annotations

import json

import numpy as np

from ..io.common import file_error
from .table import SEPARATOR

__all__ = [
    "NODE_KEYS",
    "RANK_KEYS",
    "caliper_run",
    "hatchet_run",
    "json_kind",
    "json_run",
    "json_split_run",
    "load_json",
    "run_parameters",
]

#: Global metadata keys read as the MPI rank count of a run, in order of preference.
RANK_KEYS = ("mpi.world.size", "jobsize", "ranks", "mpi_ranks", "np")
#: Global metadata keys read as the node count of a run.
NODE_KEYS = ("numhosts", "nodes", "num_nodes")
# Region attributes that hold a run's call tree, in order of preference.
_PATH_KEYS = ("path", "region", "source.function#callpath.address")
# Columns of Caliper's JSON that are neither metrics nor the call tree.
_NOT_METRICS = ("mpi.rank", "Node order", "spot.channel", "cali.channel")


def _number(value):
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if np.isfinite(number) else None


def run_parameters(metadata, path, wanted=()):
    """The process count (ranks, nodes) and the ``wanted`` parameters of one run.

    Parameters
    ----------
    metadata : dict
        The run's global metadata.
    path : str
        The file, for messages.
    wanted : sequence of str, default=()
        Further metadata keys to keep as parameters (a problem size...).

    Returns
    -------
    dict of str to float
        ``ranks`` and/or ``nodes`` (when recorded), and the wanted keys.
    """
    found = {}
    for name, keys in (("ranks", RANK_KEYS), ("nodes", NODE_KEYS)):
        for key in keys:
            value = _number(metadata.get(key))
            if value is not None:
                found[name] = value
                break
    for key in wanted:
        value = _number(metadata.get(key))
        if value is None:
            raise file_error(
                path,
                f"has no numeric metadata {key!r}",
                allowed=f"its metadata: {', '.join(sorted(map(str, metadata)))}",
            )
        found[key] = value
    if "ranks" not in found and "nodes" not in found:
        raise file_error(
            path,
            "records no process count",
            allowed=f"a run's metadata names it as one of {', '.join(RANK_KEYS)} "
            f"or {', '.join(NODE_KEYS)}",
        )
    return found


def caliper_run(path, wanted=()):
    """Read one ``.cali`` file.

    Parameters
    ----------
    path : str or Path
    wanted : sequence of str, default=()
        Metadata keys to keep as parameters besides the process count.

    Returns
    -------
    parameters : dict of str to float
    measurements : dict of (str, str) to float
        ``(callpath, metric) -> value``.
    units : dict of str to str
    """
    try:
        import caliperreader
    except ImportError:
        raise ImportError(
            f"reading {path} needs caliper-reader, which is not installed; install "
            "it with `pip install caliper-reader` (or `pip install "
            "scaleprobe[profiles]`), or export the profile with cali-query as "
            "json-split"
        ) from None
    reader = caliperreader.CaliperReader()
    try:
        reader.read(str(path))
    except Exception as error:  # the reader raises bare errors on malformed files
        raise file_error(path, f"is not a readable Caliper file ({error})") from None
    metrics, units = {}, {}
    for name in reader.attributes():
        attribute = reader.attribute(name)
        meta = attribute.metadata()
        numeric = meta.get("type") in ("double", "int", "uint")
        if meta.get("is_value") and numeric and name not in _NOT_METRICS:
            metrics[name] = True
            if meta.get("attribute.unit"):
                units[name] = str(meta["attribute.unit"])
    measurements = {}
    for record in reader.records:
        key = next((k for k in _PATH_KEYS if k in record), None)
        if key is None:
            continue
        region = record[key]
        callpath = SEPARATOR.join(region if isinstance(region, list) else [region])
        for metric in metrics:
            value = _number(record.get(metric))
            if value is not None:
                measurements[(callpath, metric)] = value
    parameters = run_parameters(dict(reader.globals), path, wanted)
    return parameters, measurements, units


def load_json(path):
    """The JSON document of ``path``; a malformed one is refused with its place."""
    with open(path, encoding="utf-8") as stream:
        try:
            return json.load(stream)
        except json.JSONDecodeError as error:
            raise file_error(
                path,
                f"is not valid JSON: {error.msg}",
                where=f"line {error.lineno}, column {error.colno}",
            ) from None


def json_split_run(path, wanted=(), data=None):
    """Read one Caliper JSON file (``json-split``: ``columns``, ``data``,
    ``nodes`` and the run's metadata at the top level).

    Rows of several ranks of one call path (an ``mpi.rank`` column) are averaged.

    Returns
    -------
    parameters, measurements, units
        As :func:`caliper_run`.
    """
    data = load_json(path) if data is None else data
    columns = data.get("columns")
    rows = data.get("data")
    nodes = data.get("nodes")
    if not (isinstance(columns, list) and isinstance(rows, list)):
        raise file_error(path, "is not Caliper json-split (no columns and data)")
    meta = data.get("column_metadata") or [{} for _ in columns]
    tree = [c for c in _PATH_KEYS if c in columns]
    if not tree or not isinstance(nodes, list):
        raise file_error(path, "has no call tree (a 'path' column and 'nodes')")
    where = columns.index(tree[0])
    names = _node_paths(nodes, path)
    metrics = {
        i: name
        for i, name in enumerate(columns)
        if i != where
        and name not in _NOT_METRICS
        and (meta[i] if i < len(meta) else {}).get("is_value", True)
    }
    units = {
        name: str(meta[i]["attribute.unit"])
        for i, name in metrics.items()
        if i < len(meta) and meta[i].get("attribute.unit")
    }
    sums = {}
    for row in rows:
        if row[where] is None:
            continue
        callpath = names[int(row[where])]
        for i, name in metrics.items():
            value = _number(row[i])
            if value is not None:
                total, count = sums.get((callpath, name), (0.0, 0))
                sums[(callpath, name)] = (total + value, count + 1)
    measurements = {key: total / count for key, (total, count) in sums.items()}
    top = {k: v for k, v in data.items() if not isinstance(v, list | dict)}
    return run_parameters(top, path, wanted), measurements, units


def _node_paths(nodes, path):
    """The call path of every node of a json-split tree."""
    names = []
    for index, node in enumerate(nodes):
        if not isinstance(node, dict) or "label" not in node:
            raise file_error(path, "a node has no label", where=f"nodes[{index}]")
        parent = node.get("parent")
        label = str(node["label"])
        names.append(label if parent is None else f"{names[int(parent)]}->{label}")
    return names


def hatchet_run(path, wanted=(), data=None):
    """Read one Hatchet (or Thicket) JSON file: ``graph``, ``dataframe`` and the
    run's metadata in ``metadata``.

    Returns
    -------
    parameters, measurements, units
        As :func:`caliper_run`; metrics are the ``dataframe``'s numeric columns
        (``time`` and ``time (inc)``...), averaged over its rows of one node.
    """
    data = load_json(path) if data is None else data
    graph, frame = data.get("graph"), data.get("dataframe")
    if not (isinstance(graph, list) and isinstance(frame, list)):
        raise file_error(path, "is not Hatchet JSON (no graph and dataframe)")
    parents, labels = {}, {}
    for tree in graph:
        for key, node in tree.items():
            labels[int(key)] = str(node.get("data", {}).get("name", key))
            for child in node.get("children", []):
                parents[int(child)] = int(key)
    paths = {}

    def callpath(node):
        if node not in paths:
            parent = parents.get(node)
            own = labels[node]
            paths[node] = own if parent is None else f"{callpath(parent)}->{own}"
        return paths[node]

    sums = {}
    for index, row in enumerate(frame):
        if "node" not in row or int(row["node"]) not in labels:
            raise file_error(
                path, "a row names no node of the graph", where=f"dataframe[{index}]"
            )
        name = callpath(int(row["node"]))
        for metric, value in row.items():
            number = _number(value) if metric not in ("node", "rank") else None
            if number is not None and not isinstance(value, bool):
                total, count = sums.get((name, metric), (0.0, 0))
                sums[(name, metric)] = (total + number, count + 1)
    measurements = {key: total / count for key, (total, count) in sums.items()}
    metadata = data.get("metadata") or {}
    if isinstance(metadata, list):  # Thicket: one metadata object per profile
        metadata = metadata[0] if metadata else {}
    return run_parameters(metadata, path, wanted), measurements, {}


def json_kind(data):
    """``"caliper-json"``, ``"hatchet-json"`` or None (another JSON document)."""
    if isinstance(data, dict) and "columns" in data and "data" in data:
        return "caliper-json"
    if isinstance(data, dict) and "graph" in data and "dataframe" in data:
        return "hatchet-json"
    return None


def json_run(path, wanted=(), data=None):
    """Read a Caliper or Hatchet JSON file, whichever it is."""
    data = load_json(path) if data is None else data
    kind = json_kind(data)
    if kind == "caliper-json":
        return json_split_run(path, wanted, data)
    if kind == "hatchet-json":
        return hatchet_run(path, wanted, data)
    raise file_error(
        path,
        "is neither Caliper json-split nor Hatchet JSON",
        allowed="json-split has columns, data and nodes; Hatchet JSON has graph and "
        "dataframe",
    )
