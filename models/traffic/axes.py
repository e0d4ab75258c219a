"""Part laws at a problem size or application parameter that was not measured.

:class:`~scaleprobe.models.TrafficModel` fits its part laws per configuration group:
``scale``, ``ppn`` and every application parameter the sweep varies. A group that
was not measured, but differs from measured ones in one column only (a larger
``scale``, more ``points``), is reached along that column: at the requested node
counts every part is carried from the nearest measured value ``b`` to the size ``x``
(``2**scale`` for ``scale``, the work of one thread ``1 / threads`` for ``threads``,
the value itself for an application parameter) by one of
two laws through ``b`` and the next value ``a``: a power of the size, or a fixed cost
plus a cost per unit of size (the line through them)::

    power:   part(n, x) = part(n, x_b) * (x / x_b) ** k
    affine:  part(n, x) = part(n, x_b) * (1 + (1 - r**-1) * (x - x_b) / (x_b - x_a))

with ``r = (x_b / x_a) ** k`` the measured ratio ``part_b / part_a``. The exponent ``k``
is measured where both sizes were measured, not where the laws extrapolate: the mean
of ``log(part_b / part_a) / log(x_b / x_a)`` over the two largest multi-node counts
both have (the two largest values beyond the range, the two that bracket it inside;
one node has its own exponent). Counts and computation grow as powers of the size
(bytes as the edges, divided work as the size), or carry a fixed part that small
sizes show (per-iteration overheads, a constant number of steps).

A third measured value further in checks them: the form that carries the inner pair
to ``b`` best gives the point, per part, and the difference of the two pairs'
exponents, continued over the distance, widens the interval by
``(x / x_b) ** |k - k_next|``. The interval always holds both forms. With only two
values nothing checks them: the point is the power law, and the model says so.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "FORMS",
    "axis_pairs",
    "choose_forms",
    "continue_along",
    "size_exponents",
    "size_of",
]


def size_of(column, value):
    """The size a value of ``column`` stands for: ``2**scale``, ``1 / threads`` (the
    share of a rank's work one thread does: the affine law through it is Amdahl's,
    a serial part plus a part divided by the threads) or the value itself.

    Parameters
    ----------
    column : str
    value : float

    Returns
    -------
    float

    Examples
    --------
    >>> size_of("scale", 10), size_of("points", 4096.0), size_of("threads", 4)
    (1024.0, 4096.0, 0.25)
    """
    value = float(value)
    if column == "threads":
        return 1.0 / value if value > 0 else 0.0
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


#: Laws of a part in the size through two measured sizes: a power of the size, or a
#: fixed cost plus a cost per unit of size.
FORMS = ("power", "affine")


def _factor(form, k, x_a, x_b, x):
    """part(x) / part(x_b) under ``form``, given part(x_b) / part(x_a) = (x_b/x_a)**k.

    The affine form is the line through both measured points, never below zero.
    """
    k = np.asarray(k, dtype=float)
    if form == "power":
        return np.exp(k * np.log(x / x_b))
    ratio = np.exp(k * np.log(x_b / x_a))  # part(x_b) / part(x_a)
    return np.maximum(1.0 + (1.0 - 1.0 / ratio) * (x - x_b) / (x_b - x_a), 0.0)


def choose_forms(far, near, sizes):
    """Per part, the form that carries the inner pair to the next size best.

    Parameters
    ----------
    far, near : dict
        :func:`size_exponents` of the inner pair ``(x0, x1)`` and of the pair
        ``(x1, x2)``.
    sizes : tuple of float
        ``(x0, x1, x2)``.

    Returns
    -------
    dict
        ``{part: (multi_node_form, single_node_form)}``, each one of :data:`FORMS`:
        the one whose factor from ``x1`` to ``x2``, with the exponent of the inner
        pair, lies nearer (in log) to the factor measured.
    """
    x0, x1, x2 = sizes
    out = {}
    for part, pair in near.items():
        chosen = []
        for index, measured in enumerate(pair):
            inner = far.get(part, (np.nan, np.nan))[index]
            if not (np.isfinite(inner) and np.isfinite(measured)):
                chosen.append("power")
                continue
            actual = measured * np.log(x2 / x1)
            misses = [
                abs(np.log(max(_factor(f, inner, x0, x1, x2), 1e-300)) - actual)
                for f in FORMS
            ]
            chosen.append(FORMS[int(np.argmin(misses))])
        out[part] = tuple(chosen)
    return out


def continue_along(values, nodes, sizes, x, exponents, far=None, forms=None):
    """Carry the nearest measured group's parts to the size asked for.

    Parameters
    ----------
    values : dict
        The nearest measured group's part values at the rows asked for: part ->
        array of shape (3, n) (low, mid, high).
    nodes : ndarray of shape (n,)
        Node counts of the rows (one node has its own exponent).
    sizes : tuple of float
        ``(x_a, x_b)``: the other size of the pair, and the nearest one's.
    x : float
        The size asked for.
    exponents : dict
        :func:`size_exponents` of the pair.
    far : dict, default=None
        :func:`size_exponents` of the next pair inward: the difference of the two
        exponents, continued over the distance, widens the interval.
    forms : dict, default=None
        :func:`choose_forms`; default: a power law for every part.

    Returns
    -------
    dict
        Part -> array of shape (3, n). The point follows the chosen form; the
        interval holds both forms. A part whose exponent is unknown (zero in one
        group) keeps the nearest group's values.
    """
    x_a, x_near = sizes
    distance = np.log(x / x_near)
    alone = nodes <= 1
    out = {}
    for part, rows in values.items():
        multi, single = exponents.get(part, (np.nan, np.nan))
        k = np.where(alone, single, multi)
        k = np.where(np.isfinite(k), k, 0.0)
        chosen = (forms or {}).get(part, ("power", "power"))
        factors = {form: _factor(form, k, x_a, x_near, x) for form in FORMS}
        point = np.where(alone, factors[chosen[1]], factors[chosen[0]])
        rows = np.asarray(rows, dtype=float) * point
        base = np.asarray(values[part], dtype=float)[1]
        for factor in factors.values():  # both forms belong in the interval
            rows[0] = np.minimum(rows[0], base * factor)
            rows[2] = np.maximum(rows[2], base * factor)
        if far is not None:
            other = np.where(alone, *far.get(part, (np.nan, np.nan))[::-1])
            gap = np.where(np.isfinite(other), np.abs(k - other), 0.0)
            spread = np.exp(gap * abs(distance))
            rows[0] = rows[0] / spread
            rows[2] = rows[2] * spread
        out[part] = rows
    return out
