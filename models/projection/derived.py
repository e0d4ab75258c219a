"""Answers derived from a fitted scaling law: CTI, bandwidth demand, crossover, TEPS."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ..core.features import prediction_frame
from ..core.interface import frame_defaults_of

__all__ = [
    "bandwidth_demand",
    "completion_time_increment",
    "crossover_nodes",
    "diminishing_returns_nodes",
    "parallel_efficiency",
    "speedup",
    "teps",
]

#: Graph500's edge factor: a graph of scale s has 16 * 2**s edges.
EDGEFACTOR = 16


def _frame(model, nodes, bandwidth, scale, ppn=None, params=None):
    defaults = frame_defaults_of(model)
    ppn = ppn if ppn is not None else (defaults["ppn"] or 1)
    frame = prediction_frame(nodes, ppn=ppn, scale=scale, s0=float(defaults["s0"]))
    frame["bandwidth"] = np.broadcast_to(
        np.asarray(bandwidth, dtype=float), frame["nodes"].shape
    )
    for name, value in (params or {}).items():
        frame[name] = float(np.asarray(value, dtype=float).reshape(-1)[0])
    return frame


def completion_time_increment(
    model, nodes, bandwidth, *, scale=None, ppn=None, params=None
):
    """Completion-time increment ``CTI_bw`` of Eq. 4 of Medya et al. 2017.

    ``CTI_bw = (CT(bw) - CT(100)) / CT(100)``: how much slower the program is at
    ``bandwidth`` percent of the link than with the full link.

    Parameters
    ----------
    model : fitted estimator
        Any model predicting from a feature frame (``nodes``, ``bandwidth``...).
    nodes : int or array-like
    bandwidth : float or array-like
        Available bandwidth in percent of the link.
    scale : float, default=None
        Problem scale, for models with a data-size term.
    ppn : float, default=None
        Processes per node for the ``ranks`` column (default: the model's ``ppn``).
    params : dict of str to float, default=None
        Values of application parameters the model was trained over (``points``...).

    Returns
    -------
    ndarray
        The increment as a fraction (0.25 means 25 % slower).

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> m = ScalingLaw.from_coefficients("refined", [1.0, 1.0], alpha=2.0)
    >>> round(float(completion_time_increment(m, 1, 50)[0]), 4)
    0.6667
    """
    full = model.predict(_frame(model, nodes, 100.0, scale, ppn, params))
    slow = model.predict(_frame(model, nodes, bandwidth, scale, ppn, params))
    return (slow - full) / full


def bandwidth_demand(
    model, nodes, cti, *, scale=None, ppn=None, lowest=1.0, params=None
):
    """Bandwidth demand ``BW_{CTI,n}``: the smallest bandwidth (percent) within a CTI.

    Parameters
    ----------
    model : fitted estimator
    nodes : int or array-like
    cti : float
        Admissible completion-time increment as a fraction (0.1 for 10 %).
    scale, ppn, params : see :func:`completion_time_increment`
    lowest : float, default=1.0
        Lowest bandwidth percentage considered; returned when even it meets ``cti``.

    Returns
    -------
    ndarray
        Bandwidth percentage per node count.

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> m = ScalingLaw.from_coefficients("refined", [1.0, 1.0], alpha=2.0)
    >>> round(float(bandwidth_demand(m, 1, 1.0)[0]), 3)
    43.068
    """
    if not cti >= 0:
        raise ValueError(f"cti must be a non-negative fraction; got {cti!r}")
    nodes = np.atleast_1d(np.asarray(nodes, dtype=float))
    # CTI falls as bandwidth grows, so bisect all node counts at once (60 halvings
    # bring the bracket [lowest, 100] below 1e-13 percent).
    low = np.full(nodes.shape, float(lowest))
    high = np.full(nodes.shape, 100.0)
    where = {"scale": scale, "ppn": ppn, "params": params}
    done = completion_time_increment(model, nodes, low, **where) <= cti
    for _ in range(60):
        middle = 0.5 * (low + high)
        within = completion_time_increment(model, nodes, middle, **where) <= cti
        high = np.where(within, middle, high)
        low = np.where(within, low, middle)
    return np.where(done, float(lowest), high)


def _candidates(admissible, max_nodes):
    if admissible is None:
        return np.arange(1, int(max_nodes) + 1, dtype=float)
    if isinstance(admissible, Callable):
        counts = np.arange(1, int(max_nodes) + 1)
        try:  # a predicate written with arithmetic works on the whole array at once
            keep = np.asarray(admissible(counts), dtype=bool)
        except (TypeError, ValueError):
            keep = None
        if keep is None or keep.shape != counts.shape:
            keep = np.array([bool(admissible(int(n))) for n in counts])
        return counts[keep].astype(float)
    if isinstance(admissible, Iterable):
        return np.unique(np.asarray(list(admissible), dtype=float))
    raise TypeError(
        f"admissible must be None, an iterable of node counts or a "
        f"predicate; got {type(admissible).__name__}"
    )


def crossover_nodes(
    model, *, bandwidth=100, scale=None, admissible=None, max_nodes=10**6, ppn=None
):
    """Smallest node count at which communication is at least computation.

    Parameters
    ----------
    model : PerformanceModel
        Fitted; one whose :meth:`~scaleprobe.models.PerformanceModel.
        predict_components` split computation and communication (a scaling law,
        the traffic-informed model, FiM).
    bandwidth : float, default=100
    scale : float, default=None
    admissible : iterable of int or callable, default=None
        Node counts allowed, e.g. ``lambda n: (18 * n / 2) ** 0.5 % 1 == 0`` for
        Graph500's ``2 p**2`` process counts with 18 ranks per node (Table V).
    max_nodes : int, default=10**6
        Search limit when ``admissible`` is None or a predicate.
    ppn : float, default=None

    Returns
    -------
    int or None
        None when communication never dominates within the candidates.

    Raises
    ------
    ValueError
        The model does not split its prediction into the two.

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> m = ScalingLaw.from_coefficients("base", [138.59, 4.004], ppn=18)
    >>> crossover_nodes(m, admissible=lambda n: ((18 * n / 2) ** 0.5) % 1 == 0)
    81
    """
    nodes = _candidates(admissible, max_nodes)
    parts = model.predict_components(_frame(model, nodes, bandwidth, scale, ppn))
    if not {"computation", "communication"} <= set(parts.columns):
        raise ValueError(
            f"{type(model).__name__} does not split its prediction into computation "
            "and communication: it has no crossover (use a scaling law)"
        )
    hit = np.flatnonzero(
        parts["communication"].to_numpy() >= parts["computation"].to_numpy()
    )
    return int(nodes[hit[0]]) if hit.size else None


def teps(time, scale, *, edgefactor=EDGEFACTOR):
    """Traversed edges per second, ``edgefactor * 2**scale / time``.

    Examples
    --------
    >>> float(teps(2.0, 20))
    8388608.0
    """
    return edgefactor * np.exp2(np.asarray(scale, dtype=float)) / np.asarray(time)


def speedup(time, baseline_time):
    """Speedup ``T(baseline) / T``.

    Examples
    --------
    >>> float(speedup(2.0, 8.0))
    4.0
    """
    return np.asarray(baseline_time, dtype=float) / np.asarray(time, dtype=float)


def parallel_efficiency(time, nodes, baseline_time, baseline_nodes):
    """Parallel efficiency ``T0 * n0 / (T * n)`` relative to a baseline run.

    Examples
    --------
    >>> float(parallel_efficiency(2.0, 8, 8.0, 1))
    0.5
    """
    return (
        np.asarray(baseline_time, dtype=float)
        * baseline_nodes
        / (np.asarray(time, dtype=float) * np.asarray(nodes, dtype=float))
    )


def diminishing_returns_nodes(
    model,
    *,
    fraction=0.05,
    factor=2.0,
    bandwidth=100,
    scale=None,
    start=1,
    max_nodes=10**6,
    ppn=None,
):
    """First node count beyond which growing by ``factor`` gains less than ``fraction``.

    Starting from ``start`` nodes and multiplying by ``factor``, returns the first
    ``n`` with ``(T(n) - T(factor * n)) / T(n) < fraction``.

    Returns
    -------
    int or None

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> m = ScalingLaw.from_coefficients(["1/p", "1"], [100.0, 1.0])
    >>> diminishing_returns_nodes(m, fraction=0.05)
    1024
    """
    if not factor > 1:
        raise ValueError(f"factor must be > 1; got {factor!r}")
    nodes = [float(start)]
    while nodes[-1] * factor <= max_nodes:
        nodes.append(nodes[-1] * factor)
    nodes = np.round(nodes)
    time = model.predict(_frame(model, nodes, bandwidth, scale, ppn))
    gain = (time[:-1] - time[1:]) / time[:-1]
    hit = np.flatnonzero(gain < fraction)
    return int(nodes[hit[0]]) if hit.size else None
