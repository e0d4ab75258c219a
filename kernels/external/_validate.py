"""Spec-time checks of an external program's parameters and throttle mode."""

from __future__ import annotations

from collections.abc import Iterable

from .command import RESERVED_PARAMS, check_placeholders, template_fields
from .parsers import check_parser_params

__all__ = ["THROTTLE_MODES", "check_throttle", "validate_params"]

#: Throttle modes that can slow an external program's interconnect.
THROTTLE_MODES = ("none", "netns")


def validate_params(params: dict, *, sweep_keys: Iterable[str] | None = None) -> None:
    """Check the ``params`` of a ``kernel: external`` spec before anything runs.

    Parameters
    ----------
    params : dict
        The spec's fixed parameters: ``command`` (template), ``parser`` and, for the
        regex parser, ``patterns`` (plus optional ``units``, ``long_names``). Every
        other key is a fixed value for a placeholder.
    sweep_keys : iterable of str, optional
        The spec's sweep keys. When given, every placeholder of the template must be
        a sweep key, ``ranks``, ``mpiexec`` or another fixed parameter; without it
        only the template's syntax is checked here and unknown names are reported by
        :func:`~scaleprobe.kernels.external.build_command`.

    Raises
    ------
    ValueError
        With a one-line message that names the key (``params.command: ...``,
        ``params.parser: ...``, ``params.patterns: ...``) and what is allowed.

    Examples
    --------
    >>> validate_params({"command": "{mpiexec} -n {ranks} ./bfs {scale} 16",
    ...                  "parser": "graph500"}, sweep_keys=["nodes", "scale"])
    >>> bad = {"command": "./bfs {scael}", "parser": "graph500"}
    >>> validate_params(bad, sweep_keys=["nodes", "scale"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: params.command: unknown placeholder {scael}; allowed: ...
    """
    if not isinstance(params, dict):
        raise ValueError(
            f"params: kernel 'external' needs a mapping with command and parser, "
            f"got {type(params).__name__}"
        )
    command = params.get("command")
    if command is None:
        raise ValueError(
            "params.command: missing; give a template such as "
            "'{mpiexec} -n {ranks} ./program {scale}'"
        )
    if not isinstance(command, str) or not command.strip():
        raise ValueError(f"params.command: must be a non-empty string, got {command!r}")
    template_fields(command)
    if sweep_keys is not None:
        known = {"ranks", "mpiexec", *sweep_keys}
        known.update(k for k in params if k not in RESERVED_PARAMS)
        check_placeholders(command, known)
    check_parser_params(params)


def check_throttle(mode: str) -> None:
    """Raise unless ``mode`` can throttle an external program.

    External programs do their own MPI calls, which never pass through scaleprobe's
    instrumented communicator, so the ``emulated`` mode (virtual time) cannot slow
    them: only the real interconnect (``none``) or a link shaped with ``tc`` in
    network namespaces (``netns``) apply.

    Parameters
    ----------
    mode : str
        The spec's ``throttle.mode``.

    Raises
    ------
    ValueError
        ``"throttle.mode: ..."`` for any mode but ``none`` and ``netns``.

    Examples
    --------
    >>> check_throttle("none")
    >>> check_throttle("emulated")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: throttle.mode: 'emulated' cannot throttle kernel 'external' (...
    """
    if mode not in THROTTLE_MODES:
        raise ValueError(
            f"throttle.mode: {mode!r} cannot throttle kernel 'external' (an external "
            "program's MPI calls bypass scaleprobe's emulated interconnect); allowed: "
            + ", ".join(THROTTLE_MODES)
        )
