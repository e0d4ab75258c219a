"""Bring your own measurements: CSV/Parquet tables and Extra-P's input formats.

:func:`load_measurements` reads measurements that scaleprobe did not take and
returns them in the layout of a scaleprobe results Dataset, so that
:func:`~scaleprobe.models.make_features`, the models and the projections work on
them unchanged.

The parameter that counts processes becomes the ``ranks`` dimension (or ``nodes``
when it counts nodes); it is recognised by its name (``p``, ``np``, ``procs``,
``processes``, ``ranks``...; ``nodes``...) or named by ``ranks=`` / ``nodes=``. Other
parameters become dimensions of their own name, repetitions become ``run``,
callpaths (Extra-P regions) a ``callpath`` dimension, and every metric a data
variable.

Examples
--------
>>> import tempfile, pathlib
>>> text = '''PARAMETER p
... POINTS ( 4 ) ( 8 ) ( 16 )
... REGION main
... METRIC time
... DATA 8.3 8.0
... DATA 22.7 22.6
... DATA 65.8 64.7
... '''
>>> path = pathlib.Path(tempfile.mkdtemp()) / "input.txt"
>>> _ = path.write_text(text)
>>> ds = load_measurements(path, units="s")
>>> dict(ds.sizes), ds.attrs["format"]
({'ranks': 3, 'run': 2}, 'extrap-text')
>>> ds.time.sel(ranks=8).values.tolist(), ds.callpath.item()
([22.7, 22.6], 'main')
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .common import MeasurementFileError
from .extrap import read_extrap_json, read_extrap_jsonl, read_extrap_text
from .table import MODEL_DIMS, build_dataset, read_table

__all__ = [
    "MEASUREMENT_FORMATS",
    "MeasurementFileError",
    "load_measurements",
    "measurement_format",
]

#: Formats :func:`load_measurements` reads, by the file suffix that selects them.
MEASUREMENT_FORMATS = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "extrap-text",
    ".json": "extrap-json",
    ".jsonl": "extrap-jsonl",
}
_FORMATS = sorted(set(MEASUREMENT_FORMATS.values()))


def measurement_format(path):
    """Return the format :func:`load_measurements` would read ``path`` as, or None.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    str or None
        One of ``"csv"``, ``"parquet"``, ``"extrap-text"``, ``"extrap-json"``,
        ``"extrap-jsonl"``; None for other files (such as scaleprobe's own ``.zarr``
        and ``.nc`` results).

    Examples
    --------
    >>> measurement_format("runs/lulesh.jsonl")
    'extrap-jsonl'
    >>> measurement_format("results/sweep.zarr") is None
    True
    """
    return MEASUREMENT_FORMATS.get(Path(os.fspath(path)).suffix.lower())


def load_measurements(
    path,
    *,
    format=None,
    ranks=None,
    nodes=None,
    ppn=None,
    parameters=None,
    metrics=None,
    run=None,
    units=None,
    callpath=None,
    select=None,
    single_series=False,
):
    """Read measurements from a CSV/Parquet table or an Extra-P input file.

    How parameters, repetitions and callpaths become dimensions: see
    :mod:`scaleprobe.models.io.readers`.

    Parameters
    ----------
    path : str or path-like
        The file; its suffix selects the format (:data:`MEASUREMENT_FORMATS`): a
        table of one row per measurement (``.csv``, ``.parquet``) or Extra-P text,
        JSON (current or legacy layout) or JSON Lines (``.txt``, ``.json``, ``.jsonl``).
    format : str, default=None
        Override the suffix: one of the formats of :data:`MEASUREMENT_FORMATS`.
    ranks, nodes : str, default=None
        Name of the parameter (column) that counts MPI ranks, or nodes.
    ppn : float, default=None
        Ranks per node, when known (the ``ppn`` coordinate: ranks and nodes convert).
    parameters, metrics : list of str, default=None
        Tables only: the key and the measured columns. By default non-numeric
        columns and the columns named like a process count, ``ppn``, ``scale`` or
        ``bandwidth`` are keys, and every other numeric column is a metric; columns
        in neither list are ignored.
    run : str, default=None
        Tables only: the repetition column (default: one named ``run``,
        ``repetition``...; rows with equal keys are numbered otherwise).
    units : str or dict, default=None
        Units of the metrics (one for all, or by metric); headers may say ``time [s]``.
    callpath : str, default=None
        Keep only this callpath.
    select : dict, default=None
        Keep only these values of other dimensions, e.g. ``{"n": 5000}``; values
        may be given as strings.
    single_series : bool, default=False
        Refuse a result that still holds several series the models cannot tell
        apart (more than one callpath, or several values of a parameter that is
        not ``scale``, ``bandwidth`` or ``ppn``) and say what to select.

    Returns
    -------
    xarray.Dataset
        Dims ``ranks`` (or ``nodes``), the other parameters, ``callpath`` when the
        file names several, and ``run``; attrs ``source``, ``format``,
        ``source_sha256`` and ``process_parameter``.

    Raises
    ------
    MeasurementFileError
        (a ``ValueError``) when the file is malformed: says where, what was wrong
        and what is allowed.
    ImportError
        For Parquet files without pyarrow.

    See Also
    --------
    make_features : the feature frame the models are fitted on.
    """
    fmt = _format(path, format)
    columns = {"parameters": parameters, "metrics": metrics, "run": run}
    process = [name for name in (ranks, nodes) if name is not None]
    table = _read(path, fmt, columns, process)
    dataset = build_dataset(table, path, ranks=ranks, nodes=nodes, units=units)
    chosen = dict(select or {})
    if callpath is not None:
        chosen["callpath"] = callpath
    return _shaped(dataset, table.ignored, ppn, chosen, single_series)


def _shaped(dataset, ignored, ppn, chosen, single_series):
    """The Dataset with the columns the table ignored noted, the ``ppn`` given, one
    callpath squeezed, the values ``chosen`` kept and, for ``single_series``, the
    check that one series is left."""
    if ignored:
        dataset.attrs["ignored_columns"] = list(map(str, ignored))
    if ppn is not None:
        dataset = _with_ppn(dataset, ppn)
    if "callpath" in dataset.dims and dataset.sizes["callpath"] == 1:
        dataset = dataset.squeeze("callpath")
    dataset = _select(dataset, chosen)
    if single_series:
        _check_single_series(dataset)
    return dataset


def _format(path, format):
    """The format to read ``path`` as (given, or by its suffix), once it exists."""
    fmt = format if format is not None else measurement_format(path)
    if fmt not in _FORMATS:
        raise ValueError(
            f"cannot tell the format of {os.fspath(path)!r}"
            + (f" (format={format!r})" if format is not None else "")
            + f"; allowed suffixes: {', '.join(MEASUREMENT_FORMATS)}; or pass "
            f"format= one of {_FORMATS}"
        )
    if not Path(os.fspath(path)).is_file():
        raise FileNotFoundError(f"no measurement file at {os.fspath(path)!r}")
    return fmt


def _read(path, fmt, columns, process):
    """The file's :class:`~scaleprobe.models.io.table.MeasurementTable`; the roles
    of a table's columns (``parameters``, ``metrics``, ``run``) are given for CSV
    and Parquet only."""
    if fmt in ("csv", "parquet"):
        return read_table(path, fmt, process=process, **columns)
    if any(value is not None for value in columns.values()):
        raise ValueError(
            "parameters=, metrics= and run= apply to CSV and Parquet tables; "
            f"{fmt} files name their parameters and metrics themselves"
        )
    reader = {
        "extrap-text": read_extrap_text,
        "extrap-json": read_extrap_json,
        "extrap-jsonl": read_extrap_jsonl,
    }[fmt]
    return reader(path)


def _with_ppn(dataset, ppn):
    try:
        value = float(ppn)
    except (TypeError, ValueError):
        value = float("nan")
    if not value > 0:
        raise ValueError(
            f"ppn must be a positive number of ranks per node; got {ppn!r}"
        )
    if "ppn" in dataset.variables:
        raise ValueError("the file has a ppn parameter already; do not pass ppn=")
    value = int(value) if value.is_integer() else value
    return dataset.assign_coords(
        ppn=((), value, {"units": "1", "long_name": "ranks per node"})
    )


def _select(dataset, chosen):
    for name, wanted in chosen.items():
        if name not in dataset.coords:
            raise ValueError(
                f"cannot select {name}={wanted!r}: {dataset.attrs['source']} has no "
                f"{name!r}; its dimensions are {list(dataset.dims)}"
            )
        values = dataset[name].values.reshape(-1)
        if np.issubdtype(values.dtype, np.number):
            try:
                key = float(wanted)
            except (TypeError, ValueError):
                key = None
            match = [v for v in values if key is not None and float(v) == key]
        else:
            match = [v for v in values if str(v) == str(wanted)]
        if not match:
            shown = ", ".join(map(str, values[:20])) + (
                " ..." if values.size > 20 else ""
            )
            raise ValueError(
                f"{dataset.attrs['source']} has no {name} {wanted!r}; it has: {shown}"
            )
        if name in dataset.dims:
            dataset = dataset.sel({name: match[0]})
    return dataset


def _check_single_series(dataset):
    several = {
        d: dataset.sizes[d]
        for d in dataset.dims
        if d not in MODEL_DIMS and dataset.sizes[d] > 1
    }
    if several:
        examples = ", ".join(
            f"{d} ({n} values, e.g. {dataset[d].values[0]!s})"
            for d, n in several.items()
        )
        hint = " ".join(
            "--callpath NAME" if d == "callpath" else f"--select {d}=VALUE"
            for d in several
        )
        raise ValueError(
            f"{dataset.attrs['source']} holds several series the models cannot tell "
            f"apart: {examples}; choose one ({hint})"
        )
