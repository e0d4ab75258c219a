"""The kernel registry: kernels are found through ``scaleprobe.kernels`` entry points.

A kernel is a module run as ``python -m <module>`` under MPI, plus a function that
builds its :class:`argparse.ArgumentParser` without importing mpi4py (so a sweep can
check every point's arguments before anything is launched). Both are named by one
entry point in the ``scaleprobe.kernels`` group, ``name = "module:build_parser"``;
scaleprobe's own kernels are registered the same way in its ``pyproject.toml``, and
an installed package adds a kernel of its own with::

    [project.entry-points."scaleprobe.kernels"]
    "mylab.stencil" = "mylab.stencil:build_parser"

A module that declares its kernel (a :class:`~scaleprobe.kernels.harness.
KernelDeclaration` as its ``KERNEL``) tells :func:`kernel_declaration` its
parameters with their ranges and units, its metrics and its fewest ranks; one that
only builds a parser gets a declaration derived from the parser (no ranges, and
``MIN_RANKS`` from the module, 1 without it).

This module imports only the standard library.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata

__all__ = [
    "GROUP",
    "KernelNotFoundError",
    "kernel_arguments",
    "kernel_declaration",
    "kernel_min_ranks",
    "kernel_module",
    "kernel_names",
    "kernel_parser",
]

#: The entry-point group kernels register in.
GROUP = "scaleprobe.kernels"


class KernelNotFoundError(LookupError):
    """No kernel of that name is registered."""


@functools.cache
def _entry_points() -> dict:
    found = {ep.name: ep for ep in importlib.metadata.entry_points(group=GROUP)}
    if not any(ep.value.startswith("scaleprobe.") for ep in found.values()):
        raise KernelNotFoundError(
            f"no scaleprobe kernels are registered in the {GROUP!r} entry points: "
            "scaleprobe's installation metadata is missing or stale; reinstall it "
            "(pip install -e . in a checkout)"
        )
    return found


def kernel_names() -> list[str]:
    """List the registered kernels.

    Returns
    -------
    list of str
        Names usable as a spec's ``kernel`` (``external`` is always allowed too).

    Examples
    --------
    >>> "commbench.pingpong" in kernel_names()
    True
    """
    return sorted(_entry_points())


def _entry(name: str):
    try:
        return _entry_points()[name]
    except KeyError:
        raise KernelNotFoundError(name) from None


def kernel_module(name: str) -> str:
    """Return the module that runs kernel ``name`` (``python -m`` it).

    Parameters
    ----------
    name : str
        A registered kernel.

    Returns
    -------
    str

    Raises
    ------
    KernelNotFoundError
        If no kernel of that name is registered.

    Examples
    --------
    >>> kernel_module("graph500")
    'scaleprobe.kernels.graph500'
    """
    return _entry(name).module


def kernel_parser(name: str):
    """Build the argument parser of kernel ``name``, without importing mpi4py.

    Parameters
    ----------
    name : str
        A registered kernel.

    Returns
    -------
    argparse.ArgumentParser

    Raises
    ------
    KernelNotFoundError
        If no kernel of that name is registered.

    Examples
    --------
    >>> kernel_parser("commbench.fault").parse_args(["--sleep", "0.5"]).sleep
    0.5
    """
    return _entry(name).load()()


def kernel_declaration(name: str):
    """Return what kernel ``name`` declares: parameters, metrics, fewest ranks.

    Imports the kernel's module (never mpi4py).

    Parameters
    ----------
    name : str
        A registered kernel.

    Returns
    -------
    KernelDeclaration
        The module's ``KERNEL``; for a kernel that provides only ``build_parser``,
        one derived from its parser (parameters without ranges or units, no
        metrics, ``min_ranks`` from the module's ``MIN_RANKS`` or 1).

    Raises
    ------
    KernelNotFoundError
        If no kernel of that name is registered.

    Examples
    --------
    >>> declared = kernel_declaration("commbench.pingpong")
    >>> declared.min_ranks, declared.summary
    (2, 'Ping-pong between two ranks on different emulated nodes.')
    >>> [(p.name, p.minimum) for p in declared.parameters][:2]
    [('msg_bytes', 0), ('iterations', 1)]
    """
    from scaleprobe.kernels.harness import KernelDeclaration, declaration_from_parser

    module_name = kernel_module(name)
    module = importlib.import_module(module_name)
    declared = getattr(module, "KERNEL", None)
    if isinstance(declared, KernelDeclaration):
        return declared
    min_ranks = getattr(module, "MIN_RANKS", 1)
    if isinstance(min_ranks, bool) or not isinstance(min_ranks, int) or min_ranks < 1:
        min_ranks = 1
    return declaration_from_parser(
        name, kernel_parser(name), min_ranks=min_ranks, module=module_name
    )


def kernel_min_ranks(name: str) -> int:
    """Return the fewest MPI ranks kernel ``name`` can run on.

    Its declaration says it (:func:`kernel_declaration`; a ping-pong needs two).
    Sweep plans leave out the points below it.

    Parameters
    ----------
    name : str
        A registered kernel.

    Returns
    -------
    int

    Raises
    ------
    KernelNotFoundError
        If no kernel of that name is registered.

    Examples
    --------
    >>> kernel_min_ranks("commbench.pingpong"), kernel_min_ranks("commbench.compute")
    (2, 1)
    """
    return kernel_declaration(name).min_ranks


def kernel_arguments(params: dict) -> list[str]:
    """Turn kernel parameters into command-line arguments.

    Underscores become dashes; ``True`` gives ``--key``, ``False`` gives ``--no-key``,
    ``None`` leaves the flag out and a list gives one argument per item.

    Parameters
    ----------
    params : dict
        Parameter names and values.

    Returns
    -------
    list of str

    Examples
    --------
    >>> kernel_arguments({"message_sizes": [8, 64], "trials": False, "seed": None})
    ['--message-sizes', '8', '64', '--no-trials']
    """
    args = []
    for key, value in params.items():
        flag = "--" + key.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            args.append(flag if value else "--no-" + key.replace("_", "-"))
        elif isinstance(value, list | tuple):
            args += [flag, *map(str, value)]
        else:
            args += [flag, str(value)]
    return args
