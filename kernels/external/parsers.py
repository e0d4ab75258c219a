"""Output parsers for external MPI programs, and the registry of their names.

Each parser turns a program's standard output into a
:class:`~scaleprobe.kernels.schema.Record` or raises
:class:`~scaleprobe.kernels.schema.RecordError`:

``graph500``
    The statistics block of the Graph500 MPI reference, versions 2.1 and 3.0
    (:func:`parse_graph500`).
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

from scaleprobe.kernels.schema import Record, RecordError

from ._graph500_output import parse_graph500

__all__ = [
    "PARSERS",
    "check_parser_params",
    "parse_graph500",
    "parse_output",
    "parse_regex",
]


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
