"""The ensemble: which models a Dataset supports, and the one fit workflow.

:func:`fit_ensemble` is what ``scaleprobe fit``, ``scaleprobe report`` and the demo
all run: build the features, cross-validate every model (one Dask graph), fit them
on all data, ask :func:`~scaleprobe.models.choose_model` which one to trust (or
hear plainly that none can be), and calibrate their intervals.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import xarray as xr
from scaleprobe.kernels.schema import CRITICAL_PATH_COLUMNS, LINK_COLUMNS
from sklearn.base import clone

from ..core.configs import configuration_keys, reduce_configurations
from ..core.features import (
    FEATURE_COLUMNS,
    link_of,
    make_features,
    measurement_sets,
)
from ..core.interface import PerformanceModel
from ..core.measured import measured_table
from ..core.warnings import (
    DegenerateFitWarning,
    InsufficientDataWarning,
    NoiseWarning,
    quiet,
    warn,
)
from ..evaluation.crossval import BASELINE, default_cv, evaluate, summarize
from ..evaluation.intervals import calibrate_axis, calibrate_interval
from ..evaluation.splitters import ExtrapolationSplit
from ..fim.model import FiM
from ..fim.rbasp import RBASP
from ..laws.baseline import PowerLawBaseline
from ..laws.pmnf import PMNFSearch
from ..laws.scaling_law import PRESETS, ScalingLaw
from ..projection.grid import measured_outside
from ..selection.choose import choose_model
from ..traffic.model import TrafficModel
from .result import EnsembleFit

__all__ = ["default_ensemble", "fit_ensemble"]


def default_ensemble(X, *, forms=None, search=True, traffic=None, fim=None, s0=25):
    """Every model the data can identify.

    Parameters
    ----------
    X : pandas.DataFrame
        Feature frame from :func:`make_features`.
    forms : sequence of str, default=None
        Presets of Medya et al. 2017 to use. Default: when ``scale`` varies, the
        laws with a data-size term (``generalized``, and ``generalized_refined`` when
        bandwidth varies too), else ``base`` (and ``refined`` when bandwidth
        varies).
    search : bool, default=True
        Add ``PMNFSearch`` (with data-size / bandwidth factors when they vary).
    traffic : bool, default=None
        Add :class:`TrafficModel`; default: when ``X`` has the critical-path columns.
    fim : bool, default=None
        Add the :class:`~scaleprobe.models.FiM` of Bhimani et al. 2019 and its
        regression baseline :class:`~scaleprobe.models.RBASP`; default: when ``X``
        has the records of the iterative and NPB kernels (``comp_time_iterations``
        and the collectives').
    s0 : float, default=25

    Returns
    -------
    dict of str to estimator

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"nodes": [1, 2], "ranks": [4, 8], "bandwidth": [100, 50]})
    >>> sorted(default_ensemble(X))
    ['base', 'pmnf', 'refined']
    """
    varies = {c: c in X.columns and X[c].nunique() > 1 for c in ("scale", "bandwidth")}
    over = "ranks" if "ranks" in X.columns else "nodes"
    if forms is None:
        if varies["scale"]:
            forms = ["generalized"]
            if varies["bandwidth"]:
                forms.append("generalized_refined")
        else:
            forms = ["base"]
            if varies["bandwidth"]:
                forms.append("refined")
    unknown = [f for f in forms if f not in PRESETS]
    if unknown:
        raise ValueError(f"unknown forms {unknown}; allowed: {sorted(PRESETS)}")
    ensemble = {f: ScalingLaw(form=f, over=over, s0=s0) for f in forms}
    if search:
        ensemble["pmnf"] = PMNFSearch(
            parameter=over, data=varies["scale"], bandwidth=varies["bandwidth"], s0=s0
        )
    if traffic is None:
        traffic = set(CRITICAL_PATH_COLUMNS) <= set(X.columns)
    if traffic:
        ensemble["traffic"] = TrafficModel()
    if fim is None:
        fim = "comp_time_iterations" in X.columns
    if fim:
        link = 1.25e8
        if "link_bandwidth" in X.columns:
            link = float(X["link_bandwidth"].median())
        ensemble["fim"] = FiM(over=over, link_bandwidth=link)
        # Eq. 17 regresses on the application parameters the sweep varies.
        varied = [
            c
            for c in configuration_keys(X)
            if c not in ("nodes", "ranks", "ppn", "D")
            and pd.api.types.is_numeric_dtype(X[c])
            and X[c].nunique() > 1
        ]
        ensemble["rbasp"] = RBASP(over=over, features=varied)
    return ensemble


def _reemit(caught, name):
    seen = set()
    for item in caught:
        key = (item.category, str(item.message))
        if key in seen:
            continue
        seen.add(key)
        warn(f"{name}: {item.message}", item.category, stacklevel=3)


def _multi_node(X, y, column):
    """Leave out single-process points when enough multi-node counts remain (and
    say so in a note)."""
    multi = X[column] > 1
    if multi.all() or X.loc[multi, column].nunique() < 3:
        return X, y, []
    note = (
        f"single-{column[:-1]} points are left out: one {column[:-1]} has no "
        "inter-node traffic, another regime than the rest"
    )
    return X[multi].reset_index(drop=True), y[multi.to_numpy()], [note]


def fit_ensemble(
    data,
    *,
    models=None,
    cv=None,
    target="time",
    level=0.9,
    s0=25,
    ppn=None,
    client=None,
    groupby=None,
):
    """Cross-validate, fit, calibrate and judge: the one fit workflow.

    The model to trust is chosen by :func:`~scaleprobe.models.choose_model`, whose
    :class:`~scaleprobe.models.Verdict` the result carries.

    Parameters
    ----------
    data : xarray.Dataset or tuple of (DataFrame, array-like)
        Results (features from :func:`make_features`, with the critical-path columns
        when the Dataset has them) or ``(X, y)``.
    models : dict of str to estimator, default=None
        Default :func:`default_ensemble`.
    cv : dict of str to splitter, default=None
        Default :func:`~scaleprobe.models.default_cv`; selection uses its
        ``extrapolation`` entry when present.
    target : str, default="time"
    level : float, default=0.9
        Interval level.
    s0 : float, default=25
    ppn : int, default=None
        Ranks per node for data without a ``ppn`` coordinate.
    client : distributed.Client, default=None
    groupby : str, default=None
        Evaluate separately per value of this feature (scores only).

    Returns
    -------
    EnsembleFit
        Fitted models (the naive baseline included), scores, the verdict,
        intervals, and the training metadata.

    Warns
    -----
    DegenerateFitWarning
        A final fit lost a term or hit a bound.
    InsufficientDataWarning
        Too few node counts to check extrapolation or calibrate intervals.
    NoiseWarning
        Run-to-run spread as large as the bandwidth effect being modelled.
    UnreliableModelWarning, RegimeChangeWarning, NoTrendWarning
        Those of the verdict (:func:`~scaleprobe.models.choose_model`).
    """
    dataset, X_all, y_all, link = _training_data(data, target, s0, ppn)
    column = "nodes" if "nodes" in X_all.columns else "ranks"
    X, y, notes = _multi_node(X_all, y_all, column)
    models = dict(models) if models is not None else default_ensemble(X, s0=s0)
    _check_models(models)
    splitters = _splitters(cv, column, X, y)
    noise_against_bandwidth(X, y)
    scores = evaluate(
        models, (X, y), cv=splitters, level=level, client=client, groupby=groupby
    )
    fitted, degenerate = _fit_all(models, column, (X, y), (X_all, y_all))
    training = _training_metadata(X, y, X_all, column, target, link, dataset, s0)
    training["measured"] = measured_table(X_all, y_all)  # figures, interval floor
    verdict = choose_model(
        fitted,
        scores,
        X,
        y,
        training=training,
        splitters=splitters,
        degenerate=degenerate,
        level=level,
        checkable=cv is not None or "extrapolation" in splitters,
    )
    return _result(models, (fitted, scores, verdict), training, (X, y, level), notes)


def _result(models, judged, training, data, notes):
    """The fit's result: the verdict's own models and scores joined, every
    interval calibrated (and widened along the sizes for the trusted model and its
    plausible alternatives)."""
    fitted, scores, verdict = judged
    X, y, level = data
    if verdict.added_scores is not None:
        scores = xr.concat([scores, verdict.added_scores], dim="model", join="outer")
    fitted = {**fitted, **verdict.models}
    column = training["column"]
    intervals, calibrated = _calibrate(models, X, y, level, column, verdict.trusted)
    intervals = {**verdict.intervals, **intervals}
    widened, sized = _calibrate_sizes(fitted, intervals, verdict, training, data)
    return EnsembleFit(
        models=fitted,
        scores=scores,
        summary=summarize(scores),
        verdict=verdict,
        notes=[*notes, *verdict.lines(), *calibrated, *sized],
        intervals={**intervals, **widened},
        training=training,
    )


def _training_data(data, target, s0, ppn):
    """The Dataset (or None), the features and target of all points, the link."""
    dataset = data if isinstance(data, xr.Dataset) else None
    if dataset is not None:
        X, y = make_features(
            dataset, target=target, s0=s0, ppn=ppn, **measurement_sets(dataset)
        )
        link = link_of(dataset)
    else:
        X, y = data
        X = X.reset_index(drop=True)
        link = None
        if set(LINK_COLUMNS) <= set(X.columns):
            link = {name: float(X[name].median()) for name in LINK_COLUMNS}
    y = np.asarray(y, dtype=float)
    if y.size == 0:
        raise ValueError(f"no successful measurements of {target!r} to fit")
    if np.any(y <= 0):
        raise ValueError(f"{target!r} must be positive to be modelled (times, counts)")
    return dataset, X, y, link


def _check_models(models):
    """Refuse an estimator that does not answer the interface the choice asks."""
    for name, model in models.items():
        if not isinstance(model, PerformanceModel):
            raise TypeError(
                f"model {name!r} ({type(model).__name__}) is not a PerformanceModel: "
                "fit_ensemble needs predict_interval, predict_components, describe and "
                "the capabilities of scaleprobe.models.PerformanceModel"
            )


def _splitters(cv, column, X, y):
    """The cross-validations to run: ``cv`` or the default, without an extrapolation
    that no split can make (which warns)."""
    splitters = default_cv(column) if cv is None else dict(cv)
    distinct = X[column].nunique()
    extrapolation = splitters.get("extrapolation")
    if extrapolation is not None and not list(extrapolation.split(X, y)):
        warn(
            f"{distinct} distinct {column} count(s): extrapolation cannot be checked "
            f"on held-out {column[:-1]} counts (it needs 3); scores are random folds "
            "only",
            InsufficientDataWarning,
            stacklevel=3,
        )
        splitters.pop("extrapolation")
    if not any(list(s.split(X, y)) for s in splitters.values()):
        raise ValueError(
            f"cannot cross-validate {len(X)} measurement(s) over {distinct} "
            f"{column} count(s): there is no split to test a model on"
        )
    return splitters


def _fit_all(models, column, multi, every):
    """Every model (and the naive baseline) fitted on all data, with the warning of
    each degenerate fit.

    A model of what the program sends (``structural``) takes the single-process
    points too: it models one process as its own regime.
    """
    fitted, degenerate = {}, {}
    for name, model in {**models, BASELINE: PowerLawBaseline(over=column)}.items():
        X, y = every if model.structural else multi
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted[name] = clone(model).fit(X, y)
        _reemit(caught, name)
        lost = [
            str(w.message)
            for w in caught
            if issubclass(w.category, DegenerateFitWarning)
        ]
        if lost:
            degenerate[name] = lost[0]
    return fitted, degenerate


def _calibrate(models, X, y, level, column, trusted):
    """The calibrated interval of every model (and the baseline), and a note for
    each that has none; the trusted model's warnings are given."""
    cv = ExtrapolationSplit(column=column, n_splits=3)
    intervals, notes = {}, []
    for name, model in {**models, BASELINE: PowerLawBaseline(over=column)}.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                intervals[name] = calibrate_interval(model, X, y, level=level, cv=cv)
            except ValueError as error:
                notes.append(f"{name}: no interval ({error})")
                continue
        if name == trusted:
            _reemit(caught, name)
    return intervals, notes


def _calibrate_sizes(models, intervals, verdict, training, data):
    """Widen the intervals of the trusted model and of the plausible ones (which
    project a size the trusted one cannot reach) beyond the measured sizes by what
    holding out the largest size cost each (:func:`calibrate_axis`): the node
    counts' calibration says nothing of a size never measured.

    Returns
    -------
    widened : dict of str to PredictionInterval
    notes : list of str
    """
    widened, notes = {}, []
    if verdict.trusted is None:
        return widened, notes
    for name in [verdict.trusted, *(verdict.plausible or ())]:
        if intervals.get(name) is not None and models[name].calibrates_sizes:
            axes, said = _size_axes(models[name], name, training, data)
            notes += said
            if axes:
                widened[name] = replace(intervals[name], axes=tuple(axes))
    return widened, notes


def _size_axes(model, name, training, data):
    """The size axes along which ``model``'s interval widens, and a note on each."""
    X, y, level = data
    axes, notes, held = [], [], {}
    for column in [*training.get("parameters", {}), "scale"]:
        if column not in X.columns:
            continue
        with quiet():
            found = calibrate_axis(model, X, y, column, level=level)
        if found is None:
            continue
        axis, residuals = found
        values = np.asarray(X[column], dtype=float)
        rows = frozenset(np.flatnonzero(values == values.max()).tolist())
        group = held.setdefault(rows, column)
        axes.append((*axis, group))
        unit = "unit" if column == "scale" else "doubling"
        same = f"; held out with {group}: the larger widening counts" * (
            group != column
        )
        notes.append(
            f"{name}: the interval widens by {axis[1]:.3g} (log time) per {unit} of "
            f"{column} outside the measured {axis[2]:g}-{axis[3]:g}, as the fit "
            f"without the largest {column} missed it ({residuals} held-out "
            f"configurations{same})"
        )
    return axes, notes


def _units(X_all, target, dataset):
    """The units of the features and of the target, as far as they are known.

    A scaleprobe sweep's scale counts the vertices of its graph and its time is in
    seconds; data measured outside scaleprobe say their own units (a ``time [s]``
    header, ``units=``), else they are left unknown (``""``).
    """
    outside = dataset is not None and measured_outside({"provenance": dataset.attrs})
    units = {
        name: unit
        for name, unit in (
            ("nodes", "1"),
            ("ranks", "1"),
            ("ppn", "1"),
            ("bandwidth", "percent"),
            ("scale", "1" if outside else "log2(vertices)"),
        )
        if name in X_all.columns
    }
    units[target] = "s" if "time" in target and not outside else ""
    return units


def _scaleless_outside(X_all, dataset):
    """Whether the data were measured outside scaleprobe without a scale: no
    reference scale ``s0`` means anything to them."""
    outside = dataset is not None and measured_outside({"provenance": dataset.attrs})
    return outside and "scale" not in X_all.columns


def _training_metadata(X, y, X_all, column, target, link, dataset, s0):
    ranges = {
        c: [float(X_all[c].min()), float(X_all[c].max())]
        for c in ("nodes", "ranks", "ppn", "bandwidth", "scale")
        if c in X_all.columns
    }
    parameters = {
        c: sorted(float(v) for v in X_all[c].dropna().unique())
        for c in configuration_keys(X_all)
        if c not in FEATURE_COLUMNS and pd.api.types.is_numeric_dtype(X_all[c])
    }
    for name, values in parameters.items():
        ranges[name] = [values[0], values[-1]]
    units = _units(X_all, target, dataset)
    if dataset is not None:
        for name in parameters:
            if name in dataset.coords:
                units[name] = str(dataset[name].attrs.get("units", "1"))
    if dataset is not None and target in dataset.data_vars:
        units[target] = dataset[target].attrs.get("units", units[target])
    ppn_values = sorted(set(X_all["ppn"])) if "ppn" in X_all.columns else None
    provenance = {}
    if dataset is not None:
        provenance = {
            k: str(v)
            for k, v in dataset.attrs.items()
            if k
            in (
                "title",
                "kernel",
                "scaleprobe_version",
                "git_commit",
                "throttle_mode",
                "started",
                "finished",
                "hostname",
                "source",
                "format",
            )
        }
    return {
        "target": target,
        "column": column,
        "ppn": ppn_values,
        "link": link,
        "feature_ranges": ranges,
        "parameters": parameters,
        "units": units,
        "configurations": int(X[configuration_keys(X)].drop_duplicates().shape[0]),
        "measurements": len(y),
        "runs": int(X[[*configuration_keys(X), "run"]].drop_duplicates().shape[0])
        if "run" in X.columns
        else len(y),
        **({} if _scaleless_outside(X_all, dataset) else {"s0": float(s0)}),
        "run_spread": run_spread(X, y),
        "provenance": provenance,
    }


# ----------------------------------------------------------------------------
# Checks of the data behind a fit: is the effect being modelled above the noise?


def run_spread(X, y):
    """Median relative spread ``max / min - 1`` of repeated runs (NaN without runs).

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"nodes": [2, 2, 4, 4], "run": [0, 1, 0, 1]})
    >>> round(run_spread(X, [1.0, 1.1, 2.0, 2.2]), 3)
    0.1
    """
    if "run" not in X.columns:
        return float("nan")
    configs = reduce_configurations(X, y)
    spread = configs.frame.loc[configs.frame["n"] > 1, "spread"]
    return float(spread.median()) if spread.size else float("nan")


def noise_against_bandwidth(X, y):
    """Warn when repeated runs spread as much as bandwidth changes the time.

    For every configuration measured at several bandwidths, the bandwidth effect is
    the relative change of its centre between the highest and the lowest bandwidth;
    the noise is the relative spread of its repeated runs. When the median spread is
    as large as the median effect, a fitted bandwidth term describes noise.

    Parameters
    ----------
    X : pandas.DataFrame
    y : array-like

    Returns
    -------
    tuple of float or None
        ``(median effect, median spread)``, None when the check does not apply.
    """
    if "bandwidth" not in X.columns or X["bandwidth"].nunique() < 2:
        return None
    if "run" not in X.columns:
        return None
    configs = reduce_configurations(X, y).frame
    keys = [k for k in configuration_keys(X) if k != "bandwidth"]
    effects, spreads = [], []
    for _, group in configs.groupby(keys) if keys else [(None, configs)]:
        if group["bandwidth"].nunique() < 2:
            continue
        low = group.loc[group["bandwidth"].idxmin()]
        high = group.loc[group["bandwidth"].idxmax()]
        effects.append(abs(low["y"] / high["y"] - 1.0))
        spreads.extend(group.loc[group["n"] > 1, "spread"].tolist())
    if not effects or not spreads:
        return None
    effect, spread = float(np.median(effects)), float(np.median(spreads))
    if spread >= effect:
        warn(
            f"repeated runs spread by {spread:.0%} (median max/min - 1) while "
            f"bandwidth changes the time by {effect:.0%} (median, lowest against "
            "highest bandwidth): a fitted bandwidth effect is noise; repeat runs or "
            "throttle harder",
            NoiseWarning,
            stacklevel=3,
        )
    return effect, spread
