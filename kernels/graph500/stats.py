"""The Graph500 statistics block, computed as the reference 3.0 ``main.c`` does.

Order statistics average the two middle candidates
(``(x[(n-1)//4] + x[n//4]) / 2`` and so on), the standard deviation divides by n - 1,
and TEPS statistics are taken on seconds per edge ``time / nedge`` and inverted: the
harmonic mean TEPS is ``1 / mean(time / nedge)`` and its standard deviation
``std(time / nedge) / (mean**2 * sqrt(n - 1))`` (Norris 1940, as in the reference).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["STAT_NAMES", "format_block", "statistics", "teps_statistics"]

STAT_NAMES = (
    "min",
    "firstquartile",
    "median",
    "thirdquartile",
    "max",
    "mean",
    "stddev",
)


def statistics(values) -> dict[str, float]:
    """Min, quartiles, max, mean and n-1 standard deviation, as the reference has them.

    Examples
    --------
    >>> statistics([4.0, 1.0, 3.0, 2.0])["median"]
    2.5
    """
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = x.size
    if n == 0:
        return dict.fromkeys(STAT_NAMES, math.nan)
    mean = float(x.mean())
    std = float(math.sqrt(((x - mean) ** 2).sum() / (n - 1))) if n > 1 else math.nan
    return {
        "min": float(x[0]),
        "firstquartile": float((x[(n - 1) // 4] + x[n // 4]) * 0.5),
        "median": float((x[(n - 1) // 2] + x[n // 2]) * 0.5),
        "thirdquartile": float((x[n - 1 - (n - 1) // 4] + x[n - 1 - n // 4]) * 0.5),
        "max": float(x[-1]),
        "mean": mean,
        "stddev": std,
    }


def teps_statistics(times, nedges) -> dict[str, float]:
    """TEPS order statistics, harmonic mean and harmonic standard deviation.

    Examples
    --------
    >>> s = teps_statistics([1.0, 2.0], [100.0, 100.0])
    >>> round(s["harmonic_mean"], 6), s["min"], s["max"]
    (66.666667, 50.0, 100.0)
    """
    per_edge = np.asarray(times, dtype=np.float64) / np.asarray(
        nedges, dtype=np.float64
    )
    s = statistics(per_edge)
    n = per_edge.size
    harmonic_std = (
        s["stddev"] / (s["mean"] ** 2 * math.sqrt(n - 1)) if n > 1 else math.nan
    )
    return {
        "min": 1.0 / s["max"],
        "firstquartile": 1.0 / s["thirdquartile"],
        "median": 1.0 / s["median"],
        "thirdquartile": 1.0 / s["firstquartile"],
        "max": 1.0 / s["min"],
        "harmonic_mean": 1.0 / s["mean"],
        "harmonic_stddev": harmonic_std,
    }


def _line(label: str, value: str) -> str:
    return f"{label + ':':<32}{value}"


def format_block(
    *,
    scale,
    edgefactor,
    nbfs,
    generation_time,
    ranks,
    construction_time,
    times,
    nedges,
    validate_times=None,
) -> str:
    """The reference 3.0 output block (with its ``bfs  `` prefixes and ``!`` marker).

    Parameters
    ----------
    scale, edgefactor, nbfs, ranks : int
        Run parameters.
    generation_time, construction_time : float
        Kernel times in seconds.
    times, nedges : sequence of float
        Per-BFS time and traversed edges.
    validate_times : sequence of float, optional
        Per-BFS validation time; ``-1`` entries when validation was off.

    Returns
    -------
    str
        The block, one ``key: value`` line per statistic.
    """
    lines = [
        _line("SCALE", f"{scale}"),
        _line("edgefactor", f"{edgefactor}"),
        _line("NBFS", f"{nbfs}"),
        _line("graph_generation", f"{generation_time:g}"),
        _line("num_mpi_processes", f"{ranks}"),
        _line("construction_time", f"{construction_time:g}"),
    ]
    time_stats = statistics(times)
    for name in STAT_NAMES:
        lines.append(_line(f"bfs  {name}_time", f"{time_stats[name]:g}"))
    edge_stats = statistics(nedges)
    for name in STAT_NAMES:
        lines.append(_line(f"{name}_nedge", f"{edge_stats[name]:.11g}"))
    teps = teps_statistics(times, nedges)
    for name in ("min", "firstquartile", "median", "thirdquartile", "max"):
        lines.append(_line(f"bfs  {name}_TEPS", f"{teps[name]:g}"))
    lines.append(f"{'bfs  harmonic_mean_TEPS:':<29}!  {teps['harmonic_mean']:g}")
    lines.append(_line("bfs  harmonic_stddev_TEPS", f"{teps['harmonic_stddev']:g}"))
    if validate_times is not None:
        validate_stats = statistics(validate_times)
        for name in STAT_NAMES:
            lines.append(_line(f"bfs  {name}_validate", f"{validate_stats[name]:g}"))
    return "\n".join(lines)
