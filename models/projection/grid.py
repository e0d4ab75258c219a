"""Project a fitted model onto new node counts, bandwidths, scales and networks."""

from __future__ import annotations

import contextlib
import json
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from ..core.features import prediction_frame
from ..core.interface import frame_defaults_of
from ..core.measured import measured_frame
from ..core.warnings import ExtrapolationWarning, PhysicalLimitWarning, warn
from .derived import EDGEFACTOR, teps

__all__ = [
    "CANNOT_TELL_RATIO",
    "cannot_tell_from",
    "measured_outside",
    "measured_spread",
    "project",
    "resolve_params",
    "resolve_ppn",
    "training_frame",
    "wide_nodes",
    "widen_to_measured",
]

_COORD_ATTRS = {
    "nodes": {"units": "1", "long_name": "nodes"},
    "bandwidth": {"units": "percent", "long_name": "share of the link bandwidth"},
    "scale": {"units": "1", "long_name": "problem scale (log2 of the vertices)"},
}
#: The scale of data measured outside scaleprobe: a parameter of their own.
_OUTSIDE_SCALE = {"units": "1", "long_name": "problem scale"}


def measured_outside(training):
    """Whether a fit's data were measured outside scaleprobe (a measurement file).

    Their laws are fitted and projected as any other's, but nothing of a kernel is
    known of them: no traversed edges per second, no vertices behind a scale, no
    computation and communication parts of a law.

    Parameters
    ----------
    training : dict or None
        Training metadata (``provenance``: the ``format`` of a measurement file,
        the ``kernel`` of a sweep).

    Returns
    -------
    bool

    Examples
    --------
    >>> measured_outside({"provenance": {"source": "runs.csv", "format": "csv"}})
    True
    >>> measured_outside({"provenance": {"kernel": "graph500"}})
    False
    """
    provenance = (training or {}).get("provenance") or {}
    return "format" in provenance and "kernel" not in provenance


def resolve_ppn(ppn, training):
    """Ranks per node of a projection: given, or the one the model was trained at.

    Parameters
    ----------
    ppn : float or None
    training : dict or None
        Training metadata (``ppn``: list of trained values, or None when unknown).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When the trained ppn is unknown or ambiguous and none is given.

    Examples
    --------
    >>> resolve_ppn(None, {"ppn": [4]})
    4.0
    """
    trained = (training or {}).get("ppn")
    if ppn is not None:
        if not float(ppn) > 0:
            raise ValueError(f"ppn must be positive; got {ppn!r}")
        if trained and float(ppn) not in [float(v) for v in trained]:
            warn(
                f"projecting at ppn {ppn:g}, but the model was trained at ppn "
                f"{trained}: the share of a node's link per rank changes",
                ExtrapolationWarning,
                stacklevel=3,
            )
        return float(ppn)
    if training is None:
        return 1.0
    if not trained:
        raise ValueError(
            "the model was fitted on process counts without a ppn (ranks per node): "
            "give ppn to project to node counts"
        )
    if len(trained) > 1:
        raise ValueError(
            f"the model was trained at several ppn {trained}: give ppn to project"
        )
    return float(trained[0])


def resolve_params(params, training):
    """The application parameters of a projection: given, or the trained values.

    A model fitted on a sweep over an application parameter (``points``,
    ``msg_bytes``...) predicts at a value of it; without one, a projection is made
    at every value the training measured.

    Parameters
    ----------
    params : dict of str to float or array-like, or None
    training : dict or None
        Training metadata (``parameters``: the trained values of each).

    Returns
    -------
    dict of str to ndarray

    Raises
    ------
    ValueError
        A parameter the models were not trained over.

    Examples
    --------
    >>> resolve_params(None, {"parameters": {"points": [1024.0, 4096.0]}})
    {'points': array([1024., 4096.])}
    """
    trained = (training or {}).get("parameters") or {}
    given = dict(params or {})
    # the iterations a point times: a class's own (NPB CG's class B runs 75, its
    # smaller classes 15), which a model takes per row, not as a regressor
    unknown = [name for name in given if name not in trained and name != "stages"]
    if unknown and training is not None:
        allowed = ", ".join(trained) or "none"
        raise ValueError(
            f"the models were not trained over {unknown[0]!r}; their application "
            f"parameters: {allowed}"
        )
    out = {}
    for name in [*trained, *[n for n in given if n not in trained]]:
        values = given.get(name, trained.get(name))
        out[name] = np.atleast_1d(np.asarray(values, dtype=float))
    return out


def training_frame(
    training, *, nodes, bandwidth=100.0, scale=None, ppn=None, link=None, params=None
):
    """A prediction frame at the training's ppn, ``s0`` and application parameters.

    Parameters
    ----------
    training : dict
        Training metadata (:attr:`~scaleprobe.models.EnsembleFit.training`).
    nodes : array-like
    bandwidth : float or array-like, default=100.0
    scale : float or array-like, default=None
    ppn : float, default=None
        Default: the trained one (:func:`resolve_ppn`).
    link : dict, default=None
    params : dict, default=None
        Default: the trained values (:func:`resolve_params`).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> training_frame({"ppn": [2], "s0": 25}, nodes=[4, 8])[["nodes", "ranks"]]
       nodes  ranks
    0    4.0    8.0
    1    8.0   16.0
    """
    return prediction_frame(
        nodes,
        ppn=resolve_ppn(ppn, training),
        bandwidth=bandwidth,
        scale=scale,
        s0=training.get("s0", 25),
        link=link,
        params=resolve_params(params, training),
    )


def _warn_outside(name, values, trained):
    if trained is None or values is None:
        return
    values = np.atleast_1d(np.asarray(values, dtype=float))
    low, high = trained
    outside = values[(values < low) | (values > high)]
    if outside.size:
        warn(
            f"{name} {outside.tolist()} lies outside the trained range "
            f"[{low:g}, {high:g}]: the projection extrapolates in {name}",
            ExtrapolationWarning,
            stacklevel=3,
        )


def _target_link(link, training, model):
    """Target network of a projection; a time-only law cannot take a new latency."""
    trained = (training or {}).get("link")
    if link is None:
        return trained, None
    link = {k: float(v) for k, v in link.items() if v is not None}
    prices = model.prices_link
    if trained is None and not prices:
        raise ValueError(
            "the training link is unknown: a projection to another network needs a "
            "model fitted on a Dataset that records its link"
        )
    merged = {**(trained or {}), **link}
    if not prices:
        if "latency" in link and trained and link["latency"] != trained["latency"]:
            raise ValueError(
                "a time-only law cannot be re-priced at another latency; only the "
                "traffic-informed model can (fit a Dataset with critical-path records)"
            )
        # A new link bandwidth becomes a percentage of the training link.
        return merged, merged["link_bandwidth"] / trained["link_bandwidth"]
    return merged, None


def measured_spread(training):
    """The spread of the measurements at every measured configuration of a fit.

    Read from the measured table a fit keeps (:func:`~scaleprobe.models.core.measured.
    measured_table`): each run is one measurement (its trials reduced to their
    median); the spread at a configuration is the lowest and the highest of its runs,
    over the coordinates a projection has (the process count, ``ppn``, ``bandwidth``,
    ``scale`` and the application parameters it projects over).

    Parameters
    ----------
    training : dict or None
        Training metadata with ``measured`` and ``parameters``.

    Returns
    -------
    keys : list of str
        The coordinates.
    rows : list of list of float
        Each configuration's key values, then its lowest and highest run.

    Examples
    --------
    >>> import pandas as pd
    >>> from scaleprobe.models.core.measured import measured_table
    >>> X = pd.DataFrame({"nodes": [1, 1, 1, 1, 2, 2], "run": [0, 0, 1, 1, 0, 1]})
    >>> measured_spread({"measured": measured_table(X, [1, 3, 4, 6, 2, 2.5])})
    (['nodes'], [[1.0, 2.0, 5.0], [2.0, 2.0, 2.5]])
    """
    frame = measured_frame(training)
    if frame is None:
        return [], []
    count = "nodes" if "nodes" in frame or "ranks" not in frame else "ranks"
    parameters = list((training or {}).get("parameters") or ())
    keys = [k for k in (count, "ppn", "bandwidth", "scale", *parameters) if k in frame]
    if not keys:  # no configuration to tell the measurements apart
        return [], []
    spread = frame.groupby(keys).agg(low=("low", "min"), high=("high", "max"))
    rows = spread.reset_index()[[*keys, "low", "high"]].astype(float)
    return keys, rows.to_numpy().tolist()


def _same_network(projection, training) -> bool:
    """Whether a projection is to the network the measurements were made on."""
    trained = (training or {}).get("link") or {}
    for key in ("link_bandwidth", "latency"):
        given = projection.attrs.get(key)
        if given is None or key not in trained or not np.isfinite(given):
            continue
        if not np.isclose(given, trained[key]):
            return False
    return True


def widen_to_measured(projection, training):
    """Widen a projection's interval at measured configurations to their spread.

    An interval of a model is calibrated on its errors, not on the run-to-run
    spread: at a measured configuration it could exclude every measurement there.
    The interval is never narrower than the measured runs (at the training's
    network and ppn; nothing changes elsewhere).

    Parameters
    ----------
    projection : xarray.Dataset
        Output of :func:`project` (changed in place).
    training : dict or None
        Training metadata with ``measured`` (the fit's measured table).

    Returns
    -------
    xarray.Dataset
        ``projection``.
    """
    keys, rows = measured_spread(training)
    target = projection.attrs.get("target", "time")
    lower = projection.get(f"{target}_lower")
    if not rows or lower is None or not _same_network(projection, training):
        return projection
    upper = projection[f"{target}_upper"]
    ppn = projection.attrs.get("ppn")
    if training.get("column") == "ranks" and not training.get("ppn"):
        keys = ["nodes" if key == "ranks" else key for key in keys]  # see ranks_only
    for row in rows:
        where = dict(zip(keys, row[:-2], strict=True))
        if "ppn" in where and ppn is not None and not np.isclose(where.pop("ppn"), ppn):
            continue
        where.pop("ppn", None)
        index = {}
        for key, value in where.items():
            if key not in projection.coords:
                break
            hits = np.flatnonzero(np.isclose(projection[key].values, value))
            if not hits.size:
                break
            index[key] = hits
        else:
            low, high = row[-2:]
            cell = lower[index]
            lower[index] = np.where(np.isnan(cell), cell, np.fmin(cell, low))
            cell = upper[index]
            upper[index] = np.where(np.isnan(cell), cell, np.fmax(cell, high))
    return projection


@dataclass(frozen=True)
class _Grid:
    """Where a projection predicts: the frame, its coordinates and their shape."""

    frame: pd.DataFrame
    coords: dict
    ppn: float
    link: dict | None
    params: dict

    @property
    def dims(self):
        return list(self.coords)

    @property
    def shape(self):
        return tuple(len(self.coords[d]) for d in self.coords)

    def variable(self, values, units, long_name):
        """A data variable over the grid's dimensions."""
        values = np.asarray(values, dtype=float).reshape(self.shape)
        return (self.dims, values, {"units": units, "long_name": long_name})


def project(
    model,
    *,
    nodes,
    bandwidth=100,
    scale=None,
    ppn=None,
    interval=None,
    link=None,
    training=None,
    floor_model=None,
    edgefactor=EDGEFACTOR,
    target="time",
    params=None,
    name=None,
):
    """Predict over a grid of new coordinates, with intervals, parts and limits.

    Parameters
    ----------
    model : PerformanceModel
        Fitted.
    nodes : array-like of int
    bandwidth : float or array-like, default=100
        Percentages of the link (the target link when ``link`` is given).
    scale : float or array-like, default=None
        Problem scales; needed for data-size terms and for TEPS.
    ppn : float, default=None
        Ranks per node; default: the trained one (an error when ambiguous).
    interval : PredictionInterval, default=None
        Adds ``<target>_lower`` / ``<target>_upper``; without it they are NaN.
    link : dict, default=None
        Target network: ``link_bandwidth`` (bytes/s) and/or ``latency`` (s); only a
        model that prices its traffic takes another latency.
    training : dict, default=None
        Training metadata (:attr:`EnsembleFit.training`): enables the checks.
    floor_model : PerformanceModel, default=None
        A fitted model that knows the latency floor (``<target>_floor``).
    edgefactor : int, default=16
        Edges per vertex for ``teps_predicted = edgefactor * 2**scale / time``.
    target : str, default="time"
    params : dict of str to float or array-like, default=None
        Application parameters (sweep keys such as ``points``); default: the
        trained values (:func:`resolve_params`).
    name : str, default=None
        The model's name in its ensemble, which starts every warning.

    Returns
    -------
    xarray.Dataset
        ``<target>_predicted``, ``_lower``, ``_upper`` (at a measured configuration
        never narrower than its runs), ``teps_predicted`` (with a scale), parts
        and terms (when the model splits its prediction), ``_floor``.

    Warns
    -----
    ExtrapolationWarning
        Scale, bandwidth, ppn or an application parameter outside the training's.
    PhysicalLimitWarning
        A prediction below the latency floor.

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> m = ScalingLaw.from_coefficients("refined", [118.026, 5.968], alpha=1.11)
    >>> project(m, nodes=[4, 64], bandwidth=[100, 50], scale=28)["time_predicted"].dims
    ('nodes', 'bandwidth', 'scale')
    """
    with _named_warnings(name):
        return _project(
            model,
            {"nodes": nodes, "bandwidth": bandwidth, "scale": scale, "ppn": ppn},
            interval=interval,
            link=link,
            training=training,
            floor_model=floor_model,
            edgefactor=edgefactor,
            target=target,
            params=params,
        )


@contextlib.contextmanager
def _named_warnings(name):
    """Issue the warnings of the block again, each starting with the model's name."""
    if name is None:
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for item in caught:
        text = str(item.message)
        if not text.startswith(f"{name}:"):
            text = f"{name}: {text}"
        warnings.warn_explicit(text, item.category, item.filename, item.lineno)


def _project(
    model, where, *, interval, link, training, floor_model, edgefactor, target, params
):
    """:func:`project`, its warnings not yet named."""
    grid = _grid(model, training, link=link, params=params, **where)
    predicted = np.asarray(model.predict(grid.frame), dtype=float)
    named = (target, (training or {}).get("units", {}).get(target, "s"))
    data_vars = _predicted(model, grid, predicted, interval, named)
    coords = dict(grid.coords)
    if not measured_outside(training):  # a kernel's quantities, for its data
        data_vars.update(_teps(grid, predicted, target, edgefactor))
        data_vars.update(_components(model, grid, named, coords))
    if floor_model is not None:
        data_vars.update(_floor(floor_model, grid, predicted, named))
    attrs = {"model": type(model).__name__, "ppn": grid.ppn, "edgefactor": edgefactor}
    attrs.update(_attrs(grid.link, interval, training, target))
    out = _dataset(data_vars, coords, attrs, grid.params, training)
    return widen_to_measured(out, training)


def _grid(model, training, *, nodes, bandwidth, scale, ppn, link, params):
    """The frame a projection predicts on, after the checks of what was trained."""
    ppn = resolve_ppn(ppn, training)
    ranges = (training or {}).get("feature_ranges", {})
    _warn_outside("scale", scale, ranges.get("scale"))
    params = resolve_params(params, training)
    for name, values in params.items():
        _warn_outside(name, values, ranges.get(name))
    link, percent_factor = _target_link(link, training, model)
    frame = prediction_frame(
        nodes,
        ppn=ppn,
        bandwidth=bandwidth,
        scale=scale,
        s0=(training or {}).get("s0", frame_defaults_of(model)["s0"]),
        link=link if percent_factor is None else None,
        params=params,
    )
    if percent_factor is not None:
        frame["bandwidth"] = frame["bandwidth"] * percent_factor
    _warn_outside("bandwidth", frame["bandwidth"].unique(), ranges.get("bandwidth"))
    coords = {
        "nodes": np.atleast_1d(np.asarray(nodes, dtype=float)),
        "bandwidth": np.atleast_1d(np.asarray(bandwidth, dtype=float)),
    }
    if scale is not None:
        coords["scale"] = np.atleast_1d(np.asarray(scale, dtype=float))
    coords.update(params)
    return _Grid(frame=frame, coords=coords, ppn=ppn, link=link, params=params)


def _predicted(model, grid, predicted, interval, target_units):
    """The prediction and its interval's bounds (NaN without an interval)."""
    target, units = target_units
    if interval is not None:
        lower, upper = interval.bounds(model, grid.frame, prediction=predicted)
    else:
        lower = upper = np.full_like(predicted, np.nan)
    return {
        f"{target}_predicted": grid.variable(predicted, units, f"predicted {target}"),
        f"{target}_lower": grid.variable(
            lower, units, "lower bound of the prediction interval"
        ),
        f"{target}_upper": grid.variable(
            upper, units, "upper bound of the prediction interval"
        ),
    }


def _teps(grid, predicted, target, edgefactor):
    """Traversed edges per second, for a time projected at a scale."""
    if "scale" not in grid.coords or target != "time":
        return {}
    return {
        "teps_predicted": grid.variable(
            teps(predicted, grid.frame["scale"].to_numpy(), edgefactor=edgefactor),
            "edges/s",
            "predicted traversed edges per second",
        )
    }


def _components(model, grid, target_units, coords):
    """The computation and communication parts and every term or part, where the
    model splits its prediction (adds the ``term`` coordinate to ``coords``)."""
    target, units = target_units
    parts = model.predict_components(grid.frame)
    if not {"computation", "communication"} <= set(parts.columns):
        return {}
    terms = [c for c in parts.columns if c not in ("computation", "communication")]
    coords["term"] = terms
    return {
        f"{target}_computation": grid.variable(
            parts["computation"], units, "computation part of the prediction"
        ),
        f"{target}_communication": grid.variable(
            parts["communication"], units, "communication part of the prediction"
        ),
        f"{target}_terms": (
            (*grid.dims, "term"),
            parts[terms].to_numpy().reshape(*grid.shape, -1),
            {"units": units, "long_name": "contribution of each term or part"},
        ),
    }


def _priced_floor(floor_model, frame):
    """The floor of every row the traffic model can price (NaN elsewhere), and the
    first error of a row it cannot (None when it priced all)."""
    try:
        return np.asarray(floor_model.floor(frame), dtype=float), None
    except ValueError as error:
        first = error
    floor = np.full(len(frame), np.nan)
    keys = [c for c in frame.columns if c not in ("nodes", "ranks")]
    groups = frame.groupby(keys, sort=False, dropna=False).indices if keys else {}
    for rows in groups.values() or [np.arange(len(frame))]:
        try:
            floor[rows] = floor_model.floor(frame.iloc[rows])
        except ValueError:
            continue
    return floor, first


def _floor(floor_model, grid, predicted, target_units):
    """The latency floor, and a warning where the prediction falls below it; none,
    and a warning that says why, for the configurations the traffic model cannot
    price (a size or ppn it was not measured at, which another model can project:
    the check is lost there, not the projection)."""
    target, units = target_units
    floor, error = _priced_floor(floor_model, grid.frame)
    if error is not None:
        unpriced = int(np.sum(np.isnan(floor)))
        warn(
            f"no latency floor to check the projection against for {unpriced} of "
            f"{len(floor)} configurations: {error}",
            ExtrapolationWarning,
            stacklevel=3,
        )
        if unpriced == len(floor):
            return {}
    below = np.flatnonzero(predicted < floor * (1 - 1e-9))
    if below.size:
        first = grid.frame.iloc[below[0]]
        warn(
            f"the projection falls below the latency floor the link model gives "
            f"(from {first['nodes']:g} nodes: {predicted[below[0]]:.3g} s < "
            f"{floor[below[0]]:.3g} s): it cannot be right there",
            PhysicalLimitWarning,
            stacklevel=3,
        )
    return {
        f"{target}_floor": grid.variable(
            floor,
            units,
            "latency floor: latency-bound steps on the critical path times the "
            "link latency (NaN where the traffic model cannot price it)",
        )
    }


def _attrs(link, interval, training, target):
    attrs = {"target": target}
    if link is not None:
        attrs["link_bandwidth"] = float(link.get("link_bandwidth", np.nan))
        attrs["latency"] = float(link.get("latency", np.nan))
    if interval is not None:
        attrs["interval_level"] = interval.level
        attrs["interval_method"] = interval.method
        # how far beyond the data its widening was checked (0: not at all)
        attrs["interval_checked_to"] = float(interval.reference * 2**interval.reach)
        attrs["interval_checked_doublings"] = float(interval.reach)
        attrs["interval_column"] = interval.column
    if training is not None:
        attrs["training"] = json.dumps(training, default=str)
    return attrs


def _dataset(data_vars, coords, attrs, params, training):
    """The projection Dataset, coordinates with units, integer node counts."""
    out = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    for name, extra in _COORD_ATTRS.items():
        if name in out.coords:
            out[name].attrs.update(extra)
    if "scale" in out.coords and measured_outside(training):
        out["scale"].attrs.update(_OUTSIDE_SCALE)
    trained_units = (training or {}).get("units", {})
    for name in params:
        out[name].attrs.update(
            {
                "units": trained_units.get(name, "1"),
                "long_name": f"application parameter {name}",
            }
        )
    if np.all(out["nodes"].values == np.round(out["nodes"].values)):
        out = out.assign_coords(nodes=out["nodes"].values.astype(int))
        out["nodes"].attrs.update(_COORD_ATTRS["nodes"])
    return out


#: Upper/lower ratio beyond which an interval no longer tells a time: an order of
#: magnitude.
CANNOT_TELL_RATIO = 10.0


def cannot_tell_from(projection, *, target=None, ratio=CANNOT_TELL_RATIO):
    """Smallest projected node count whose interval spans more than ``ratio``.

    Past that count the interval is honest but no longer an answer: the data cannot
    tell the time there (the laws they allow part too far).

    Parameters
    ----------
    projection : xarray.Dataset
        Output of :func:`project` (with ``<target>_lower`` / ``<target>_upper``).
    target : str, default=None
        Default: the projection's ``target`` attribute, else ``time``.
    ratio : float, default=CANNOT_TELL_RATIO

    Returns
    -------
    float or None
        None when every interval is narrower (or there is no interval).

    Examples
    --------
    >>> import xarray as xr
    >>> proj = xr.Dataset(
    ...     {"time_lower": ("nodes", [1.0, 1.0, 1.0]),
    ...      "time_upper": ("nodes", [2.0, 12.0, 90.0])},
    ...     coords={"nodes": [16, 64, 256]})
    >>> cannot_tell_from(proj)
    64.0
    """
    nodes = wide_nodes(projection, target=target, ratio=ratio)
    return float(nodes.min()) if nodes.size else None


def wide_nodes(projection, *, target=None, ratio=CANNOT_TELL_RATIO):
    """Every projected node count whose interval spans more than ``ratio``.

    :func:`cannot_tell_from` is the smallest of them. They need not be all the
    counts beyond it: an interval may narrow again where a law it joined is ruled
    out (see :mod:`scaleprobe.models.projection.alternatives`).

    Parameters
    ----------
    projection, target, ratio
        As for :func:`cannot_tell_from`.

    Returns
    -------
    numpy.ndarray
        The node counts, ascending (empty without an interval).

    Examples
    --------
    >>> import xarray as xr
    >>> wide_nodes(xr.Dataset(
    ...     {"time_lower": ("nodes", [1.0] * 4),
    ...      "time_upper": ("nodes", [2.0, 12.0, 9.0, 30.0])},
    ...     coords={"nodes": [16, 64, 256, 1024]}))
    array([  64., 1024.])
    """
    target = target or projection.attrs.get("target", "time")
    lower = projection.get(f"{target}_lower")
    upper = projection.get(f"{target}_upper")
    if lower is None or upper is None or "nodes" not in lower.dims:
        return np.array([], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = upper / lower
    others = [d for d in spread.dims if d != "nodes"]
    wide = (spread > ratio) | (lower <= 0)
    wide = wide.any(dim=others) if others else wide
    finite = np.isfinite(lower).all(dim=others) if others else np.isfinite(lower)
    wide = wide & finite
    return np.sort(wide["nodes"].values[wide.values].astype(float))
