"""The part laws of :class:`~scaleprobe.models.TrafficModel`, per configuration group.

A group is one combination of ``scale``, ``ppn`` and the application parameters the
sweep varies. :func:`fit_group` fits one law per part of the critical path
(computation seconds, latency-bound steps, bytes through the busiest interface,
intra-node seconds, and, where the kernel split them, the rounds of tree-shaped and
linear collectives); :func:`part_values` evaluates them row by row, reaching a group
that was not measured along the one column it differs in
(:mod:`scaleprobe.models.traffic.axes`).
"""

from __future__ import annotations

import numpy as np

from ..core.configs import configuration_keys
from ..core.warnings import ExtrapolationWarning, quiet, warn
from ..laws.pmnf import PMNFSearch
from ..laws.rounds import RoundLaw
from .axes import (
    axis_pairs,
    choose_forms,
    continue_along,
    size_exponents,
    size_of,
)

__all__ = [
    "COMPUTATION_LAWS",
    "COUNT_EXPONENTS",
    "COUNT_LAWS",
    "LATENCY_PARTS",
    "PARTS",
    "fit_group",
    "group_columns",
    "group_key",
    "part_values",
]

#: Terms of the count laws: counts come from algorithms whose costs are built of
#: ``1``, ``log2 p``, ``sqrt p``, ``p`` and ``p log2 p`` (and their inverses).
COUNT_EXPONENTS = ("1/2", "1")
COUNT_LAWS = {"exponents": COUNT_EXPONENTS, "log_exponents": (0, 1)}

#: Terms of the computation law: a serial part, the divided work ``1/p`` (nothing
#: falls faster) and overheads growing as ``log2 p``, ``p`` or ``p log2 p``.
COMPUTATION_LAWS = {"exponents": ("1",), "log_exponents": (0, 1), "falling": ("1/p",)}

PARTS = ("computation", "latency", "bandwidth", "intra", "tree", "linear")
#: Parts counted in latency-bound steps (priced by the link's latency).
LATENCY_PARTS = ("latency", "tree", "linear")
_FIRST_GROUP_COLUMNS = ("scale", "ppn")
#: Columns that are not group keys: the law's variable, the priced link, the size
#: ``D`` (another name for ``scale``).
_NOT_GROUPS = ("nodes", "ranks", "bandwidth", "D")


def group_columns(runs):
    """``scale``, ``ppn``, then every application parameter of the sweep.

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run, configuration columns only.

    Returns
    -------
    tuple of str
    """
    keys = [c for c in configuration_keys(runs) if c not in _NOT_GROUPS]
    return tuple(
        [c for c in _FIRST_GROUP_COLUMNS if c in keys]
        + [c for c in keys if c not in _FIRST_GROUP_COLUMNS]
    )


def group_key(values):
    """A group key with numbers as floats (as the laws are stored).

    Parameters
    ----------
    values : iterable

    Returns
    -------
    tuple

    Examples
    --------
    >>> group_key((12, "bfs", 1))
    (12.0, 'bfs', 1.0)
    """
    out = []
    for value in values:
        try:
            out.append(float(value))
        except (TypeError, ValueError):
            out.append(value)
    return tuple(out)


def fit_group(runs, parts, where, *, over, max_terms):
    """The part laws of one configuration group.

    Parameters
    ----------
    runs : pandas.DataFrame
        The group's runs (``nodes`` and ``over``).
    parts : pandas.DataFrame
        Their parts (columns of :data:`PARTS`), row for row.
    where : str
        The group, for error messages.
    over : {"nodes", "ranks"}
        Variable of the laws.
    max_terms : int
        Largest number of non-constant terms of a searched law.

    Returns
    -------
    dict
        ``{part: law or None, "single_node": float or None}`` (see
        :attr:`TrafficModel.laws_ <scaleprobe.models.TrafficModel>`).

    Raises
    ------
    ValueError
        A part with traffic at fewer than two multi-node node counts.
    """
    variable = runs[over].astype(float).to_numpy()
    multi = runs["nodes"].to_numpy(dtype=float) > 1
    laws = {}
    single = parts["computation"].to_numpy(dtype=float)[~multi]
    # One node runs another code path (no exchange at all): its computation is
    # kept as measured, and the laws describe two nodes and more.
    laws["single_node"] = (
        float(np.exp(np.mean(np.log(single)))) if single.size else None
    )
    for part in PARTS:
        if part not in parts:
            continue
        values = parts[part].to_numpy(dtype=float)
        rows = multi & (values > 0)
        if part != "computation" and not rows.any():
            laws[part] = None  # no such traffic in the data (e.g. ppn = 1 intra)
            continue
        if part in ("tree", "linear"):
            if np.unique(variable[multi]).size < 2:
                raise ValueError(
                    f"{where}: collective rounds need two or more multi-node "
                    f"node counts; got {np.unique(runs['nodes'][multi]).tolist()}"
                )
            laws[part] = RoundLaw(shape=part).fit(
                variable[multi].reshape(-1, 1), values[multi]
            )
            continue
        if np.unique(variable[rows]).size < 2:
            raise ValueError(
                f"{where}: the {part} part needs measurements at two or more "
                f"multi-node node counts; got {np.unique(runs['nodes'][rows]).tolist()}"
            )
        with quiet():  # a part's few node counts are the model's own affair
            laws[part] = PMNFSearch(
                parameter="ranks",
                max_terms=max_terms,
                family_interval=False,
                **(COMPUTATION_LAWS if part == "computation" else COUNT_LAWS),
            ).fit(variable[rows].reshape(-1, 1), values[rows])
    return laws


def part_values(model, frame, level=None):
    """The fitted model's part laws evaluated row by row.

    Parameters
    ----------
    model : TrafficModel
        Fitted in traffic mode.
    frame : pandas.DataFrame
        ``nodes``, ``ppn`` (default 1) and the model's group columns.
    level : float, default=None
        Level of the part laws' intervals; None gives the point for all three.

    Returns
    -------
    dict
        ``{part: ndarray of shape (3, n_rows)}``: lower, point, upper.
    """
    out = {part: np.zeros((3, len(frame))) for part in PARTS}
    columns = model.group_columns_
    keys = (
        [group_key(k) for k in zip(*(frame[c] for c in columns), strict=True)]
        if columns
        else [()] * len(frame)
    )
    nodes = frame["nodes"].to_numpy(dtype=float)
    ppn = frame["ppn"].to_numpy(dtype=float) if "ppn" in frame else np.ones(len(frame))
    variable = nodes if model.over == "nodes" else nodes * ppn
    for key in dict.fromkeys(keys):
        rows = np.array([k == key for k in keys])
        laws = model.laws_.get(key)
        if laws is not None:
            values = _evaluate(laws, variable[rows], nodes[rows], level)
        else:
            values = _along(model, key, variable[rows], nodes[rows], level)
        for part, value in values.items():
            out[part][:, rows] = value
    return out


def _evaluate(laws, variable, nodes, level):
    """One measured group's parts at these rows: part -> (3, rows) array."""
    out = {part: np.zeros((3, variable.size)) for part in PARTS}
    single = laws["single_node"]
    use, alone = nodes > 1, nodes <= 1
    for part in PARTS:
        law = laws.get(part)
        if law is None:
            continue
        if part == "computation" and alone.any():
            out[part][:, alone] = (
                single
                if single is not None
                else law.predict(variable[alone].reshape(-1, 1))
            )
        if not use.any():
            continue
        p = variable[use].reshape(-1, 1)
        mid = law.predict(p)
        if level is not None:
            low, high = law.predict_interval(p, level=level)
        else:
            low = high = mid
        out[part][:, use] = np.vstack([low, mid, high])
    return out


def _along(model, key, variable, nodes, level):
    """An unmeasured group, reached along the one column it differs in."""
    columns, laws = model.group_columns_, model.laws_
    where = dict(zip(columns, key, strict=True))
    if not hasattr(model, "part_means_"):  # written before they were stored
        raise ValueError(
            f"{where} was not measured; this model knows {columns} "
            f"in {sorted(laws)} (refit it to reach other sizes)"
        )
    try:
        column, near, far, inside = axis_pairs(key, list(laws), columns)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"{where} was not measured, and the traffic model cannot reach it: "
            f"{error}; it knows {columns} in {sorted(laws)}"
        ) from None
    index = columns.index(column)

    def exponents(pair):
        first, second = pair
        return size_exponents(
            model.part_means_[first],
            model.part_means_[second],
            size_of(column, first[index]),
            size_of(column, second[index]),
        )

    if far is None and not inside:
        measured = sorted(group[index] for group in near)
        warn(
            f"traffic: {column} = {key[index]:g} was not measured: every part "
            f"follows the power law in the size through {column} = "
            f"{measured[0]:g} and {measured[1]:g}, and no third value checks it",
            ExtrapolationWarning,
            stacklevel=5,
        )
    sizes = tuple(size_of(column, group[index]) for group in near)
    forms = None
    if far is not None:
        forms = choose_forms(
            exponents(far),
            exponents(near),
            (size_of(column, far[0][index]), *sizes),
        )
    return continue_along(
        _evaluate(laws[near[1]], variable, nodes, level),
        nodes,
        sizes,
        size_of(column, key[index]),
        exponents(near),
        far=None if far is None else exponents(far),
        forms=forms,
    )
