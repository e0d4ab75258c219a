"""One tidy table of a profile: every measurement of every series, repetitions kept.

A *profile* is what a performance tool writes for an application measured at
several process counts: call paths (regions) x metrics x process counts (and other
parameters, such as a problem size) x repetitions. :class:`ProfileTable` holds it
as columns, one row per measured value; a *series* is one call path and metric
(and one value of every other parameter) over the process counts: the unit
:func:`~scaleprobe.models.profiles.fit_profile` models.

The table is plain numpy, so a profile of thousands of call paths is read and
grouped without loading pandas; :meth:`ProfileTable.to_frame` gives the same rows as
a DataFrame.

Examples
--------
>>> table = ProfileTable.from_rows(
...     ["p"],
...     [(4, "main", "time", 0, 2.0), (4, "main", "time", 1, 2.2),
...      (8, "main", "time", 0, 1.1)],
...     source={"path": "example"},
... )
>>> table.axis, len(table), [s.name for s in table.series()]
('ranks', 3, ['main'])
>>> table.series()[0].values[0].tolist()
[2.0, 2.2]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..io.common import NODE_NAMES, RANK_NAMES, file_error

#: Separator of the frames of a call path (``main->solve``), as Extra-P writes them.
SEPARATOR = "->"

__all__ = ["AXIS_KINDS", "ProfileSeries", "ProfileTable", "choose_axis"]

#: What the process axis of a table counts: MPI ranks, nodes, or another parameter
#: (a table whose only parameter is not named like a process count).
AXIS_KINDS = ("ranks", "nodes", "parameter")


def choose_axis(parameters, path, *, ranks=None, nodes=None):
    """The parameter that counts processes, and what it counts.

    Parameters
    ----------
    parameters : list of str
        Numeric parameters of the file.
    path : str
        The file, for messages.
    ranks, nodes : str, default=None
        The parameter named as the count of MPI ranks, or of nodes.

    Returns
    -------
    name : str
    kind : {"ranks", "nodes", "parameter"}

    Raises
    ------
    MeasurementFileError
        When no parameter (or several) could be the count and none is named.

    Examples
    --------
    >>> choose_axis(["n", "p"], "f.txt")
    ('p', 'ranks')
    >>> choose_axis(["x"], "f.txt")
    ('x', 'parameter')
    """
    if ranks is not None and nodes is not None:
        raise ValueError(
            f"pass ranks= or nodes=, not both; got ranks={ranks!r}, nodes={nodes!r}"
        )
    named = ranks if ranks is not None else nodes
    if named is not None:
        if named not in parameters:
            raise file_error(
                path,
                f"has no numeric parameter {named!r}",
                allowed=f"its parameters are {list(parameters)}",
            )
        return named, "ranks" if ranks is not None else "nodes"
    found = [
        (name, kind)
        for name in parameters
        for kind, names in (("ranks", RANK_NAMES), ("nodes", NODE_NAMES))
        if name.lower() in names
    ]
    if len(found) == 1:
        return found[0]
    if not found and len(parameters) == 1:
        return parameters[0], "parameter"
    what = (
        f"several parameters could count processes: {[n for n, _ in found]}"
        if found
        else f"no parameter is recognised as a process count among {list(parameters)}"
    )
    raise file_error(
        path,
        what,
        allowed="pass ranks=NAME for MPI ranks or nodes=NAME for nodes "
        "(command line: --ranks-from NAME or --nodes-from NAME)",
    )


@dataclass(frozen=True)
class ProfileSeries:
    """One call path and metric over the process counts.

    Attributes
    ----------
    name : str
        ``callpath``, with ``[metric]`` when the table has several metrics and the
        other parameters' values, e.g. ``solve [time] (n=5000)``.
    callpath, metric : str
    parameters : dict of str to float
        The values of the other parameters that fix this series.
    x : ndarray
        The process counts measured, increasing.
    values : list of ndarray
        The repetitions at each count.
    """

    name: str
    callpath: str
    metric: str
    parameters: dict
    x: np.ndarray
    values: list


@dataclass
class ProfileTable:
    """Every measurement of a profile, one row per value: the tidy table.

    Parameters
    ----------
    axis : str
        ``"ranks"`` or ``"nodes"`` (or the name of the parameter the series run
        over, when it is not a process count).
    kind : {"ranks", "nodes", "parameter"}
        What the axis counts.
    columns : dict of str to ndarray
        ``callpath``, ``metric``, the axis, every other parameter, ``run`` and
        ``value``, all of one length.
    parameters : list of str
        The other parameters (``ppn``, a problem size...), in the file's order.
    units : dict of str to str
        Units of the metrics, where the file (or the caller) states them.
    source : dict
        Provenance: ``path``, ``format``, ``process_parameter`` (the file's name of
        the axis) and, for files, ``sha256``.
    notes : list of str
        What reading did to the measurements (values averaged over ranks...).
    """

    axis: str
    kind: str
    columns: dict
    parameters: list = field(default_factory=list)
    units: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    def __len__(self):
        return int(self.columns["value"].size)

    @classmethod
    def from_rows(cls, parameters, rows, *, source, ranks=None, nodes=None, units=None):
        """Build a table from rows ``(*point, callpath, metric, run, value)``.

        Parameters
        ----------
        parameters : list of str
            Names of the point's coordinates.
        rows : list of tuple
            ``run`` may be None: repetitions are then numbered in file order.
        source : dict
            Provenance (``path`` at least).
        ranks, nodes : str, default=None
            The parameter counting MPI ranks or nodes (default: by name,
            :func:`choose_axis`).
        units : dict, default=None
            Units of the metrics.

        Returns
        -------
        ProfileTable
        """
        path = source.get("path", "")
        if not rows:
            raise file_error(path, "holds no measurements")
        name, kind = choose_axis(list(parameters), path, ranks=ranks, nodes=nodes)
        width = len(parameters)
        points = np.array([row[:width] for row in rows], dtype=float)
        columns = {
            "callpath": np.array(
                ["" if row[width] is None else str(row[width]) for row in rows],
                dtype=object,
            ),
            "metric": np.array([str(row[width + 1]) for row in rows], dtype=object),
        }
        axis = name if kind == "parameter" else kind
        for index, parameter in enumerate(parameters):
            key = axis if parameter == name else parameter
            columns[key] = points[:, index]
        columns["run"] = _runs(columns, [row[width + 2] for row in rows], parameters)
        columns["value"] = np.array([row[width + 3] for row in rows], dtype=float)
        _check_counts(columns[axis], name, kind, path)
        others = [p for p in parameters if p != name]
        source = {**source, "process_parameter": name}
        return cls(axis, kind, columns, others, dict(units or {}), source)

    @property
    def metrics(self):
        """The metrics, in first-seen order."""
        return list(dict.fromkeys(self.columns["metric"]))

    @property
    def callpaths(self):
        """The call paths, in first-seen order."""
        return list(dict.fromkeys(self.columns["callpath"]))

    def series(self):
        """Every series of the table, in the order of first appearance.

        Returns
        -------
        list of ProfileSeries
        """
        keys = ["callpath", "metric", *self.parameters]
        columns = self.columns
        several = len(self.metrics) > 1
        groups = {}
        for row in range(len(self)):
            key = tuple(columns[k][row] for k in keys)
            groups.setdefault(key, []).append(row)
        out = []
        for key, rows in groups.items():
            rows = np.asarray(rows)
            x_all = columns[self.axis][rows]
            x = np.unique(x_all)
            values = [columns["value"][rows[x_all == v]] for v in x]
            params = {k: float(v) for k, v in zip(keys[2:], key[2:], strict=True)}
            out.append(
                ProfileSeries(
                    name=_series_name(key[0], key[1], params, several),
                    callpath=str(key[0]),
                    metric=str(key[1]),
                    parameters=params,
                    x=x,
                    values=values,
                )
            )
        return out

    def select(self, *, callpath=None, metric=None, **parameters):
        """The rows of one call path, one metric, or given parameter values.

        Parameters
        ----------
        callpath, metric : str, default=None
        **parameters : float
            Values of the other parameters.

        Returns
        -------
        ProfileTable
        """
        keep = np.ones(len(self), dtype=bool)
        wanted = {"callpath": callpath, "metric": metric, **parameters}
        for column, value in wanted.items():
            if value is None:
                continue
            if column not in self.columns:
                raise ValueError(
                    f"cannot select {column}={value!r}: the table has no {column!r}; "
                    f"its columns are {list(self.columns)}"
                )
            values = self.columns[column]
            if values.dtype == object:
                match = values == str(value)
            else:
                match = values == float(value)
            if not match.any():
                shown = ", ".join(map(str, list(dict.fromkeys(values))[:20]))
                raise ValueError(
                    f"{self.source.get('path', 'the table')} has no {column} "
                    f"{value!r}; it has: {shown}"
                )
            keep &= match
        columns = {k: v[keep] for k, v in self.columns.items()}
        return ProfileTable(
            self.axis,
            self.kind,
            columns,
            list(self.parameters),
            dict(self.units),
            dict(self.source),
            list(self.notes),
        )

    def to_frame(self):
        """The table as a pandas DataFrame, one row per measured value.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        return pd.DataFrame(dict(self.columns))


def _runs(columns, given, parameters):
    """Repetition numbers: as given, else counted per point, call path and metric."""
    if all(run is not None for run in given):
        return np.asarray(given, dtype=np.int64)
    keys = zip(*(columns[k] for k in columns if k not in ("run", "value")), strict=True)
    seen, runs = {}, []
    for key in keys:
        runs.append(seen.get(key, 0))
        seen[key] = runs[-1] + 1
    return np.asarray(runs, dtype=np.int64)


def _check_counts(values, name, kind, path):
    """Process counts are whole numbers >= 1 (any positive value for a parameter)."""
    positive = np.isfinite(values) & (values > 0)
    whole = positive & (values == np.round(values))
    bad = ~(whole if kind != "parameter" else positive)
    if bad.any():
        allowed = (
            "counts are whole numbers >= 1"
            if kind != "parameter"
            else "values of the parameter the series run over are positive"
        )
        raise file_error(
            path,
            f"parameter {name!r} ({kind}) has the value {values[np.argmax(bad)]:g}",
            allowed=allowed,
        )


def _series_name(callpath, metric, parameters, several_metrics):
    name = str(callpath) or "(no call path)"
    if several_metrics:
        name += f" [{metric}]"
    if parameters:
        name += " (" + ", ".join(f"{k}={v:g}" for k, v in parameters.items()) + ")"
    return name
