"""Part laws at a problem size or application parameter that was not measured.

:class:`~scaleprobe.models.TrafficModel` fits its part laws per configuration group:
``scale``, ``ppn`` and every application parameter the sweep varies. A group that
was not measured, but differs from measured ones in one column only (a larger
``scale``, more ``points``), is reached along that column: at the requested node
counts every part is carried from the nearest measured value ``b`` by a power law in
the *size* ``x`` (``2**scale`` for ``scale``, the value itself for an application
parameter)::

    part(n, x) = part(n, x_b) * (x / x_b) ** k

Its exponent ``k`` is measured where both sizes were measured, not where the laws
extrapolate: the mean of ``log(part_b / part_a) / log(x_b / x_a)`` over the two largest
multi-node counts measured at ``b`` and at the next value ``a`` (the two largest beyond
the range, the two that bracket it inside; one node has its own exponent). Counts and
computation grow as powers of the size (bytes as the edges, steps as a constant or a
logarithm, divided work as the size), so the local exponent carries them. With a
third measured value further in, the exponent of the next pair checks it: the
interval is widened by ``(x / x_b) ** |k - k_next|``, the disagreement of the two
exponents continued over the distance. With only two values nothing checks it, and
the model says so.
"""

from __future__ import annotations

import numpy as np

__all__ = ["axis_pairs", "continue_along", "size_exponents", "size_of"]


def size_of(column, value):
    """The size a value of ``column`` stands for: ``2**scale`` or the value itself.

    Parameters
    ----------
    column : str
    value : float

    Returns
    -------
    float

    Examples
    --------
    >>> size_of("scale", 10), size_of("points", 4096.0)
    (1024.0, 4096.0)
    """
    value = float(value)
    return float(np.exp2(value)) if column == "scale" else value


def axis_pairs(key, measured, columns):
    """How to reach an unmeasured group from measured ones along one column.

    Parameters
    ----------
    key : tuple
        The group asked for (values of ``columns``).
    measured : iterable of tuple
        The measured groups.
    columns : tuple of str
        Names of the group columns.

    Returns
    -------
    column : str
        The column along which the groups differ.
    near : tuple of (tuple, tuple)
        The two measured groups the power law goes through, the nearer to ``key``
        (in size) second.
    far : tuple of (tuple, tuple) or None
        The next pair inward when ``key`` lies beyond the measured values and a
        third one exists (it checks the exponent); None otherwise.
    inside : bool
        Whether ``key`` lies between measured values (interpolation).

    Raises
    ------
    ValueError
        When no column has two measured groups that differ from ``key`` in it alone,
        or a size along it is not positive.
    """
    key = tuple(float(k) for k in key)
    measured = [tuple(float(k) for k in m) for m in measured]
    for index, column in enumerate(columns):
        along = sorted(
            {
                m[index]: m
                for m in measured
                if all(m[j] == key[j] for j in range(len(key)) if j != index)
            }.items()
        )
        if len(along) < 2:
            continue
        sizes = [size_of(column, value) for value, _ in along] + [
            size_of(column, key[index])
        ]
        if min(sizes) <= 0:
            raise ValueError(
                f"{column} must be positive to follow a size law along it; got "
                f"{[value for value, _ in along] + [key[index]]}"
            )
        groups = [group for _, group in along]
        values = [value for value, _ in along]
        target = key[index]
        if target > values[-1]:
            near = (groups[-2], groups[-1])
            far = (groups[-3], groups[-2]) if len(groups) > 2 else None
            return column, near, far, False
        if target < values[0]:
            near = (groups[1], groups[0])
            far = (groups[2], groups[1]) if len(groups) > 2 else None
            return column, near, far, False
        upper = int(np.searchsorted(values, target))
        below, above = groups[upper - 1], groups[upper]
        closer_above = abs(values[upper] - target) <= abs(target - values[upper - 1])
        near = (below, above) if closer_above else (above, below)
        return column, near, None, True
    raise ValueError(
        "it differs from every measured group in more than one of "
        f"{list(columns)}, or along a column with fewer than two measured values"
    )


def size_exponents(first, second, x1, x2):
    """Each part's exponent in the size, measured where both groups were measured.

    Parameters
    ----------
    first, second : pandas.DataFrame
        Mean part values per node count (index) of two measured groups.
    x1, x2 : float
        Their sizes.

    Returns
    -------
    dict
        ``{part: (multi_node, single_node)}``: the mean of ``log(second / first) /
        log(x2 / x1)`` over the two largest multi-node counts measured in both, and
        the same on one node; NaN where no common positive value exists.
    """
    common = first.index.intersection(second.index)
    out = {}
    for part in second.columns:
        a = first.loc[common, part].astype(float)
        b = second.loc[common, part].astype(float)
        ok = (a > 0) & (b > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.log(b / a) / np.log(x2 / x1)
        multi = k[ok & (common > 1)].sort_index()
        single = k[ok & (common <= 1)]
        out[part] = (
            float(multi.iloc[-2:].mean()) if multi.size else float("nan"),
            float(single.iloc[0]) if single.size else float("nan"),
        )
    return out


def continue_along(values, nodes, x_near, x, exponents, far=None):
    """Carry the nearest measured group's parts to the size asked for.

    Parameters
    ----------
    values : dict
        The nearest measured group's part values at the rows asked for: part ->
        array of shape (3, n) (low, mid, high).
    nodes : ndarray of shape (n,)
        Node counts of the rows (one node has its own exponent).
    x_near, x : float
        Size of the nearest measured group, and the size asked for.
    exponents : dict
        :func:`size_exponents` of the pair through the nearest group.
    far : dict, default=None
        :func:`size_exponents` of the next pair inward: the difference of the two
        exponents, continued over the distance, widens the interval.

    Returns
    -------
    dict
        Part -> array of shape (3, n). A part whose exponent is unknown (zero in
        one group) keeps the nearest group's values.
    """
    distance = np.log(x / x_near)
    alone = nodes <= 1
    out = {}
    for part, rows in values.items():
        multi, single = exponents.get(part, (np.nan, np.nan))
        k = np.where(alone, single, multi)
        k = np.where(np.isfinite(k), k, 0.0)
        rows = np.asarray(rows, dtype=float) * np.exp(k * distance)
        if far is not None:
            other = np.where(alone, *far.get(part, (np.nan, np.nan))[::-1])
            gap = np.where(np.isfinite(other), np.abs(k - other), 0.0)
            spread = np.exp(gap * abs(distance))
            rows[0] = rows[0] / spread
            rows[2] = rows[2] * spread
        out[part] = rows
    return out
