"""CSV and Parquet tables with one row per measurement.

Columns are sorted into roles: the process count and other sweep parameters (keys),
labels such as a callpath or a kernel name (non-numeric keys), an optional
repetition column, and metrics (numeric measured values). Headers may state a unit
as ``time [s]`` or ``time (s)``.
"""

from __future__ import annotations

import csv
import re

import numpy as np
import pandas as pd

from .table import NODE_NAMES, RANK_NAMES, MeasurementTable, file_error

__all__ = ["read_table"]

#: Column names read as the repetition index, compared case-insensitively.
RUN_NAMES = ("run", "repetition", "rep", "repeat")
#: Numeric columns taken as sweep parameters (keys) rather than metrics by default.
_SWEEP_KEYS = ("ppn", "scale", "bandwidth")
_UNIT = re.compile(r"^\s*(?P<name>.*?)\s*(?:\[(?P<a>[^\]]+)\]|\((?P<b>[^)]+)\))\s*$")


def _open(path, fmt):
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ImportError(
                f"reading {path} needs pyarrow, which is not installed; install it "
                "with `pip install pyarrow` (or `pip install scaleprobe[parquet]`), "
                "or save the table as CSV"
            ) from None
        return pd.read_parquet(path), 0
    with open(path, encoding="utf-8", newline="") as stream:
        header = next(csv.reader(stream), [])
    repeated = sorted({c for c in header if header.count(c) > 1})
    if repeated:
        raise file_error(path, f"column {repeated[0]!r} appears twice", where="line 1")
    try:
        frame = pd.read_csv(path, skip_blank_lines=False)
    except pd.errors.ParserError as error:
        raise file_error(path, f"is not a valid CSV table: {error}") from None
    except pd.errors.EmptyDataError:
        raise file_error(
            path, "is empty", allowed="a header line and data rows"
        ) from None
    # With blank lines kept, row i is on line i + 2 (line 1 is the header).
    return frame.dropna(how="all"), 2


def _split_units(frame):
    names, units = {}, {}
    for column in frame.columns:
        match = _UNIT.match(str(column))
        if match and match["name"]:
            names[column] = match["name"]
            units[match["name"]] = match["a"] or match["b"]
        else:
            names[column] = str(column).strip()
    return frame.rename(columns=names), units


def _numeric(frame, column, path, first_line):
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = values.isna() & frame[column].notna()
    if bad.any():
        index = bad.to_numpy().nonzero()[0][0]
        where = (
            f"line {frame.index[index] + first_line}"
            if first_line
            else f"row {index + 1}"
        )
        raise file_error(
            path,
            f"column {column!r} holds {frame[column].iloc[index]!r}",
            where=where,
            allowed="metrics and parameters listed as numeric hold numbers "
            "(or nothing, for a missing value)",
        )
    return values


def _mostly_numbers(column):
    """Numbers in most filled cells: a numeric column, perhaps with a typo to report."""
    if pd.api.types.is_numeric_dtype(column):
        return True
    filled = int(column.notna().sum())
    parsed = int(pd.to_numeric(column, errors="coerce").notna().sum())
    return filled > 0 and 2 * parsed > filled


def _check_names(names, columns, what, path):
    unknown = [n for n in names if n not in columns]
    if unknown:
        raise file_error(
            path,
            f"no column {unknown[0]!r} for {what}",
            allowed=f"its columns are {list(columns)}",
        )


def read_table(path, fmt, *, parameters=None, metrics=None, run=None, process=()):
    """Read a CSV or Parquet table into a :class:`MeasurementTable`.

    Parameters
    ----------
    path : str or path-like
    fmt : {"csv", "parquet"}
    parameters : list of str, default=None
        Key columns besides the process count. Default: every non-numeric column.
    metrics : list of str, default=None
        Measured columns. Default: every other numeric column.
    run : str, default=None
        Repetition column. Default: a column named like ``run`` or ``repetition``;
        without one, rows with equal keys are numbered as repetitions.
    process : sequence of str
        Column(s) the caller takes as the process count.
    """
    raw, first_line = _open(path, fmt)
    if raw.empty:
        raise file_error(
            path, "has no data rows", allowed="a header line and data rows"
        )
    frame, units = _split_units(raw)
    if frame.columns.duplicated().any():
        raise file_error(
            path,
            f"column {frame.columns[frame.columns.duplicated()][0]!r} appears twice",
        )
    columns = list(frame.columns)
    for names, what in ((parameters, "parameters"), (metrics, "metrics")):
        _check_names(names or [], columns, what, path)
    if run is not None:
        _check_names([run], columns, "run", path)
    else:
        found = [c for c in columns if c.lower() in RUN_NAMES]
        run = found[0] if len(found) == 1 else None
    numeric = {c: _mostly_numbers(frame[c]) for c in columns}
    if not process:
        process = [c for c in columns if c.lower() in (*RANK_NAMES, *NODE_NAMES)]
    claimed = {run, *(parameters or []), *(metrics or [])} - {None}
    if parameters is None:
        parameters = [
            c
            for c in columns
            if c not in claimed
            and (not numeric[c] or c in process or c.lower() in _SWEEP_KEYS)
        ]
    keys = [p for p in process if p not in parameters] + list(parameters)
    if metrics is None:
        metrics = [c for c in columns if numeric[c] and c not in {*claimed, *keys}]
    overlap = set(keys) & set(metrics)
    if overlap:
        raise file_error(
            path, f"column {sorted(overlap)[0]!r} is both a parameter and a metric"
        )
    if not metrics:
        raise file_error(
            path,
            "has no metric column",
            allowed=f"name the measured columns with metrics=[...]; columns are "
            f"{columns}",
        )
    out = pd.DataFrame(index=frame.index)
    numeric_keys, labels = [], []
    for key in keys:
        if numeric[key]:
            out[key] = _numeric(frame, key, path, first_line)
            numeric_keys.append(key)
        else:
            levels = frame[key].nunique()
            if levels > max(20, len(frame) // 2):
                raise file_error(
                    path,
                    f"column {key!r} has {levels} different values in {len(frame)} "
                    "rows, too many for a sweep parameter",
                    allowed="pass parameters=[...] and metrics=[...] to say which "
                    "columns are keys and which are measured",
                )
            out[key] = frame[key].astype(str)
            labels.append(key)
        missing = frame[key].isna()
        if missing.any():
            raise file_error(
                path,
                f"key column {key!r} is empty",
                where=f"line {frame.index[missing.to_numpy()][0] + first_line}"
                if first_line
                else None,
                allowed="every row names its parameters",
            )
    if run is not None:
        runs = _numeric(frame, run, path, first_line)
        if runs.isna().any() or not np.all(runs == np.round(runs)):
            raise file_error(path, f"run column {run!r} holds non-integers")
        out["run"] = runs.astype(np.int64)
    else:
        out["run"] = out.groupby(keys, sort=False).cumcount() if keys else 0
    for metric in metrics:
        out[metric] = _numeric(frame, metric, path, first_line)
    ignored = [c for c in columns if c not in {*keys, *metrics, run}]
    table = MeasurementTable(
        frame=out.reset_index(drop=True),
        parameters=numeric_keys,
        labels=labels,
        metrics=list(metrics),
        format=fmt,
        units={m: u for m, u in units.items() if m in metrics},
    )
    table.ignored = ignored
    return table
