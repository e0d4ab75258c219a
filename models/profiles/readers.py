"""Read a profile, whatever tool wrote it, into one :class:`ProfileTable`.

Formats (:data:`PROFILE_FORMATS`), chosen by what ``path`` is:

- a folder of ``.cali`` files, of Caliper/Hatchet ``.json`` files, or of Score-P
  experiment folders holding ``.cubex`` files: one run per file
  (:mod:`~scaleprobe.models.profiles.caliper`, :mod:`~scaleprobe.models.profiles.cube`);
- one such file (a single run);
- Extra-P's text (``.txt``), JSON (``.json``) and JSON Lines (``.jsonl``) files and
  CSV or Parquet tables, as :func:`~scaleprobe.models.load_measurements` reads them.

The parameter that counts processes is the table's axis (``ranks`` or ``nodes``):
named by ``ranks=``/``nodes=``, else recognised by its name (or a run's metadata);
a file whose only parameter is not named like a process count runs over that
parameter.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..io.common import file_error
from ..io.table import file_digest
from .caliper import caliper_run, json_kind, json_run, load_json
from .cube import cube_files, cube_run, folder_parameters
from .table import ProfileTable

__all__ = ["PROFILE_FORMATS", "profile_format", "read_profile"]

#: Formats :func:`read_profile` reads, with what selects them.
PROFILE_FORMATS = {
    "extrap-text": ".txt",
    "extrap-json": ".json (Extra-P's layout)",
    "extrap-jsonl": ".jsonl",
    "csv": ".csv",
    "parquet": ".parquet, .pq",
    "caliper": ".cali, or a folder of them",
    "caliper-json": ".json (Caliper json-split), or a folder of them",
    "hatchet-json": ".json (Hatchet or Thicket), or a folder of them",
    "cube": "a folder of Score-P experiment folders with .cubex files",
}
_SUFFIXES = {
    ".txt": "extrap-text",
    ".jsonl": "extrap-jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".cali": "caliper",
    ".cubex": "cube",
}


def profile_format(path):
    """The format :func:`read_profile` reads ``path`` as, or None.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    str or None
        A key of :data:`PROFILE_FORMATS`; for ``.json``, ``"json"`` until the
        document says which it is.

    Examples
    --------
    >>> profile_format("runs/relearn.txt")
    'extrap-text'
    >>> profile_format("results/sweep.zarr") is None
    True
    """
    path = Path(os.fspath(path))
    if path.is_dir():
        if any(path.glob("*/[!.]*.cubex")):
            return "cube"
        if any(path.glob("*.cali")):
            return "caliper"
        if any(path.glob("*.json")):
            return "json"
        return None
    suffix = path.suffix.lower()
    return "json" if suffix == ".json" else _SUFFIXES.get(suffix)


def read_profile(
    path,
    *,
    ranks=None,
    nodes=None,
    ppn=None,
    units=None,
    metrics=None,
    parameters=None,
    aggregate="mean",
):
    """Read a profile (Caliper, Hatchet, CUBE, Extra-P or a table) as a tidy table.

    Parameters
    ----------
    path : str or path-like
        A file or a folder of runs (see :mod:`scaleprobe.models.profiles.readers`).
    ranks, nodes : str, default=None
        The parameter counting MPI ranks, or nodes (default: by name).
    ppn : float, default=None
        Ranks per node, when known: projections then convert nodes and ranks.
    units : str or dict, default=None
        Units of the metrics (one for all, or by metric); files that state units
        keep theirs unless given here.
    metrics : list of str, default=None
        Keep only these metrics.
    parameters : list of str, default=None
        Runs' metadata (Caliper, Hatchet) to keep as parameters besides the
        process count, e.g. ``["problem_size"]``; tables: the key columns.
    aggregate : {"mean", "sum", "max"}, default="mean"
        CUBE: how the values of a run's processes become one.

    Returns
    -------
    ProfileTable

    Raises
    ------
    MeasurementFileError
        A file that cannot be read, with where and what is allowed.
    FileNotFoundError
        Nothing at ``path``.
    """
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"no profile at {os.fspath(path)!r}")
    fmt = profile_format(path)
    if fmt is None:
        raise ValueError(
            f"cannot tell the format of {os.fspath(path)!r}; scaleprobe reads: "
            + "; ".join(f"{k} ({v})" for k, v in PROFILE_FORMATS.items())
        )
    axis = {"ranks": ranks, "nodes": nodes}
    if fmt in ("caliper", "cube", "json") and (path.is_dir() or fmt != "json"):
        table = _runs(path, fmt, axis, parameters or (), aggregate)
    elif fmt == "json" and json_kind(load_json(path)) is not None:
        table = _runs(path, "json", axis, parameters or (), aggregate)
    elif fmt in ("csv", "parquet"):
        table = _table(path, fmt, axis, parameters)
    else:
        from ..io.extrap import extrap_rows

        names, rows, fmt = extrap_rows(path, "extrap-json" if fmt == "json" else fmt)
        source = {
            "path": str(path.resolve()),
            "format": fmt,
            "sha256": file_digest(path),
        }
        table = ProfileTable.from_rows(names, rows, source=source, **axis)
    return _finish(table, units, metrics, ppn)


def _finish(table, units, metrics, ppn):
    """The table with the units given, the metrics kept and the ranks per node."""
    if isinstance(units, str):
        table.units.update(dict.fromkeys(table.metrics, units))
    elif units:
        unknown = sorted(set(units) - set(table.metrics))
        if unknown:
            raise ValueError(
                f"units given for {unknown}, which are not metrics of "
                f"{table.source['path']}; its metrics are {table.metrics}"
            )
        table.units.update(units)
    if metrics:
        missing = [m for m in metrics if m not in table.metrics]
        if missing:
            raise ValueError(
                f"{table.source['path']} has no metric {missing[0]!r}; its metrics "
                f"are {', '.join(table.metrics)}"
            )
        keep = [m in metrics for m in table.columns["metric"]]
        table.columns = {k: v[keep] for k, v in table.columns.items()}
    if ppn is not None:
        value = float(ppn)
        if not value > 0:
            raise ValueError(
                f"ppn must be a positive number of ranks per node; got {ppn!r}"
            )
        if "ppn" in table.parameters:
            raise ValueError(
                "the profile has a ppn parameter already; do not pass ppn="
            )
        table.source["ppn"] = value
    return table


def _source(path, fmt):
    """Where a profile came from: its absolute path, format and SHA-256."""
    path = Path(path)
    return {"path": str(path.resolve()), "format": fmt, "sha256": file_digest(path)}


def _run_files(path, fmt):
    """The run files of a folder (or the one file) and the reader of each."""
    if fmt == "cube":
        files = cube_files(path) if path.is_dir() else [path]
    elif path.is_dir():
        files = sorted(path.glob("*.cali" if fmt == "caliper" else "*.json"))
    else:
        files = [path]
    return files


def _read_run(file, fmt, wanted, aggregate):
    """One run: its parameters, repetition, measurements and units."""
    if fmt == "cube":
        parameters, repetition = folder_parameters(file.parent.name)
        measurements, units = cube_run(file, aggregate)
        return parameters, repetition, measurements, units
    reader = caliper_run if fmt == "caliper" else json_run
    parameters, measurements, units = reader(file, wanted)
    return parameters, None, measurements, units


def _runs(path, fmt, axis, wanted, aggregate):
    """A table of a set of runs, one file each."""
    runs = []
    units = {}
    for file in _run_files(path, fmt):
        parameters, repetition, measurements, found = _read_run(
            file, fmt, wanted, aggregate
        )
        units.update(found)
        runs.append((parameters, repetition, measurements))
    names = _varying(runs, path, fmt)
    rows = []
    for parameters, repetition, measurements in runs:
        point = tuple(parameters[n] for n in names)
        for (callpath, metric), value in measurements.items():
            rows.append((*point, callpath, metric, repetition, value))
    if any(repetition is None for _, repetition, _ in runs):
        rows = [(*r[:-2], None, r[-1]) for r in rows]
    kind = "cube" if fmt == "cube" else ("caliper" if fmt == "caliper" else "json")
    source = {"path": str(path.resolve()), "format": kind, "runs": len(runs)}
    if kind == "json":
        source["format"] = json_kind(load_json(_run_files(path, fmt)[0]))
    table = ProfileTable.from_rows(names, rows, source=source, units=units, **axis)
    if "nodes" in names and "ranks" in names:
        table.notes.append("runs record ranks and nodes: the series run over ranks")
    return table


def _varying(runs, path, fmt):
    """The parameters of a set of runs: those that vary (ranks and nodes always,
    when recorded), in the first run's order."""
    first = runs[0][0]
    for parameters, _, _ in runs[1:]:
        if set(parameters) != set(first):
            raise file_error(
                path,
                f"runs name different parameters: {sorted(first)} and "
                f"{sorted(parameters)}",
                allowed="every run of a profile records the same parameters",
            )
    names = [
        n
        for n in first
        if n in ("ranks", "nodes") or len({p[n] for p, _, _ in runs}) > 1
    ]
    if fmt == "cube" and not names:
        raise file_error(
            path,
            "no parameter varies between the experiment folders",
            allowed="name them <prefix>.<name><value>....r<repetition>, e.g. "
            "app.p64.r1",
        )
    if "ranks" in names and "nodes" in names:
        ranks = {p["ranks"] for p, _, _ in runs}
        if len(ranks) > 1:
            names.remove("nodes")
    return names


#: Text columns at most, beyond which every text column is taken as a key.
_MAX_LABELS = 10


def _keys(frame, parameters, labels):
    """The text columns that tell series apart; the others are notes on each
    measurement (which confidence interval was smallest...).

    Of the subsets of ``labels`` that, with the numeric parameters, tell apart as
    many measurement points as all of them, the one that makes the fewest series
    (each measured at the most counts); ``callpath`` is always a key.
    """
    if len(labels) > _MAX_LABELS or len(labels) < 2:
        return labels
    from itertools import combinations

    fixed = [c for c in parameters if c in frame.columns]
    whole = len(frame.groupby([*fixed, *labels], dropna=False).size())
    forced = [label for label in labels if label == "callpath"]
    free = [label for label in labels if label != "callpath"]
    best = (len(frame.groupby(labels, dropna=False).size()), labels)
    for size in range(len(free)):
        for subset in combinations(free, size):
            keys = [*forced, *subset]
            points = len(frame.groupby([*fixed, *keys], dropna=False).size())
            if keys and points == whole:
                series = len(frame.groupby(keys, dropna=False).size())
                best = min(best, (series, keys), key=lambda item: item[0])
    return [label for label in labels if label in best[1]]


def _table(path, fmt, axis, parameters):
    """A table of a CSV or Parquet file (read as
    :func:`~scaleprobe.models.load_measurements` reads it)."""
    from ..io.table import read_table

    process = [name for name in axis.values() if name is not None]
    table = read_table(path, fmt, parameters=parameters, process=process)
    frame = table.frame
    labels = list(table.labels)
    if parameters is None:
        labels = _keys(frame, table.parameters, labels)
    rows = []
    for metric in table.metrics:
        values = frame[metric].to_numpy(dtype=float)
        points = frame[table.parameters].to_numpy(dtype=float)
        texts = (
            [
                " ".join(
                    f"{label}={frame[label].iloc[i]}"
                    for label in labels
                    if label != "callpath"
                )
                for i in range(len(frame))
            ]
            if labels
            else [""] * len(frame)
        )
        calls = (
            frame["callpath"].astype(str).tolist()
            if "callpath" in labels
            else [""] * len(frame)
        )
        paths = [
            " ".join(p for p in pair if p) for pair in zip(calls, texts, strict=True)
        ]
        # a call path with no value of this metric was not measured in it; one with
        # some keeps its missing cells, so the fit says which it left out
        measured = {
            path for path, value in zip(paths, values, strict=True) if value == value
        }
        for i, value in enumerate(values):
            if paths[i] in measured:
                rows.append(
                    (*points[i], paths[i], metric, int(frame["run"].iloc[i]), value)
                )
    source = {
        "path": str(Path(path).resolve()),
        "format": fmt,
        "sha256": file_digest(path),
    }
    out = ProfileTable.from_rows(
        table.parameters, rows, source=source, units=table.units, **axis
    )
    return out
