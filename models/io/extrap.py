"""Extra-P's input formats: text, JSON (current and legacy) and JSON Lines.

The text format, as documented by Extra-P (docs/file-formats.md): ``PARAMETER``
lines name the parameters (several lines or several names per line), ``POINTS``
lines list the measurement points in order (``( 4 10 ) ( 8 10 )``, parentheses
optional with one parameter), ``METRIC`` and ``REGION`` name the metric and callpath
of the data that follow, and each ``DATA`` line holds the repetitions measured at
the next point. The ``DATA`` lines after a ``REGION`` or ``METRIC`` line follow the
order of the points and must cover every point. Lines starting with ``#`` are
comments.
"""

from __future__ import annotations

import json
import numbers
import re

from .common import file_error

__all__ = [
    "extrap_rows",
    "read_extrap_json",
    "read_extrap_jsonl",
    "read_extrap_text",
]


_FIELDS = ("PARAMETER", "POINTS", "METRIC", "REGION", "DATA")
_ALLOWED = "a line is empty, a # comment, or starts with " + ", ".join(_FIELDS)
_SPACE = re.compile(r"\s+")
#: Name of the metric of DATA lines that no METRIC line names.
UNNAMED_METRIC = "value"


def _number(token, path, where, what):
    try:
        return float(token)
    except ValueError:
        raise file_error(
            path, f"{what} {token!r} is not a number", where=where
        ) from None


def _points(text, n_parameters, path, where):
    """Split a POINTS value into points of ``n_parameters`` coordinates."""
    if "(" not in text and ")" not in text:
        if n_parameters != 1:
            raise file_error(
                path,
                f"POINTS without parentheses, but there are {n_parameters} parameters",
                where=where,
                allowed="write each point as ( c1 c2 ... ) with one coordinate per "
                "parameter",
            )
        return [[_number(t, path, where, "coordinate")] for t in text.split()]
    points, depth, current = [], 0, []
    for token in re.findall(r"\(|\)|[^\s()]+", text):
        if token == "(":
            depth += 1
            if depth > 2:
                raise file_error(path, "parentheses nested too deep", where=where)
        elif token == ")":
            depth -= 1
            if depth < 0:
                raise file_error(path, "unbalanced ')'", where=where)
            if depth == 0:
                points.append(current)
                current = []
        elif depth == 0:
            raise file_error(
                path,
                f"coordinate {token!r} outside parentheses",
                where=where,
                allowed="write each point as ( c1 c2 ... )",
            )
        else:
            current.append(_number(token, path, where, "coordinate"))
    if depth != 0:
        raise file_error(path, "unbalanced '('", where=where)
    for point in points:
        if len(point) != n_parameters:
            raise file_error(
                path,
                f"point ({' '.join(f'{c:g}' for c in point)}) has {len(point)} "
                f"coordinates",
                where=where,
                allowed=f"one per parameter: {n_parameters}",
            )
    return points


class _Parser:
    def __init__(self, path):
        self.path = path
        self.parameters, self.points, self.rows = [], [], []
        self.metric, self.region = None, None
        self.block_line, self.done = None, 0
        self.blocks = {}

    def where(self, number):
        return f"line {number}"

    def close_block(self):
        if 0 < self.done < len(self.points):
            raise file_error(
                self.path,
                f"{self.done} DATA lines for {len(self.points)} POINTS",
                where=f"block starting {self.where(self.block_line)} "
                f"(REGION {self.region!r}, METRIC {self.metric!r})",
                allowed="every REGION/METRIC block has one DATA line per point",
            )

    def start_block(self, number):
        self.close_block()
        self.block_line, self.done = number, 0

    def line(self, number, raw):
        text = _SPACE.sub(" ", raw).strip()
        if not text or raw.lstrip().startswith("#"):
            return
        keyword, _, value = text.partition(" ")
        value = value.strip()
        where = self.where(number)
        if keyword == "PARAMETER":
            if self.points:
                raise file_error(
                    self.path,
                    "PARAMETER after POINTS",
                    where=where,
                    allowed="name every parameter before the first POINTS line",
                )
            names = value.split()
            if not names:
                raise file_error(self.path, "PARAMETER names nothing", where=where)
            for name in names:
                if name in self.parameters:
                    raise file_error(
                        self.path, f"parameter {name!r} named twice", where=where
                    )
            self.parameters += names
        elif keyword == "POINTS":
            if not self.parameters:
                raise file_error(
                    self.path,
                    "POINTS before any PARAMETER",
                    where=where,
                    allowed="the file starts with PARAMETER lines",
                )
            if self.rows:
                raise file_error(
                    self.path,
                    "POINTS after DATA",
                    where=where,
                    allowed="define every point before the first DATA line",
                )
            for point in _points(value, len(self.parameters), self.path, where):
                if point in self.points:
                    raise file_error(
                        self.path,
                        f"point {tuple(point)} defined twice",
                        where=where,
                    )
                self.points.append(point)
        elif keyword in ("METRIC", "REGION"):
            if not value:
                raise file_error(self.path, f"{keyword} without a name", where=where)
            self.start_block(number)
            if keyword == "METRIC":
                self.metric = value
            else:
                self.region = value
        elif keyword == "DATA":
            self.data(number, value, where)
        else:
            raise file_error(
                self.path, f"unknown field {keyword!r}", where=where, allowed=_ALLOWED
            )

    def data(self, number, value, where):
        if not self.points:
            raise file_error(
                self.path,
                "DATA before any POINTS",
                where=where,
                allowed="define PARAMETER and POINTS first",
            )
        if self.block_line is None:
            self.start_block(number)
        if self.done >= len(self.points):
            raise file_error(
                self.path,
                f"more DATA lines than the {len(self.points)} POINTS",
                where=where,
                allowed="start a new REGION or METRIC before more DATA",
            )
        values = [_number(t, self.path, where, "value") for t in value.split()]
        if not values:
            raise file_error(self.path, "DATA without values", where=where)
        key = (self.region, self.metric, self.done)
        if key in self.blocks:
            raise file_error(
                self.path,
                f"REGION {self.region!r} METRIC {self.metric!r} already has data "
                f"for this point ({self.where(self.blocks[key])})",
                where=where,
            )
        self.blocks[key] = number
        point = self.points[self.done]
        for run, measured in enumerate(values):
            self.rows.append((*point, self.region, self.metric, run, measured))
        self.done += 1


def _text_rows(path):
    """Parameters and rows ``(*point, callpath, metric, run, value)`` of an Extra-P
    text file (callpath None when no REGION names one)."""
    parser = _Parser(path)
    with open(path, encoding="utf-8") as stream:
        for number, raw in enumerate(stream, start=1):
            parser.line(number, raw)
    parser.close_block()
    if not parser.rows:
        raise file_error(
            path,
            "holds no DATA",
            allowed="Extra-P text files have PARAMETER, POINTS and DATA lines",
        )
    named = {row[len(parser.parameters)] is not None for row in parser.rows}
    if len(named) > 1:
        raise file_error(
            path,
            "some DATA lines come before the first REGION, others after",
            allowed="name a REGION before all DATA, or none at all",
        )
    metric = len(parser.parameters) + 1
    rows = [
        (
            *row[:metric],
            UNNAMED_METRIC if row[metric] is None else row[metric],
            *row[metric + 1 :],
        )
        for row in parser.rows
    ]
    return list(parser.parameters), rows


def read_extrap_text(path):
    """Read an Extra-P text file into a
    :class:`~scaleprobe.models.io.table.MeasurementTable`."""
    parameters, rows = _text_rows(path)
    named = rows[0][len(parameters)] is not None
    if not named:
        rows = [(*r[: len(parameters)], "", *r[len(parameters) + 1 :]) for r in rows]
    table = _table(rows, parameters, path, "extrap-text")
    if not named:
        table.frame = table.frame.drop(columns="callpath")
        table.labels = []
    return table


# ------------------------------------------------------------- JSON, JSON Lines
# As documented by Extra-P (docs/file-formats.md):
#
# - current JSON: ``{"parameters": [names], "measurements": {callpath: {metric:
#   [{"point": [coordinates], "values": [repetitions]}]}}}``;
# - legacy JSON: lists ``parameters``, ``callpaths``, ``metrics`` (``id``, ``name``),
#   ``coordinates`` (``id``, ``parameter_value_pairs`` of ``parameter_id`` and
#   ``parameter_value``) and ``measurements`` (``callpath_id``, ``coordinate_id``,
#   ``metric_id``, ``value``), one measurement per repetition;
# - JSON Lines: one object per line, ``{"params": {name: value}, "value": number or
#   [numbers], "callpath": ..., "metric": ...}`` with callpath and metric optional.


def _value(item, path, where, what):
    if isinstance(item, bool) or not isinstance(item, numbers.Real | str):
        raise file_error(
            path,
            f"{what} {item!r} is not a number",
            where=where,
            allowed="numbers (or strings holding numbers)",
        )
    try:
        return float(item)
    except ValueError:
        raise file_error(
            path, f"{what} {item!r} is not a number", where=where
        ) from None


def _repetitions(item, path, where):
    items = item if isinstance(item, list) else [item]
    if not items:
        raise file_error(path, "no values", where=where, allowed="one or more numbers")
    return [_value(v, path, where, "value") for v in items]


def _table(rows, parameters, path, fmt):
    import pandas as pd

    from .table import MeasurementTable

    long = pd.DataFrame(
        rows, columns=[*parameters, "callpath", "metric", "run", "value"]
    )
    duplicated = long.duplicated([*parameters, "callpath", "metric", "run"])
    if duplicated.any():
        row = long[duplicated].iloc[0]
        raise file_error(
            path,
            "the point ("
            + ", ".join(f"{p}={row[p]:g}" for p in parameters)
            + f") of callpath {row['callpath']!r}, metric {row['metric']!r} "
            "appears twice",
            allowed="list each point once per callpath and metric, with all its values",
        )
    keys = [*parameters, "callpath", "run"]
    wide = long.pivot(index=keys, columns="metric", values="value")
    metrics = list(dict.fromkeys(long["metric"]))
    frame = wide[metrics].reset_index()
    frame.columns.name = None
    return MeasurementTable(
        frame=frame,
        parameters=list(parameters),
        labels=["callpath"],
        metrics=metrics,
        format=fmt,
    )


def _require(mapping, key, kind, path, where):
    if not isinstance(mapping, dict) or key not in mapping:
        raise file_error(path, f"missing {key!r}", where=where)
    value = mapping[key]
    if not isinstance(value, kind):
        raise file_error(
            path,
            f"{key!r} is a {type(value).__name__}",
            where=where,
            allowed=f"it must be a {kind.__name__ if isinstance(kind, type) else kind}",
        )
    return value


def _current(data, path):
    parameters = _require(data, "parameters", list, path, "top level")
    if not parameters or not all(isinstance(p, str) for p in parameters):
        raise file_error(
            path,
            f"parameters {parameters!r}",
            where="top level",
            allowed="a non-empty list of names",
        )
    measurements = _require(data, "measurements", dict, path, "top level")
    rows = []
    for callpath, by_metric in measurements.items():
        if not isinstance(by_metric, dict):
            raise file_error(
                path,
                "expected an object of metrics",
                where=f"measurements[{callpath!r}]",
            )
        for metric, entries in by_metric.items():
            where = f"measurements[{callpath!r}][{metric!r}]"
            if not isinstance(entries, list):
                raise file_error(path, "expected a list of points", where=where)
            for index, entry in enumerate(entries):
                at = f"{where}[{index}]"
                point = _require(entry, "point", list, path, at)
                if len(point) != len(parameters):
                    raise file_error(
                        path,
                        f"point {point} has {len(point)} coordinates",
                        where=at,
                        allowed=f"one per parameter {parameters}",
                    )
                point = [_value(c, path, at, "coordinate") for c in point]
                values = _repetitions(
                    _require(entry, "values", list, path, at), path, at
                )
                rows += [
                    (*point, callpath, metric, run, v) for run, v in enumerate(values)
                ]
    if not rows:
        raise file_error(path, "holds no measurements", where="measurements")
    return list(parameters), rows


def _by_id(data, key, path):
    items = _require(data, key, list, path, "top level")
    table = {}
    for index, item in enumerate(items):
        where = f"{key}[{index}]"
        ident = _require(item, "id", int, path, where)
        if ident in table:
            raise file_error(path, f"id {ident} used twice", where=where)
        table[ident] = item
    return table


def _legacy(data, path):
    parameters = _by_id(data, "parameters", path)
    order = sorted(parameters)
    names = [
        _require(parameters[i], "name", str, path, f"parameter id {i}") for i in order
    ]
    callpaths = {
        i: _require(c, "name", str, path, f"callpath id {i}")
        for i, c in _by_id(data, "callpaths", path).items()
    }
    metrics = {
        i: _require(m, "name", str, path, f"metric id {i}")
        for i, m in _by_id(data, "metrics", path).items()
    }
    coordinates = {}
    for ident, item in _by_id(data, "coordinates", path).items():
        where = f"coordinate id {ident}"
        pairs = _require(item, "parameter_value_pairs", list, path, where)
        values = {}
        for pair in pairs:
            pid = _require(pair, "parameter_id", int, path, where)
            if pid not in parameters:
                raise file_error(
                    path,
                    f"unknown parameter_id {pid}",
                    where=where,
                    allowed=f"parameter ids are {order}",
                )
            values[pid] = _value(pair.get("parameter_value"), path, where, "value")
        if sorted(values) != order:
            raise file_error(
                path,
                f"values for parameter ids {sorted(values)}",
                where=where,
                allowed=f"one value for each parameter id {order}",
            )
        coordinates[ident] = [values[i] for i in order]
    measurements = _require(data, "measurements", list, path, "top level")
    runs, rows = {}, []
    for index, item in enumerate(measurements):
        where = f"measurements[{index}]"
        refs = []
        for key, table in (
            ("coordinate_id", coordinates),
            ("callpath_id", callpaths),
            ("metric_id", metrics),
        ):
            ident = _require(item, key, int, path, where)
            if ident not in table:
                raise file_error(path, f"{key} {ident} is not defined", where=where)
            refs.append(ident)
        value = _value(item.get("value"), path, where, "value")
        run = runs.get(tuple(refs), 0)
        runs[tuple(refs)] = run + 1
        point = coordinates[refs[0]]
        rows.append((*point, callpaths[refs[1]], metrics[refs[2]], run, value))
    if not rows:
        raise file_error(path, "holds no measurements", where="measurements")
    return names, rows


def _json_rows(path):
    """Parameters, rows and layout (``extrap-json`` or ``extrap-json-legacy``) of an
    Extra-P JSON file."""
    with open(path, encoding="utf-8") as stream:
        try:
            data = json.load(stream)
        except json.JSONDecodeError as error:
            raise file_error(
                path,
                f"is not valid JSON: {error.msg}",
                where=f"line {error.lineno}, column {error.colno}",
                allowed="JSON Lines files (one object per line) end in .jsonl",
            ) from None
    if not isinstance(data, dict):
        raise file_error(path, "the top level is not an object", where="top level")
    if "callpaths" in data:
        return (*_legacy(data, path), "extrap-json-legacy")
    return (*_current(data, path), "extrap-json")


def read_extrap_json(path):
    """Read an Extra-P JSON file (current or legacy layout)."""
    parameters, rows, fmt = _json_rows(path)
    return _table(rows, parameters, path, fmt)


def _jsonl_rows(path):
    """Parameters and rows of an Extra-P JSON Lines file (callpath None where the
    lines name none)."""
    rows, parameters, runs = [], None, {}
    with open(path, encoding="utf-8") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                item = json.loads(line)
            except json.JSONDecodeError as error:
                raise file_error(
                    path, f"is not valid JSON: {error.msg}", where=where
                ) from None
            params = _require(item, "params", dict, path, where)
            if parameters is None:
                if not params:
                    raise file_error(path, "'params' is empty", where=where)
                parameters = list(params)
            elif set(params) != set(parameters):
                raise file_error(
                    path,
                    f"params {sorted(params)}",
                    where=where,
                    allowed=f"every line has the parameters of line 1: {parameters}",
                )
            if "value" not in item:
                raise file_error(path, "missing 'value'", where=where)
            point = tuple(
                _value(params[p], path, where, "parameter") for p in parameters
            )
            callpath = item.get("callpath")
            metric = item.get("metric", UNNAMED_METRIC)
            for name, label in (("callpath", callpath), ("metric", metric)):
                if label is not None and not isinstance(label, str):
                    raise file_error(
                        path, f"{name} {label!r} is not a string", where=where
                    )
            for value in _repetitions(item["value"], path, where):
                key = (point, callpath, metric)
                run = runs.get(key, 0)
                runs[key] = run + 1
                rows.append((*point, callpath, metric, run, value))
    if not rows:
        raise file_error(
            path, "holds no measurements", allowed="one JSON object a line"
        )
    named = {row[len(parameters)] is not None for row in rows}
    if len(named) > 1:
        raise file_error(
            path,
            "some lines name a callpath and others do not",
            allowed="give every line a callpath, or none",
        )
    return parameters, rows


def read_extrap_jsonl(path):
    """Read an Extra-P JSON Lines file."""
    parameters, rows = _jsonl_rows(path)
    named = rows[0][len(parameters)] is not None
    if not named:
        rows = [(*r[: len(parameters)], "", *r[len(parameters) + 1 :]) for r in rows]
    table = _table(rows, parameters, path, "extrap-jsonl")
    if not named:
        table.frame = table.frame.drop(columns="callpath")
        table.labels = []
    return table


def extrap_rows(path, fmt):
    """The measurements of an Extra-P file as rows, without building a table.

    Parameters
    ----------
    path : str or path-like
    fmt : {"extrap-text", "extrap-json", "extrap-jsonl"}

    Returns
    -------
    parameters : list of str
    rows : list of tuple
        ``(*point, callpath, metric, run, value)``; callpath is None where the file
        names none.
    fmt : str
        The layout read (``extrap-json-legacy`` for legacy JSON).
    """
    if fmt == "extrap-text":
        return (*_text_rows(path), fmt)
    if fmt == "extrap-jsonl":
        return (*_jsonl_rows(path), fmt)
    return _json_rows(path)
