"""Extra-P's text input format: PARAMETER, POINTS, METRIC, REGION and DATA lines.

As documented by Extra-P (docs/file-formats.md): ``PARAMETER`` lines name the
parameters (several lines or several names per line), ``POINTS`` lines list the
measurement points in order (``( 4 10 ) ( 8 10 )``, parentheses optional with one
parameter), ``METRIC`` and ``REGION`` name the metric and callpath of the data that
follow, and each ``DATA`` line holds the repetitions measured at the next point. The
``DATA`` lines after a ``REGION`` or ``METRIC`` line follow the order of the points
and must cover every point. Lines starting with ``#`` are comments.
"""

from __future__ import annotations

import re

import pandas as pd

from .table import MeasurementTable, file_error

__all__ = ["read_extrap_text"]

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


def read_extrap_text(path):
    """Read an Extra-P text file into a :class:`MeasurementTable`."""
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
    columns = [*parser.parameters, "callpath", "metric", "run", "value"]
    long = pd.DataFrame(parser.rows, columns=columns)
    long["metric"] = long["metric"].fillna(UNNAMED_METRIC)
    keys = [*parser.parameters, "callpath", "run"]
    labels = ["callpath"]
    if long["callpath"].isna().all():
        long = long.drop(columns="callpath")
        keys.remove("callpath")
        labels = []
    elif long["callpath"].isna().any():
        raise file_error(
            path,
            "some DATA lines come before the first REGION, others after",
            allowed="name a REGION before all DATA, or none at all",
        )
    wide = long.pivot(index=keys, columns="metric", values="value")
    metrics = list(dict.fromkeys(long["metric"]))
    frame = wide[metrics].reset_index()
    frame.columns.name = None
    return MeasurementTable(
        frame=frame,
        parameters=list(parser.parameters),
        labels=labels,
        metrics=metrics,
        format="extrap-text",
    )
