"""Words and ticks of the figures: quantities with their units, the network, counts.

Every figure names what it shows the way a person reads it: a link as ``1 Gbit/s``
and a latency as ``5 µs`` (not 125000000.0 and 5e-06), ``1 node`` but ``2 nodes``,
node counts on a log axis as plain numbers that do not run into each other.
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

__all__ = [
    "count_label",
    "format_duration",
    "format_rate",
    "network_label",
    "nodes_axis",
    "same_network",
]

_RATE_PREFIXES = ((1e12, "Tbit/s"), (1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s"))
_DURATION_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def _number(value: float) -> str:
    """At most three significant digits, no trailing zeros."""
    return f"{value:.3g}"


def format_rate(bytes_per_second) -> str:
    """A link bandwidth in bits per second with its prefix.

    Parameters
    ----------
    bytes_per_second : float

    Returns
    -------
    str

    Examples
    --------
    >>> format_rate(1.25e8), format_rate(1.25e10), format_rate(5e2)
    ('1 Gbit/s', '100 Gbit/s', '4 kbit/s')
    """
    bits = 8.0 * float(bytes_per_second)
    for factor, unit in _RATE_PREFIXES:
        if bits >= factor:
            return f"{_number(bits / factor)} {unit}"
    return f"{_number(bits)} bit/s"


def format_duration(seconds) -> str:
    """A duration (a latency) with the unit that keeps its number readable.

    Parameters
    ----------
    seconds : float

    Returns
    -------
    str

    Examples
    --------
    >>> format_duration(5e-6), format_duration(1.5e-3), format_duration(0)
    ('5 µs', '1.5 ms', '0 s')
    """
    seconds = float(seconds)
    if seconds == 0:
        return "0 s"
    for factor, unit in _DURATION_UNITS:
        if abs(seconds) >= factor:
            return f"{_number(seconds / factor)} {unit}"
    return f"{_number(seconds / 1e-9)} ns"


def _known(link) -> bool:
    return bool(link) and all(
        isinstance(link.get(k), (int, float)) and math.isfinite(link[k])
        for k in ("link_bandwidth", "latency")
    )


def network_label(link) -> str:
    """The network a projection is for, in words, or ``"link unknown"``.

    Parameters
    ----------
    link : dict or None
        ``link_bandwidth`` (bytes/s at 100 %) and ``latency`` (s).

    Returns
    -------
    str

    Examples
    --------
    >>> network_label({"link_bandwidth": 1.25e8, "latency": 5e-6})
    '1 Gbit/s links, 5 µs latency'
    """
    if not _known(link):
        return "link unknown"
    return (
        f"{format_rate(link['link_bandwidth'])} links, "
        f"{format_duration(link['latency'])} latency"
    )


def same_network(one, other) -> bool:
    """Whether two links are the same network (both known and equal to 0.1 %).

    Examples
    --------
    >>> same_network({"link_bandwidth": 1e9, "latency": 1e-6},
    ...              {"link_bandwidth": 1e9, "latency": 1e-6})
    True
    """
    if not (_known(one) and _known(other)):
        return False
    return all(
        math.isclose(one[k], other[k], rel_tol=1e-3, abs_tol=1e-12)
        for k in ("link_bandwidth", "latency")
    )


def count_label(count, thing="node") -> str:
    """``1 node``, ``2 nodes``, ``1.5 nodes``.

    Examples
    --------
    >>> count_label(1), count_label(8), count_label(1, "run")
    ('1 node', '8 nodes', '1 run')
    """
    return f"{float(count):g} {thing}{'' if float(count) == 1 else 's'}"


def nodes_axis(ax, values, *, axis="x", label="nodes (count)"):
    """A log axis of node counts: plain numbers at powers of two, never crowded.

    At most eight labelled ticks: every power of two when they fit, every second
    or fourth one otherwise; minor ticks carry no label.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    values : array-like
        The node counts the axis shows (its range).
    axis : {"x", "y"}, default="x"
    label : str, default="nodes (count)"
    """
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values > 0)]
    low, high = (values.min(), values.max()) if values.size else (1.0, 2.0)
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    if last - first <= 3 and np.unique(values).size <= 8:
        ticks = sorted(set(values.tolist()))  # a short range: the counts themselves
    else:
        step = 1
        while (last - first) // step + 1 > 8:
            step *= 2
        ticks = [2.0**k for k in range(first, last + 1, step)]
    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    target.set_major_locator(FixedLocator(ticks))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    target.set_minor_formatter(NullFormatter())
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)
