"""Spec checks of a kernel: registered, and every point's arguments accepted.

Every point's arguments go through the kernel's own parser, and every parameter's
value is checked against the range the kernel declares
(:func:`~scaleprobe.kernels.registry.kernel_declaration`): ``iterations: -5`` is
refused when the spec is loaded, before anything is launched.
"""

from __future__ import annotations

from scaleprobe.kernels.registry import (
    KernelNotFoundError,
    kernel_arguments,
    kernel_declaration,
    kernel_names,
    kernel_parser,
)

from ._names import did_you_mean

__all__ = ["check_kernel"]


class _RejectedError(Exception):
    pass


def _raise(message):
    raise _RejectedError(message)


def _parameters(parser) -> list[str]:
    names = []
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--") and option != "--help":
                name = option[2:].replace("-", "_")
                if not name.startswith("no_") or name[3:] not in names:
                    names.append(name)
    return names


#: Flags of the instrumented communicator that every launch sets from the spec, and
#: where in the spec they come from; a kernel parameter of the same name would make
#: the kernel apply another link than the point's coordinates say.
_SET_BY_SPEC = {
    "throttle": "throttle.mode",
    "ppn": "sweep.ppn",
    "bandwidth_percent": "sweep.bandwidth",
    "link_bandwidth": "throttle.link_bandwidth",
    "latency": "throttle.latency",
    "core_slots": "throttle.core_slots",
    "threads": "sweep.threads",
}


def _refuse_link_flags(params: dict, axes: dict, valid: list, fail) -> None:
    for where, keys in (("params", params), ("sweep", axes)):
        for key in keys:
            flag = str(key).replace("-", "_")
            if flag in _SET_BY_SPEC and flag in valid:
                fail(
                    f"{where}.{key}",
                    f"the launch sets --{flag.replace('_', '-')} from the spec's "
                    f"{_SET_BY_SPEC[flag]} for every point; set it there, not as a "
                    "kernel parameter",
                )


def _check_ranges(declaration, namespace, params: dict, axes: dict, fail) -> None:
    """Refuse a parsed value outside the range its kernel declares, naming the spec
    key it came from (a swept one before a fixed one)."""
    keys = {str(k).replace("-", "_"): f"params.{k}" for k in params}
    keys.update({str(k).replace("-", "_"): f"sweep.{k}" for k in axes})
    for parameter in declaration.parameters:
        problem = parameter.problem(getattr(namespace, parameter.name, None))
        if problem:
            key = keys.get(parameter.name, "params")
            fail(key, f"kernel {declaration.name!r}: {problem}")


def check_kernel(name: str, params: dict, sweep: dict, fail) -> None:
    """Refuse an unregistered kernel, arguments its parser rejects, or a value
    outside the range it declares.

    Parameters
    ----------
    name : str
        The spec's ``kernel`` (not ``external``).
    params : dict
        The spec's ``params``.
    sweep : dict
        The sweep axes; those the kernel takes as parameters are checked value by
        value, so that every point's arguments are.
    fail : callable
        ``fail(key, message)`` raises the spec error.
    """
    try:
        parser = kernel_parser(name)
    except KernelNotFoundError as exc:
        known = kernel_names()
        if str(exc) != name:  # the registry itself is unusable
            fail("kernel", str(exc))
        fail(
            "kernel",
            f"unknown kernel {name!r}; available: {', '.join(known)}, external"
            + did_you_mean(name, known),
        )
    declaration = kernel_declaration(name)
    parser.error = _raise
    parser.exit = lambda status=0, message=None: _raise(message or "exit")
    valid = _parameters(parser)
    launch = ("nodes", "ppn", "bandwidth", "threads")
    axes = {k: v for k, v in sweep.items() if k not in launch}
    axes.pop("run", None)
    _refuse_link_flags(params, axes, valid, fail)
    first = {k: v[0] for k, v in axes.items()}
    cases = [("params", {**params, **first})]
    cases += [
        (f"sweep.{k}", {**params, **first, k: value})
        for k, values in axes.items()
        for value in values[1:]
    ]
    for key, arguments in cases:
        argv = kernel_arguments(arguments)
        try:
            namespace, extra = parser.parse_known_args(argv)
        except _RejectedError as exc:
            fail(key, f"kernel {name!r} rejects {' '.join(argv)!r}: {exc}")
        for word in extra:
            if word.startswith("--"):
                wrong = word[2:].replace("-", "_")
                where = f"sweep.{wrong}" if wrong in axes else f"params.{wrong}"
                fail(
                    where,
                    f"kernel {name!r} has no parameter {wrong!r}"
                    + did_you_mean(wrong, valid)
                    + f"; its parameters: {', '.join(valid)}",
                )
        if extra:
            fail(key, f"kernel {name!r} rejects {' '.join(extra)!r}")
        _check_ranges(declaration, namespace, params, axes, fail)
