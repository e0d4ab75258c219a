"""Ordered choices: a kernel's named problem classes as the sizes they stand for.

A sweep over NPB's classes (``class: [S, W, A]``) varies a text the regressions
cannot use. A kernel declares what each class stands for
(:class:`~scaleprobe.kernels.harness.Parameter`'s ``sizes``: NPB IS's ``total_keys``,
EP's ``pairs``, CG's order ``na`` and non-zeros ``nnz``), and the feature frame
carries those sizes in the class's place, so that a model regresses on them and a
projection names a class the sweep never ran.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "class_sizes",
    "ordered_parameters",
    "ordered_sizes",
    "recorded_sizes",
    "undeclared_sizes",
]


def ordered_parameters(kernel) -> dict:
    """The ordered choices a kernel declares.

    Parameters
    ----------
    kernel : str or None
        A registered kernel's name (a results Dataset's ``kernel`` attribute).

    Returns
    -------
    dict of str to Parameter
        Empty for no kernel, an unknown one, or one without ordered choices.

    Examples
    --------
    >>> sorted(ordered_parameters("npb.is"))
    ['class']
    >>> ordered_parameters("commbench.pingpong"), ordered_parameters(None)
    ({}, {})
    """
    if not kernel:
        return {}
    from scaleprobe.kernels.registry import KernelNotFoundError, kernel_declaration

    try:
        declared = kernel_declaration(str(kernel))
    except (KernelNotFoundError, ImportError):
        return {}
    return {p.name: p for p in declared.parameters if p.sizes}


def ordered_sizes(frame, kernel):
    """The frame with every ordered choice replaced by the sizes it stands for.

    A column is left as it is when one of its values is not a declared choice
    (NPB CG's class ``U``, sized by its own flags) or when a size's name is
    already a column. Where every size is a column the kernel recorded
    (:func:`recorded_sizes`: what a point really ran, NPB BT's ``cell_steps`` at a
    step count of its own), those are kept and the choice is dropped.

    Parameters
    ----------
    frame : pandas.DataFrame
        A feature frame.
    kernel : str or None
        The kernel that measured it.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"ranks": [1, 2], "class": ["S", "W"]})
    >>> ordered_sizes(frame, "npb.is").to_dict("list")
    {'ranks': [1, 2], 'total_keys': [65536.0, 1048576.0]}
    """
    for name, parameter in ordered_parameters(kernel).items():
        if name not in frame.columns:
            continue
        values = frame[name].astype(str)
        table = {choice: parameter.size_of(choice) for choice in parameter.choices}
        names = list(next(iter(table.values())))
        if set(names) <= set(frame.columns) and frame[names].notna().to_numpy().all():
            recorded = frame[names]  # the sizes the points ran, in the choice's place
            frame = frame.drop(columns=names)
            at = list(frame.columns).index(name)
            for offset, size in enumerate(names):
                frame.insert(at + 1 + offset, size, recorded[size].astype(float))
            frame = frame.drop(columns=name)
            continue
        if not set(values) <= set(table) or set(names) & set(frame.columns):
            continue
        at = list(frame.columns).index(name)
        for offset, size in enumerate(names):
            column = np.array([table[v][size] for v in values], dtype=float)
            frame.insert(at + 1 + offset, size, column)
        frame = frame.drop(columns=name)
    return frame


def recorded_sizes(kernel, variables) -> list:
    """The sizes of the kernel's swept ordered choices that its points record.

    Parameters
    ----------
    kernel : str or None
    variables : iterable of str
        A results Dataset's data variables and coordinates (a choice counts where
        it is one of them: swept).

    Returns
    -------
    list of str

    Examples
    --------
    >>> recorded_sizes("npb.bt", ["time", "class", "cell_steps", "grid"])
    ['cell_steps']
    >>> recorded_sizes("npb.bt", ["time", "cell_steps"])  # class not swept
    []
    >>> recorded_sizes("npb.bt", ["time"]), recorded_sizes(None, ["cell_steps"])
    ([], [])
    """
    names = set(map(str, variables))
    sizes = [
        size
        for parameter in ordered_parameters(kernel).values()
        if parameter.name in names
        for size in parameter.size_of(parameter.choices[0])
    ]
    return [size for size in sizes if size in names]


def class_sizes(kernel, name, values):
    """The sizes a projection's ``--param NAME=VALUES`` of an ordered choice names.

    Parameters
    ----------
    kernel : str or None
        The kernel the models were trained on.
    name : str
        The parameter (``class``).
    values : sequence of str
        Its choices (``["A", "B"]``).

    Returns
    -------
    dict of str to list of float or None
        Each size's values, in the order given; None when ``name`` is not an
        ordered choice of ``kernel``.

    Raises
    ------
    ValueError
        For a value that is not one of its choices.

    Examples
    --------
    >>> class_sizes("npb.cg", "class", ["A", "B"])
    {'na': [14000.0, 75000.0], 'nnz': [1853104.0, 13708072.0], 'stages': [15.0, 75.0]}
    """
    parameter = ordered_parameters(kernel).get(name)
    if parameter is None:
        return None
    if not values:
        raise ValueError(
            f"--param {name}: give a class: {', '.join(parameter.choices)}"
        )
    unknown = [v for v in values if v not in parameter.choices]
    if unknown:
        raise ValueError(
            f"--param {name}: {unknown[0]!r} is not a class of {kernel}; allowed: "
            f"{', '.join(parameter.choices)}"
        )
    sizes = [parameter.size_of(v) for v in values]
    return {size: [s[size] for s in sizes] for size in sizes[0]}


def undeclared_sizes(kernel, name, trained) -> dict:
    """The trained values of a choice's sizes that none of its choices stands for.

    A model trained on points that recorded sizes of their own (NPB BT at a step
    count of the user's, whose ``cell_steps`` is no class's) cannot take a class by
    its name: the class stands for its own sizes, not for what the points ran.

    Parameters
    ----------
    kernel : str or None
        The kernel the models were trained on.
    name : str
        The choice (``class``).
    trained : dict of str to list of float
        The trained values of each parameter (a fit's ``training["parameters"]``).

    Returns
    -------
    dict of str to list of float
        Per size, the trained values no choice declares (empty: every one is a
        choice's own).

    Examples
    --------
    >>> undeclared_sizes("npb.bt", "class", {"cell_steps": [103680.0, 2764800.0]})
    {}
    >>> undeclared_sizes("npb.bt", "class", {"cell_steps": [8640.0, 2764800.0]})
    {'cell_steps': [8640.0]}
    """
    parameter = ordered_parameters(kernel).get(name)
    if parameter is None:
        return {}
    declared = [parameter.size_of(choice) for choice in parameter.choices]
    out = {}
    for size in declared[0]:
        known = np.array([d[size] for d in declared], dtype=float)
        odd = [
            float(v)
            for v in trained.get(size, ())
            if not np.isclose(known, float(v), rtol=1e-9).any()
        ]
        if odd:
            out[size] = odd
    return out
