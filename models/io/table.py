"""One labelled Dataset from a flat table of measurements, whatever file it came from.

Every reader of :func:`scaleprobe.models.load_measurements` turns its file into a
:class:`MeasurementTable`: one row per measured value, key columns (parameters,
labels such as the callpath, the repetition ``run``) and one column per metric. This
module checks the keys and builds the dense Dataset, and reads the CSV and Parquet
tables (:func:`read_table`).
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from .common import (
    NODE_NAMES,
    RANK_NAMES,
    RUN_NAMES,
    MeasurementFileError,  # noqa: F401 (its historical home)
    file_error,
)

#: Dimensions the models understand besides the process count.
MODEL_DIMS = ("nodes", "ranks", "ppn", "bandwidth", "scale", "run", "trial")
# A dense cube this much larger than the table means the keys are not a grid.
_MAX_FILL = 1000
# Labels (callpath, kernel...) must nearly cross; a label column that is really a
# per-row annotation multiplies the cells by this much or more.
_MAX_LABEL_FILL = 4


@dataclass
class MeasurementTable:
    """Measurements of one file as rows, before they become a Dataset.

    Attributes
    ----------
    frame : pandas.DataFrame
        Key columns ``parameters + labels + ["run"]`` and one column per metric.
    parameters : list of str
        Numeric sweep parameters, in the file's order.
    labels : list of str
        Non-numeric keys (``callpath``, a CSV's ``kernel`` column...).
    metrics : list of str
        Measured quantities, the future data variables.
    format : str
        Name of the file format, recorded as provenance.
    units : dict
        Units the file itself states, by metric.
    ignored : list of str
        Columns of a table that are neither keys nor metrics.
    """

    frame: pd.DataFrame
    parameters: list
    labels: list
    metrics: list
    format: str
    units: dict = field(default_factory=dict)
    ignored: list = field(default_factory=list)


def process_parameter(table, path, *, ranks=None, nodes=None):
    """Choose the parameter that counts processes and say whether it counts ranks.

    Returns
    -------
    (name, dim) : (str, {"ranks", "nodes"})
    """
    if ranks is not None and nodes is not None:
        raise ValueError(
            f"pass ranks= or nodes=, not both; got ranks={ranks!r}, nodes={nodes!r}"
        )
    chosen = ranks if ranks is not None else nodes
    if chosen is not None:
        if chosen not in table.parameters:
            raise file_error(
                path,
                f"has no numeric parameter {chosen!r}",
                allowed=f"its parameters are {table.parameters}",
            )
        return chosen, "ranks" if ranks is not None else "nodes"
    found = [
        (name, dim)
        for name in table.parameters
        for dim, names in (("ranks", RANK_NAMES), ("nodes", NODE_NAMES))
        if name.lower() in names
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise file_error(
            path,
            f"no parameter is recognised as a process count among {table.parameters}",
            allowed="pass ranks=NAME for MPI ranks or nodes=NAME for nodes "
            "(command line: --ranks-from NAME or --nodes-from NAME)",
        )
    raise file_error(
        path,
        f"several parameters could count processes: {[n for n, _ in found]}",
        allowed="pass ranks=NAME or nodes=NAME to choose one",
    )


def _counts(values, name, dim, path):
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(numbers) & (numbers > 0) & (numbers == np.round(numbers)))
    if bad.any():
        value = values.iloc[int(np.argmax(bad))]
        value = value.item() if hasattr(value, "item") else value
        raise file_error(
            path,
            f"parameter {name!r} ({dim}) has the value {value!r}",
            allowed=f"{dim} counts are whole numbers >= 1",
        )
    return numbers.astype(np.int64)


def _levels(column):
    unique = pd.unique(column)
    if pd.api.types.is_numeric_dtype(column):
        unique = np.sort(unique)
        if np.all(np.isfinite(unique)) and np.all(unique == np.round(unique)):
            return unique.astype(np.int64)
        return unique
    return np.asarray(unique, dtype=object)


def file_digest(path):
    """The SHA-256 of a file's bytes, in hexadecimal, read a mebibyte at a time.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    str
    """
    sha = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def _data_attrs(metric, units):
    attrs = {"long_name": metric}
    if metric in units:
        attrs["units"] = str(units[metric])
    else:
        attrs["long_name"] = f"{metric} (units not stated in the file)"
    return attrs


def build_dataset(table, path, *, ranks=None, nodes=None, units=None):
    """Turn a :class:`MeasurementTable` into a scaleprobe-layout Dataset.

    The process-count parameter becomes the ``ranks`` (or ``nodes``) dimension,
    other parameters and labels keep their names, repetitions are ``run``.
    """
    name, dim = process_parameter(table, path, ranks=ranks, nodes=nodes)
    frame = table.frame.copy()
    frame[name] = _counts(frame[name], name, dim, path)
    others = [p for p in table.parameters if p != name]
    clash = [k for k in [*others, *table.labels, *table.metrics] if k == dim]
    if clash:
        raise file_error(
            path,
            f"the process count {name!r} would become {dim!r}, a name the file "
            "already uses",
            allowed=f"rename the other {dim!r} column or choose another parameter",
        )
    frame = frame.rename(columns={name: dim})
    dims = [dim, *others, *table.labels, "run"]
    coords = {d: _levels(frame[d]) for d in dims}
    shape = tuple(len(coords[d]) for d in dims)
    size = math.prod(shape)
    if size > _MAX_FILL * max(len(frame), 1):
        raise file_error(
            path,
            f"the keys {dims[:-1]} do not form a grid ({size} cells for "
            f"{len(frame)} rows)",
            allowed="a column that is not a sweep parameter is probably taken as "
            "one; pass parameters=[...] and metrics=[...]",
        )
    if len(table.labels) > 1:
        present = len(frame[table.labels].drop_duplicates())
        crossed = math.prod(len(coords[d]) for d in table.labels)
        if crossed > _MAX_LABEL_FILL * present:
            raise file_error(
                path,
                f"the label columns {table.labels} do not cross ({present} "
                f"combinations of {crossed})",
                allowed="a column that annotates rows is probably taken as a "
                "parameter; pass parameters=[...] and metrics=[...]",
            )
    flat = _cells(frame, dims, coords, path)
    stated = _stated_units(table, units, path)
    data_vars = {}
    for metric in table.metrics:
        cube = np.full(size, np.nan)
        cube[flat] = frame[metric].to_numpy(dtype=float)
        data_vars[metric] = (dims, cube.reshape(shape), _data_attrs(metric, stated))
    dataset = xr.Dataset(data_vars, coords=coords)
    dataset[dim].attrs.update(
        {"units": "1", "long_name": f"{dim} (file parameter {name!r})"}
    )
    dataset["run"].attrs.update({"units": "1", "long_name": "repetition"})
    dataset.attrs.update(
        {
            "source": os.path.abspath(os.fspath(path)),
            "format": table.format,
            "source_sha256": file_digest(path),
            "process_parameter": name,
        }
    )
    return dataset


def _cells(frame, dims, coords, path):
    """The flat index of every row's cell in the grid of ``coords``; two rows in one
    cell are refused."""
    shape = tuple(len(coords[d]) for d in dims)
    codes = [pd.Index(coords[d]).get_indexer(frame[d]) for d in dims]
    if any((c < 0).any() for c in codes):  # every key is one of its own levels
        raise AssertionError("measurement keys do not match their own levels")
    size = math.prod(shape)
    flat = np.ravel_multi_index(codes, shape) if size else np.array([], dtype=int)
    seen, first = np.unique(flat, return_index=True)
    if seen.size != flat.size:
        row = int(np.setdiff1d(np.arange(flat.size), first)[0])
        raise file_error(
            path,
            "two rows have the same keys "
            + ", ".join(f"{d}={frame[d].iloc[row]!r}" for d in dims),
            allowed="each measurement needs its own run (repetition) index",
        )
    return flat


def _stated_units(table, units, path):
    """The units of the metrics: those the file states, overridden by ``units``
    (one for every metric, or by metric)."""
    stated = dict(table.units)
    if isinstance(units, str):
        stated.update(dict.fromkeys(table.metrics, units))
    elif units is not None:
        unknown = sorted(set(units) - set(table.metrics))
        if unknown:
            raise ValueError(
                f"units given for {unknown}, which are not metrics of {path}; its "
                f"metrics are {table.metrics}"
            )
        stated.update(units)
    return stated


# ----------------------------------------------------------- CSV and Parquet
# Tables with one row per measurement.
#
# Columns are sorted into roles: the process count and other sweep parameters (keys),
# labels such as a callpath or a kernel name (non-numeric keys), an optional
# repetition column, and metrics (numeric measured values). Headers may state a unit
# as ``time [s]`` or ``time (s)``.


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
    frame, units, first_line = _read_frame(path, fmt)
    columns = list(frame.columns)
    keys, metrics, run = _roles(frame, path, (parameters, metrics, run), process)
    out, numeric_keys, labels = _keys(frame, keys, path, first_line)
    if run is not None:
        runs = _numeric(frame, run, path, first_line)
        if runs.isna().any() or not np.all(runs == np.round(runs)):
            raise file_error(path, f"run column {run!r} holds non-integers")
        out["run"] = runs.astype(np.int64)
    else:
        out["run"] = out.groupby(keys, sort=False).cumcount() if keys else 0
    for metric in metrics:
        out[metric] = _numeric(frame, metric, path, first_line)
    return MeasurementTable(
        frame=out.reset_index(drop=True),
        parameters=numeric_keys,
        labels=labels,
        metrics=list(metrics),
        format=fmt,
        units={m: u for m, u in units.items() if m in metrics},
        ignored=[c for c in columns if c not in {*keys, *metrics, run}],
    )


def _read_frame(path, fmt):
    """The file's rows with units split off the headers, and its first data line."""
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
    return frame, units, first_line


def _roles(frame, path, given, process):
    """The key columns (process count first), the metrics and the run column: as
    given, else by the columns' names and contents."""
    parameters, metrics, run = given
    columns = list(frame.columns)
    for names, what in ((parameters, "parameters"), (metrics, "metrics")):
        _check_names(names or [], columns, what, path)
    _check_names(list(process), columns, "the process count", path)
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
        text = [c for c in keys if not numeric[c]]
        shown = "; ".join(
            f"{c!r} is read as a label, most of its values are not numbers "
            f"({frame[c].dropna().iloc[0]!r})"
            for c in text
        )
        raise file_error(
            path,
            "has no metric column" + (f": {shown}" if shown else ""),
            allowed=f"a column of numbers besides the parameters, of {columns}; in "
            "Python, metrics=[...] names them",
        )
    return keys, metrics, run


def _keys(frame, keys, path, first_line):
    """The key columns, numbers or labels (few distinct values), none empty."""
    out = pd.DataFrame(index=frame.index)
    numeric_keys, labels = [], []
    for key in keys:
        if _mostly_numbers(frame[key]):
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
    return out, numeric_keys, labels
