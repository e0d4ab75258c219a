"""Feature frames: measurements to ``(X, y)``, and the grids projections predict on.

This is the one place where frames are built. A frame's columns are ``nodes``,
``ppn``, ``ranks`` (``nodes * ppn``), ``bandwidth`` (percent of the link) when the
data have it, ``scale`` and ``D = 2**(scale - s0)`` when they have a scale, then any
other sweep key (``run``, ``trial``, ``msg_bytes``...). Nothing is invented: a
Dataset without ``ppn`` needs ``ppn=`` (or only ranks are known), and a Dataset
without ``bandwidth`` gives a frame without it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from scaleprobe.kernels.schema import (
    COLLECTIVE_LATENCY_COLUMNS,
    CRITICAL_PATH_COLUMNS,
    LINK_COLUMNS,
    LinkConfig,
)

from .configs import MEASURED_COLUMNS, is_measured
from .ordered import ordered_sizes, recorded_sizes

__all__ = [
    "data_size",
    "link_of",
    "make_features",
    "measurement_sets",
    "nothing_measured",
    "prediction_frame",
]

#: Columns a feature frame has, in this order, before any other sweep key.
FEATURE_COLUMNS = ("nodes", "ppn", "ranks", "bandwidth", "scale", "D")


def measurement_sets(dataset):
    """Which measurements beyond the target a Dataset carries for the models.

    Parameters
    ----------
    dataset : xarray.Dataset

    Returns
    -------
    dict
        ``traffic``: the critical-path variables of the instrumented communicator
        (:class:`~scaleprobe.models.TrafficModel`); ``fim``: the computation and
        collective records of the iterative and NPB kernels
        (:class:`~scaleprobe.models.FiM`). Keyword arguments of
        :func:`make_features`.

    Examples
    --------
    >>> import xarray as xr
    >>> measurement_sets(xr.Dataset({"time": ("nodes", [1.0])}))
    {'traffic': False, 'fim': False}
    """
    names = set(map(str, dataset.data_vars))
    return {
        "traffic": set(CRITICAL_PATH_COLUMNS) <= names,
        "fim": "comp_time_iterations" in names,
    }


def data_size(scale, s0=25):
    """Return the normalised data size ``D = 2**(scale - s0)`` of Medya et al. 2017.

    Parameters
    ----------
    scale : float or array-like
        Problem scale ``s`` (Graph500: ``2**s`` vertices).
    s0 : float, default=25
        Reference scale, so that ``D = 1`` at ``s0``.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> float(data_size(28))
    8.0
    """
    return np.exp2(np.asarray(scale, dtype=float) - s0)[()]


def link_of(dataset):
    """The absolute link a Dataset was measured on, or None.

    The store keeps the link as typed attributes of the ``bandwidth`` coordinate
    (:meth:`~scaleprobe.kernels.schema.LinkConfig.to_attrs`); where its throttle
    mode's link model sets both the link bandwidth and the latency (``emulated``),
    they are the link. Stores written before kept it as a ``link_model`` text among
    the Dataset's attributes, which :meth:`~scaleprobe.kernels.schema.LinkConfig.
    from_attrs` reads too.

    Parameters
    ----------
    dataset : xarray.Dataset

    Returns
    -------
    dict or None
        ``{"link_bandwidth": float, "latency": float}`` (bytes/s at 100 %, s) when
        known.

    Examples
    --------
    >>> import xarray as xr
    >>> from scaleprobe.kernels.schema import LinkConfig
    >>> link = LinkConfig(mode="emulated", link_bandwidth=1.25e8, latency=5e-6)
    >>> link_of(xr.Dataset(coords={"bandwidth": ("bandwidth", [50, 100],
    ...                                          link.to_attrs())}))
    {'link_bandwidth': 125000000.0, 'latency': 5e-06}
    >>> link_of(xr.Dataset(attrs={"link_model": '{"link_bandwidth": 1e9, '
    ...                                         '"latency": 1e-06}'}))
    {'link_bandwidth': 1000000000.0, 'latency': 1e-06}
    """
    if "bandwidth" in dataset.coords:
        link = LinkConfig.from_attrs(dataset["bandwidth"].attrs)
        if link is not None and set(LINK_COLUMNS) <= set(LinkConfig.ACTING[link.mode]):
            return {"link_bandwidth": link.link_bandwidth, "latency": link.latency}
    if "link_model" in dataset.attrs:
        link = LinkConfig.from_attrs(dataset.attrs)
        if link is not None:
            return {"link_bandwidth": link.link_bandwidth, "latency": link.latency}
    return None


_KNOWN = ("nodes", "ranks", "ppn", "bandwidth", "scale")


def nothing_measured(dataset: xr.Dataset) -> str | None:
    """Why a campaign has nothing to fit when no point of it succeeded, else None.

    Parameters
    ----------
    dataset : xarray.Dataset
        Campaign results with a ``status`` variable (others give None).

    Returns
    -------
    str or None

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"status": ("nodes", np.array(["failed", "timeout"], object))},
    ...                 coords={"nodes": [1, 2]})
    >>> nothing_measured(ds)
    'no point of the campaign succeeded (failed 1, timeout 1): nothing to fit'
    >>> nothing_measured(ds.assign(status=("nodes", np.array(["ok", "failed"]))))
    """
    if "status" not in dataset.data_vars:
        return None
    status = dataset["status"].values.astype(str).ravel()
    status = status[status != ""]  # cells of the grid no point was planned for
    if (status == "ok").any():
        return None
    kinds, counts = np.unique(status, return_counts=True)
    told = ", ".join(f"{k} {n}" for k, n in zip(kinds, counts, strict=True))
    return (
        f"no point of the campaign succeeded ({told or 'none stored'}): nothing to fit"
    )


def _check_target(dataset, target):
    if target not in dataset.data_vars:
        raise ValueError(
            nothing_measured(dataset)
            or f"target {target!r} is not a data variable; the Dataset has "
            f"{sorted(map(str, dataset.data_vars))}"
        )


def make_features(dataset, *, target="time", s0=25, ppn=None, traffic=False, fim=False):
    """Build the feature frame ``X`` and target ``y`` from a results Dataset.

    Points whose ``status`` is not ``"ok"`` and missing values of the target are
    dropped; ``run`` and ``trial`` (when present) become rows.

    Parameters
    ----------
    dataset : xarray.Dataset
        Results with a ``nodes`` or ``ranks`` dimension (or scalar coordinate) and
        the target variable.
    target : str, default="time"
        Name of the data variable to model.
    s0 : float, default=25
        Reference scale of the data size ``D = 2**(scale - s0)``; ``D`` is only added
        when the Dataset has a ``scale``.
    ppn : int, default=None
        Ranks per node, for Datasets without a ``ppn`` coordinate. Without either,
        a Dataset over ``nodes`` is refused (the rank count would be a guess) and a
        Dataset over ``ranks`` gives a frame without ``nodes`` and ``ppn``.
    traffic : bool, default=False
        Add the critical-path columns
        (:data:`~scaleprobe.kernels.schema.CRITICAL_PATH_COLUMNS`), the collectives'
        latency by shape
        (:data:`~scaleprobe.kernels.schema.COLLECTIVE_LATENCY_COLUMNS`, when the
        Dataset has them) and the absolute link (``link_bandwidth``, ``latency``)
        for :class:`~scaleprobe.models.TrafficModel`.
    fim : bool, default=False
        Add the records of the iterative and NPB kernels that
        :class:`~scaleprobe.models.FiM` fits: ``comp_time_iterations``, the hardware
        parameters and each collective's ``<kind>_time``, ``_calls``, ``_jobs`` and
        ``_job_bytes`` (those on the same dimensions as the target).

    Returns
    -------
    X : pandas.DataFrame
        Columns ``nodes``, ``ppn``, ``ranks``, ``bandwidth``, ``scale`` and ``D`` when
        available, then every other sweep key (an ordered choice of the Dataset's
        ``kernel``, NPB's ``class``, as the sizes it stands for:
        :func:`~scaleprobe.models.core.ordered.ordered_sizes`), then the traffic
        and FiM columns.
    y : pandas.Series
        The target, named after it, aligned with ``X``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"time": (("nodes", "run"), np.ones((2, 3)))},
    ...                 coords={"nodes": [4, 9], "run": [0, 1, 2], "ppn": 1})
    >>> X, y = make_features(ds)
    >>> list(X.columns), len(y)
    (['nodes', 'ppn', 'ranks', 'run'], 6)
    """
    if not isinstance(dataset, xr.Dataset):
        raise TypeError(
            f"dataset must be an xarray.Dataset, got {type(dataset).__name__}"
        )
    _check_target(dataset, target)
    names = [target, *_measurements(dataset, target, traffic, fim)]
    frame = _points(dataset, names + _recorded(dataset, target, names))
    # NPB's classes: the sizes they stand for (scaleprobe.models.core.ordered)
    frame = ordered_sizes(frame, dataset.attrs.get("kernel"))
    _process_counts(frame, ppn)
    if "scale" in frame.columns:
        frame["D"] = data_size(frame["scale"], s0)
    tail = names[1:]
    if traffic:
        _add_link(frame, dataset)
        tail += list(LINK_COLUMNS)
    first = [c for c in FEATURE_COLUMNS if c in frame.columns]
    rest = [
        c for c in frame.columns if c not in first and c not in tail and c != target
    ]
    X = frame[first + rest + tail].reset_index(drop=True)
    y = pd.Series(frame[target].to_numpy(dtype=float), name=target)
    return X, y


def _recorded(dataset, target, names):
    """The sizes of a swept class the points recorded (what they ran: NPB BT's
    ``cell_steps`` at a step count of its own), on the target's dimensions."""
    variables = [*dataset.data_vars, *dataset.coords]
    return [
        v
        for v in recorded_sizes(dataset.attrs.get("kernel"), variables)
        if v not in names and set(dataset[v].dims) == set(dataset[target].dims)
    ]


def _points(dataset, names):
    """One row per successful point (and run, trial): the variables ``names`` (the
    target first, its missing values dropped), dimensions and known coordinates."""
    subset = dataset[names]
    if "status" in dataset.data_vars:
        subset = subset.where(dataset["status"] == "ok")
    table = subset.to_dataframe()
    # Dimensions become columns; so do coordinates of the known features (a scalar
    # ppn, or ranks over (nodes, ppn)).
    known = [c for c in _KNOWN if c in table.columns and c not in table.index.names]
    frame = table[names + known].dropna(subset=[names[0]]).reset_index()
    if "nodes" not in frame.columns and "ranks" not in frame.columns:
        raise ValueError(
            "the Dataset has no 'nodes' or 'ranks' dimension or coordinate; got dims "
            f"{list(dataset.dims)}"
        )
    return frame


def _add_link(frame, dataset):
    """The link the Dataset was measured on, as the columns of every row."""
    link = link_of(dataset)
    if link is None:
        raise ValueError(
            "the Dataset does not record the link it was measured on "
            "(link_bandwidth and latency): the traffic cannot be priced"
        )
    for key, value in link.items():
        frame[key] = value


def _measurements(dataset, target, traffic, fim):
    """The variables carried beside the target: the critical path (and the
    collectives' latency by shape) for the traffic model, the kernels' records for
    FiM; those on the target's dimensions."""
    names = []
    dims = set(dataset[target].dims)
    if traffic:
        absent = [v for v in CRITICAL_PATH_COLUMNS if v not in dataset.data_vars]
        if absent:
            raise ValueError(
                f"the Dataset lacks the critical-path variables {absent}: only "
                "kernels that talk through scaleprobe's communicator in emulated mode "
                "record them"
            )
        names += list(CRITICAL_PATH_COLUMNS)
        names += [
            v
            for v in COLLECTIVE_LATENCY_COLUMNS
            if v in dataset.data_vars and set(dataset[v].dims) == dims
        ]
    if fim:
        if "comp_time_iterations" not in dataset.data_vars:
            raise ValueError(
                "the Dataset lacks 'comp_time_iterations': only the iterative and NPB "
                "kernels (iterative.*, npb.*) record what FiM fits"
            )
        names += [
            str(v)
            for v in dataset.data_vars
            if v != target
            and v not in names
            and is_measured(v)
            and str(v) not in MEASURED_COLUMNS
            and set(dataset[v].dims) == dims
        ]
    return names


def _process_counts(frame, ppn):
    """Complete ``ppn``, ``ranks`` and ``nodes`` from what the frame has (in place);
    nothing is guessed."""
    if "ppn" not in frame.columns:
        if ppn is not None:
            if not float(ppn) > 0:
                raise ValueError(f"ppn must be positive; got {ppn!r}")
            frame["ppn"] = ppn
        elif "nodes" in frame.columns and "ranks" in frame.columns:
            frame["ppn"] = frame["ranks"] / frame["nodes"]
        elif "nodes" in frame.columns:
            raise ValueError(
                "the Dataset has nodes but no ppn (ranks per node); pass ppn= (e.g. "
                "make_features(ds, ppn=1)) so that rank counts are not a guess"
            )
    if "ppn" in frame.columns:
        if "nodes" in frame.columns and "ranks" not in frame.columns:
            frame["ranks"] = frame["nodes"] * frame["ppn"]
        elif "ranks" in frame.columns and "nodes" not in frame.columns:
            frame["nodes"] = frame["ranks"] / frame["ppn"]


def prediction_frame(
    nodes, *, ppn, bandwidth=None, scale=None, s0=25, link=None, params=None
):
    """The grid a projection predicts on: every combination of the coordinates.

    Parameters
    ----------
    nodes : array-like
        Node counts.
    ppn : float
        Ranks per node.
    bandwidth : float or array-like, default=None
        Bandwidth percentages (omitted when None).
    scale : float or array-like, default=None
        Problem scales (adds ``scale`` and ``D``).
    s0 : float, default=25
    link : dict, default=None
        ``link_bandwidth`` (bytes/s) and ``latency`` (s) of the target network, for
        models that price traffic.
    params : dict of str to float or array-like, default=None
        Other features the models were trained over (application parameters such
        as ``points`` or ``msg_bytes``), each an axis of the grid after ``scale``.

    Returns
    -------
    pandas.DataFrame
        One row per combination, nodes varying slowest.

    Examples
    --------
    >>> prediction_frame([2, 4], ppn=2, bandwidth=[100, 50]).to_dict("list")
    ... # doctest: +NORMALIZE_WHITESPACE
    {'nodes': [2.0, 2.0, 4.0, 4.0], 'bandwidth': [100.0, 50.0, 100.0, 50.0],
     'ppn': [2.0, 2.0, 2.0, 2.0], 'ranks': [4.0, 4.0, 8.0, 8.0]}
    """
    axes = {"nodes": np.atleast_1d(np.asarray(nodes, dtype=float))}
    if bandwidth is not None:
        axes["bandwidth"] = np.atleast_1d(np.asarray(bandwidth, dtype=float))
    if scale is not None:
        axes["scale"] = np.atleast_1d(np.asarray(scale, dtype=float))
    for name, values in (params or {}).items():
        if name in axes or name in FEATURE_COLUMNS or name in ("link_bandwidth",):
            raise ValueError(
                f"params cannot set {name!r}: it has its own argument or is derived"
            )
        axes[name] = np.atleast_1d(np.asarray(values, dtype=float))
    for name, values in axes.items():
        if np.any(~np.isfinite(values)):
            raise ValueError(f"{name} must be finite numbers; got {values.tolist()}")
        if name in ("nodes", "bandwidth", "scale") and np.any(values <= 0):
            raise ValueError(f"{name} must be positive numbers; got {values.tolist()}")
    if not float(ppn) > 0:
        raise ValueError(f"ppn must be positive; got {ppn!r}")
    index = pd.MultiIndex.from_product(list(axes.values()), names=list(axes))
    frame = index.to_frame(index=False)
    frame["ppn"] = float(ppn)
    frame["ranks"] = frame["nodes"] * float(ppn)
    if scale is not None:
        frame["D"] = data_size(frame["scale"], s0)
    if link is not None:
        frame["link_bandwidth"] = float(link["link_bandwidth"])
        frame["latency"] = float(link["latency"])
    return frame
