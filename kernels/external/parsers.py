"""Output parsers for external MPI programs, and the registry of their names.

Each parser turns a program's standard output into a
:class:`~scaleprobe.kernels.schema.Record` or raises
:class:`~scaleprobe.kernels.schema.RecordError`:

``graph500``
    The statistics block of the Graph500 MPI reference, versions 2.1 and 3.0
    (:func:`parse_graph500`). Version 2.1 prints ``key: value`` lines
    (``min_time:  0.0008``); version 3.0 prefixes the timing and TEPS lines with
    ``bfs  `` (or ``sssp `` for the SSSP kernel) and marks the headline figure with
    ``!`` (``bfs  harmonic_mean_TEPS:     !  6.3e+07``). Both print per-BFS progress
    (``Time for BFS 3 is 0.0012``) on standard error, which is read as trials when
    it was merged into the captured output. The rank count the program reports
    (``num_mpi_processes``) is the record's placement, so a point whose program ran
    another number of processes than it asked is told apart.
``regex``
    ``params["patterns"]`` maps metric names to regular expressions with one group;
    the group of the last match is read as a float. ``params["units"]`` and
    ``params["long_names"]`` optionally describe the metrics (:func:`parse_regex`).
``json``
    A ``SCALEPROBE-RECORD`` line, as scaleprobe's own kernels print
    (:meth:`Record.parse <scaleprobe.kernels.schema.Record.parse>`).
"""

from __future__ import annotations

import math
import re

from scaleprobe.kernels.graph500.stats import STAT_NAMES
from scaleprobe.kernels.schema import Placement, Record, RecordError

__all__ = [
    "PARSERS",
    "check_parser_params",
    "parse_graph500",
    "parse_output",
    "parse_regex",
]


_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)"
_LINE = re.compile(
    rf"^\s*(?:(?P<kernel>bfs|sssp)\s+)?(?P<key>[A-Za-z][A-Za-z0-9_]*)\s*:\s*!?\s*"
    rf"(?P<value>{_NUMBER})\s*(?:s\s*)?$",
    re.IGNORECASE,
)
_BLOCK_START = re.compile(r"^\s*SCALE:\s*\d+\s*$", re.MULTILINE)
_INVALID = "No results printed for invalid run."
_TRIAL = re.compile(
    rf"^\s*(?P<what>Time|TEPS|Validate time) for (?P<kernel>BFS|SSSP) (?P<index>\d+) "
    rf"is (?P<value>{_NUMBER})\s*$",
    re.MULTILINE,
)
_RUN = re.compile(
    rf"^\s*Run\s+(?P<index>\d+):\s*(?P<time>{_NUMBER}) s, validation "
    rf"(?P<validate>{_NUMBER}) s\s*$",
    re.MULTILINE,
)
# The reference's statistic names, as the Graph500 kernel prints them too.
_STATISTICS = STAT_NAMES
_STAT_NAMES = {
    "min": "minimum",
    "firstquartile": "first quartile of",
    "median": "median",
    "thirdquartile": "third quartile of",
    "max": "maximum",
    "mean": "mean",
    "stddev": "standard deviation of",
    "harmonic_mean": "harmonic mean",
    "harmonic_stddev": "harmonic standard deviation of",
}
# fixed keys: reference name -> (metric name, units, long name)
_FIXED = {
    "scale": ("reported_scale", "1", "SCALE reported by the program"),
    "edgefactor": ("reported_edgefactor", "1", "edge factor reported by the program"),
    "nbfs": ("nbfs", "1", "number of BFS roots"),
    "graph_generation": ("generation_time", "s", "graph generation time"),
    "num_mpi_processes": ("num_mpi_processes", "1", "MPI processes reported"),
    "construction_time": ("construction_time", "s", "graph construction time"),
}
# statistic suffix -> (metric suffix, units, quantity)
_SUFFIXES = {
    "time": ("time", "s", "time per search"),
    "nedge": ("nedge", "edges", "traversed edges per search"),
    "teps": ("teps", "edges/s", "traversed edges per second"),
    "validate": ("validate_time", "s", "validation time per search"),
}


def _describe(raw_key: str) -> tuple[str, str, str]:
    """Map a reference key (lower case, no prefix) to (metric, units, long name)."""
    if raw_key in _FIXED:
        return _FIXED[raw_key]
    stat, _, suffix = raw_key.rpartition("_")
    if suffix in _SUFFIXES and stat in _STAT_NAMES:
        metric, units, quantity = _SUFFIXES[suffix]
        return f"{stat}_{metric}", units, f"{_STAT_NAMES[stat]} {quantity}"
    return raw_key, "", raw_key.replace("_", " ")


def _trials(text: str) -> list[dict]:
    names = {"Time": "time", "TEPS": "teps", "Validate time": "validate_time"}
    found: dict[int, dict] = {}
    for m in _TRIAL.finditer(text):
        prefix = "" if m["kernel"] == "BFS" else "sssp_"
        found.setdefault(int(m["index"]), {})[prefix + names[m["what"]]] = float(
            m["value"]
        )
    for m in _RUN.finditer(text):
        trial = found.setdefault(int(m["index"]) - 1, {})
        trial.setdefault("time", float(m["time"]))
        trial.setdefault("validate_time", float(m["validate"]))
    if sorted(found) != list(range(len(found))):
        return []  # a truncated or interleaved log: do not guess which trial is which
    return [found[i] for i in range(len(found))]


def _block(stdout: str, starts: list) -> tuple[dict, dict, dict]:
    """Metrics, units and long names of the last statistics block."""
    metrics, units, long_names = {}, {}, {}
    for line in stdout[starts[-1] :].splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        metric, unit, long_name = _describe(m["key"].lower())
        if (m["kernel"] or "").lower() == "sssp":
            metric, long_name = f"sssp_{metric}", f"SSSP {long_name}"
        metrics[metric] = float(m["value"])
        units[metric], long_names[metric] = unit, long_name
    return metrics, units, long_names


def _placement(metrics: dict) -> Placement | None:
    """The rank count the program reports, where it reports one."""
    ranks = metrics.get("num_mpi_processes")
    if ranks is None or ranks != int(ranks) or ranks < 1:
        return None
    return Placement(ranks=int(ranks))


def parse_graph500(stdout: str, params: dict | None = None) -> Record:
    """Parse the output of a Graph500 reference run into a kernel record.

    Parameters
    ----------
    stdout : str
        Everything the program printed (standard error merged in is fine).
    params : dict, optional
        Unused; accepted for a uniform parser signature.

    Returns
    -------
    Record
        ``metrics`` holds ``time`` (per-BFS mean time, or the median when only that
        is printed), ``teps`` (harmonic mean TEPS) and every statistic of the block
        under lower-case names (``median_time``, ``harmonic_stddev_teps``,
        ``mean_validate_time``, ``generation_time``...; SSSP figures are prefixed
        ``sssp_``); ``units`` and ``long_names`` describe them; ``trials`` lists the
        per-search times when the progress lines are in the output; ``placement``
        the program's rank count when it reports one. A run whose validation failed
        gives ``status = "invalid"`` and the reason.

    Raises
    ------
    RecordError
        If the output holds no statistics block, or one without time or TEPS.

    Examples
    --------
    >>> record = parse_graph500(
    ...     "SCALE: 10\\nnum_mpi_processes: 4\\nbfs  mean_time: 0.002\\n"
    ...     "bfs  harmonic_mean_TEPS: ! 8e6\\n")
    >>> record.metrics["time"], record.metrics["teps"], record.units["teps"]
    (0.002, 8000000.0, 'edges/s')
    >>> record.placement.ranks
    4
    """
    trials = _trials(stdout)
    if _INVALID in stdout or "Validation failed for this" in stdout:
        return Record.invalid(
            "external",
            "the Graph500 program reported a failed validation",
            trials=tuple(trials),
        )
    starts = [m.start() for m in _BLOCK_START.finditer(stdout)]
    if not starts:
        tail = stdout.strip().splitlines()[-1:] or ["<empty>"]
        raise RecordError(
            "graph500 parser: no statistics block in the output (no 'SCALE:' line); "
            f"last line was {tail[0][:120]!r}"
        )
    metrics, units, long_names = _block(stdout, starts)
    time_key = "mean_time" if "mean_time" in metrics else "median_time"
    missing = [k for k in (time_key, "harmonic_mean_teps") if k not in metrics]
    if missing:
        raise RecordError(
            f"graph500 parser: the statistics block has no {' or '.join(missing)} "
            "line (truncated output?)"
        )
    units.update(time="s", teps="edges/s")
    long_names.update(
        time=f"BFS time ({time_key.replace('_', ' ')} over searches)",
        teps="harmonic mean traversed edges per second",
    )
    for key in trials[0] if trials else ():
        units.setdefault(key, "edges/s" if key.endswith("teps") else "s")
    return Record(
        metrics={
            "time": metrics[time_key],
            "teps": metrics["harmonic_mean_teps"],
            **metrics,
        },
        kernel="external",
        units=units,
        long_names=long_names,
        trials=tuple(trials),
        placement=_placement(metrics),
    )


def parse_regex(stdout: str, params: dict) -> Record:
    """Read metrics from the output with one regular expression each.

    Parameters
    ----------
    stdout : str
        The program's output.
    params : dict
        ``patterns`` ({metric: regex with exactly one group}), optional ``units``
        and ``long_names`` ({metric: str}). Patterns are searched line by line
        (``re.MULTILINE``); when a pattern matches several times, the last match
        counts (programs often print progress before the result).

    Returns
    -------
    Record
        ``metrics`` with ``units`` and ``long_names``.

    Raises
    ------
    RecordError
        If a pattern matches nothing or its group is not a number.

    Examples
    --------
    >>> params = {"patterns": {"time": r"elapsed = (\\S+) s"}, "units": {"time": "s"}}
    >>> record = parse_regex("iter 1\\nelapsed = 2.5 s\\n", params)
    >>> record.metrics, record.units
    ({'time': 2.5}, {'time': 's'})
    """
    metrics = {}
    for name, pattern in params["patterns"].items():
        matches = list(re.finditer(pattern, stdout, re.MULTILINE))
        if not matches:
            raise RecordError(
                f"regex parser: the pattern for {name!r} ({pattern!r}) matched nothing "
                "in the output"
            )
        text = matches[-1].group(1)
        try:
            value = float(text)
        except (TypeError, ValueError):
            raise RecordError(
                f"regex parser: the pattern for {name!r} captured {text!r}, "
                "not a number"
            ) from None
        metrics[name] = value if math.isfinite(value) else None
    return Record(
        metrics=metrics,
        kernel="external",
        units=dict(params.get("units") or {}),
        long_names=dict(params.get("long_names") or {}),
    )


def _parse_json(stdout: str, params: dict) -> Record:
    return Record.parse(stdout)


#: Parser name -> function(stdout, params) -> record.
PARSERS = {"graph500": parse_graph500, "json": _parse_json, "regex": parse_regex}


def _check_mapping(key: str, value, names: set[str] | None = None) -> None:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(
            f"params.{key}: expected a mapping of metric name to string, got {value!r}"
        )
    if names is not None and not set(value) <= names:
        extra = ", ".join(sorted(set(value) - names))
        raise ValueError(
            f"params.{key}: {extra} not among the pattern names "
            f"({', '.join(sorted(names))})"
        )


def check_parser_params(params: dict) -> None:
    """Check ``params["parser"]`` and the parameters that parser needs.

    Parameters
    ----------
    params : dict
        The spec's fixed parameters.

    Raises
    ------
    ValueError
        ``"params.parser: ..."`` or ``"params.patterns: ..."`` naming what was given
        and what is allowed.

    Examples
    --------
    >>> check_parser_params({"parser": "regex", "patterns": {"time": "t=(\\\\S+)"}})
    >>> check_parser_params({"parser": "xml"})
    Traceback (most recent call last):
    ...
    ValueError: params.parser: unknown parser 'xml'; allowed: graph500, json, regex
    """
    allowed = ", ".join(sorted(PARSERS))
    parser = params.get("parser")
    if parser is None:
        raise ValueError(f"params.parser: missing; allowed: {allowed}")
    if not isinstance(parser, str) or parser not in PARSERS:
        raise ValueError(
            f"params.parser: unknown parser {parser!r}; allowed: {allowed}"
        )
    if parser != "regex":
        for key in ("patterns", "units", "long_names"):
            if key in params:
                raise ValueError(
                    f"params.{key}: only used by parser 'regex', not by {parser!r}"
                )
        return
    patterns = params.get("patterns")
    if not patterns:
        raise ValueError(
            "params.patterns: parser 'regex' needs a non-empty mapping of metric name "
            f"to a regular expression with one group, got {patterns!r}"
        )
    _check_mapping("patterns", patterns)
    for name, pattern in patterns.items():
        try:
            groups = re.compile(pattern).groups
        except re.error as exc:
            raise ValueError(
                f"params.patterns.{name}: {pattern!r} is not a regular expression: "
                f"{exc}"
            ) from None
        if groups != 1:
            raise ValueError(
                f"params.patterns.{name}: {pattern!r} has {groups} groups; exactly one "
                "group must capture the number"
            )
    for key in ("units", "long_names"):
        if key in params:
            _check_mapping(key, params[key], set(patterns))


def parse_output(stdout: str, params: dict) -> Record:
    """Parse a program's output with the parser ``params["parser"]`` names.

    Parameters
    ----------
    stdout : str
        The program's standard output.
    params : dict
        The spec's fixed parameters (``parser`` and what it needs).

    Returns
    -------
    Record
        Validated; where the program reports its rank count, ``placement`` says it.

    Raises
    ------
    RecordError
        If the output cannot be parsed, or ``params`` names no known parser (see
        :func:`check_parser_params`; ``RecordError`` is a ``ValueError``).

    Examples
    --------
    >>> parse_output('SCALEPROBE-RECORD {"metrics": {"time": 1.0}}', {"parser": "json"})
    ... # doctest: +ELLIPSIS
    Record(metrics={'time': 1.0}, kernel='', status='ok', ...)
    """
    try:
        check_parser_params(params)
    except ValueError as exc:
        raise RecordError(str(exc)) from None
    return PARSERS[params["parser"]](stdout, params)
