"""Render the command line of an external MPI program from a spec's template.

A template is a string such as ``"{mpiexec} -n {ranks} ./graph500_reference_bfs
{scale} 16"``. Its placeholders name the sweep coordinates of the point (``nodes``,
``ppn``, ``bandwidth``, ``run``, ``scale``...), ``ranks``, ``mpiexec`` and the other
fixed parameters of the spec. A format specification is allowed (``{bandwidth:.0f}``);
attribute and index access, conversions and positional fields are not, so a spec cannot
reach into Python objects.

Each value substitutes as literal text inside one argument (it is shell-quoted before
the template is split with :func:`shlex.split`), so a path with spaces stays one
argument. The exception is ``{mpiexec}``, the launcher command line, which may hold
several words (``srun --mpi=pmi2``).
"""

from __future__ import annotations

import shlex
import string
from collections.abc import Iterable

__all__ = ["RESERVED_PARAMS", "build_command", "template_fields"]

#: Parameters that configure the adapter itself and are not placeholders.
RESERVED_PARAMS = frozenset({"command", "parser", "patterns", "units", "long_names"})

_FORMATTER = string.Formatter()


def template_fields(template: str) -> list[str]:
    """Return the placeholder names of a command template, in order of appearance.

    Parameters
    ----------
    template : str
        The command template.

    Returns
    -------
    list of str
        Placeholder names, with repeats removed.

    Raises
    ------
    ValueError
        ``"params.command: ..."`` if the template has unbalanced braces, an empty or
        positional placeholder, attribute or index access, or a conversion.

    Examples
    --------
    >>> template_fields("{mpiexec} -n {ranks} ./bfs {scale} {scale}")
    ['mpiexec', 'ranks', 'scale']
    """
    try:
        parsed = list(_FORMATTER.parse(template))
    except ValueError as exc:
        raise ValueError(
            f"params.command: malformed template {template!r}: {exc}"
        ) from None
    names: list[str] = []
    for _literal, field, spec, conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier():
            raise ValueError(
                f"params.command: placeholder {{{field}}} is not allowed in "
                f"{template!r}; "
                "use a plain name such as {scale} (no positions, attributes or indexes)"
            )
        if conversion is not None:
            raise ValueError(
                f"params.command: conversion !{conversion} in {{{field}}} is not "
                "allowed; "
                "use a format specification such as {bandwidth:.0f}"
            )
        if spec and "{" in spec:
            raise ValueError(
                "params.command: nested placeholder in "
                f"{{{field}:{spec}}} is not allowed"
            )
        if field not in names:
            names.append(field)
    return names


def _values(params: dict, point: dict, mpiexec: str, ranks: int) -> dict:
    values = {k: v for k, v in params.items() if k not in RESERVED_PARAMS}
    values.update(point)
    values["ranks"] = ranks
    values["mpiexec"] = mpiexec
    return values


def check_placeholders(template: str, known: Iterable[str]) -> None:
    """Raise if ``template`` names a placeholder outside ``known``.

    Parameters
    ----------
    template : str
        The command template.
    known : iterable of str
        Names that will have a value.

    Raises
    ------
    ValueError
        ``"params.command: unknown placeholder {x}; allowed: ..."``.

    Examples
    --------
    >>> check_placeholders("{mpiexec} -n {ranks} ./a.out", {"mpiexec", "ranks"})
    """
    known = set(known)
    for name in template_fields(template):
        if name not in known:
            raise ValueError(
                f"params.command: unknown placeholder {{{name}}}; allowed: "
                + ", ".join("{" + k + "}" for k in sorted(known))
            )


def build_command(params: dict, point: dict, *, mpiexec: str, ranks: int) -> list[str]:
    """Render ``params["command"]`` for one sweep point into an argument list.

    Parameters
    ----------
    params : dict
        The spec's fixed parameters; ``command`` is the template and every other
        key but the adapter's own (:data:`RESERVED_PARAMS`) is a placeholder.
    point : dict
        The sweep coordinates of this point; they take precedence over ``params``.
    mpiexec : str
        The launcher command line (``mpiexec`` path, or ``srun --mpi=pmi2``).
    ranks : int
        The number of MPI ranks of the point.

    Returns
    -------
    list of str
        The argument vector, ready for :class:`subprocess.Popen` (no shell).

    Raises
    ------
    ValueError
        ``"params.command: ..."`` for a missing or malformed template, or a
        placeholder without a value.

    Examples
    --------
    >>> build_command(
    ...     {"command": "{mpiexec} -n {ranks} ./bfs {scale} {edgefactor}",
    ...      "parser": "graph500", "edgefactor": 16},
    ...     {"nodes": 2, "ppn": 2, "scale": 12, "run": 0},
    ...     mpiexec="mpiexec", ranks=4)
    ['mpiexec', '-n', '4', './bfs', '12', '16']
    """
    template = params.get("command") if isinstance(params, dict) else None
    if not isinstance(template, str) or not template.strip():
        raise ValueError(
            f"params.command: a command template string is required, got {template!r}"
        )
    values = _values(params, point, mpiexec, ranks)
    check_placeholders(template, values)
    pieces = []
    for literal, field, spec, _conversion in _FORMATTER.parse(template):
        pieces.append(literal)
        if field is None:
            continue
        try:
            text = format(values[field], spec)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"params.command: cannot format {{{field}:{spec}}} with value "
                f"{values[field]!r}: {exc}"
            ) from None
        pieces.append(text if field == "mpiexec" else shlex.quote(text))
    try:
        argv = shlex.split("".join(pieces))
    except ValueError as exc:
        raise ValueError(f"params.command: cannot split {template!r}: {exc}") from None
    if not argv:
        raise ValueError(f"params.command: {template!r} renders to an empty command")
    return argv
