"""The ensemble: which models a Dataset supports, and the one fit workflow.

:func:`fit_ensemble` is what ``scaleprobe fit``, ``scaleprobe report`` and the demo
all run: build the features, cross-validate every model (one Dask graph), fit them
on all data, calibrate their intervals, and select the model to trust — or say
plainly that none can be trusted.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr
from sklearn.base import clone

from ._checks import noise_against_bandwidth, run_spread
from ._configs import configuration_keys
from ._warnings import (
    DegenerateFitWarning,
    InsufficientDataWarning,
    UnreliableModelWarning,
    warn,
)
from .baseline import PowerLawBaseline
from .evaluation import BASELINE, default_cv, evaluate, select_model, summarize
from .features import (
    FEATURE_COLUMNS,
    TRAFFIC_VARIABLES,
    link_of,
    make_features,
    measurement_sets,
)
from .fim import FiM
from .fitted import EnsembleFit
from .intervals import calibrate_interval
from .pmnf import PMNFSearch
from .rbasp import RBASP
from .scaling_law import PRESETS, ScalingLaw
from .splitters import ExtrapolationSplit
from .traffic import TrafficModel

__all__ = ["BASELINE_MARGIN", "RELIABLE_SMAPE", "default_ensemble", "fit_ensemble"]

#: Extrapolation SMAPE (percent) above which no model is presented as a winner.
RELIABLE_SMAPE = 50.0

#: A model whose extrapolation SMAPE is within this factor of the selected one's is
#: a plausible alternative: its interval joins the selected model's.
PLAUSIBLE_FACTOR = 2.0

#: Share by which a time-only law must beat the naive baseline's extrapolation SMAPE
#: to be trusted over it (a law's extra assumptions have to earn their keep), and by
#: which the baseline must beat the traffic-informed model to be trusted over that.
BASELINE_MARGIN = 0.1


def default_ensemble(X, *, forms=None, search=True, traffic=None, fim=None, s0=25):
    """Every model the data can identify.

    Parameters
    ----------
    X : pandas.DataFrame
        Feature frame from :func:`make_features`.
    forms : sequence of str, default=None
        Presets of seed 000 to use. Default: when ``scale`` varies, the laws with a
        data-size term (``generalized``, and ``generalized_refined`` when bandwidth
        varies too), else ``base`` (and ``refined`` when bandwidth varies).
    search : bool, default=True
        Add ``PMNFSearch`` (with data-size / bandwidth factors when they vary).
    traffic : bool, default=None
        Add :class:`TrafficModel`; default: when ``X`` has the critical-path columns.
    fim : bool, default=None
        Add seed 003's :class:`~scaleprobe.models.FiM` and its regression baseline
        :class:`~scaleprobe.models.RBASP`; default: when ``X`` has the records of the
        iterative and NPB kernels (``comp_time_iterations`` and the collectives').
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
        traffic = set(TRAFFIC_VARIABLES) <= set(X.columns)
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


def _blind_to(model, X):
    """The varying configuration keys a fitted model's predictions ignore.

    Bandwidth, scale and every application parameter of the sweep are checked: a
    model that predicts the same time at their smallest and largest values mixes
    configurations it cannot tell apart. A column the model takes as a feature of
    its own (``feature_names_in_``: a metric a term selection may leave out) is not
    a parameter it ignores; bandwidth always is checked.
    """
    own = set(getattr(model, "feature_names_in_", ())) - {"bandwidth"}
    varying = [
        c
        for c in configuration_keys(X)
        if c not in ("nodes", "ranks", "ppn", "D")
        and c not in own
        and pd.api.types.is_numeric_dtype(X[c])
        and X[c].nunique() > 1
    ]
    blind = []
    # at the largest node count, where every part of a time depends on its inputs
    # (on one node a bandwidth or a message size changes no traffic)
    count = "nodes" if "nodes" in X.columns else "ranks"
    largest = X.loc[[X[count].idxmax()]] if count in X.columns else X.iloc[:1]
    for column in varying:
        rows = largest.copy()
        low, high = float(X[column].min()), float(X[column].max())
        ends = []
        for value in (low, high):
            row = rows.assign(**{column: value})
            if column == "scale" and "D" in row:
                row["D"] = rows["D"] * 2.0 ** (value - rows["scale"])
            ends.append(row)
        try:
            if np.allclose(model.predict(ends[0]), model.predict(ends[1])):
                blind.append(column)
        except (ValueError, TypeError):
            blind.append(column)
    return blind


def _reemit(caught, name):
    seen = set()
    for item in caught:
        key = (item.category, str(item.message))
        if key in seen:
            continue
        seen.add(key)
        warn(f"{name}: {item.message}", item.category, stacklevel=3)


def _multi_node(X, y, column):
    """Leave out single-process points when enough multi-node counts remain."""
    multi = X[column] > 1
    if multi.all() or X.loc[multi, column].nunique() < 3:
        return X, y, False
    return X[multi].reset_index(drop=True), y[multi.to_numpy()], True


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
    """Cross-validate, fit, calibrate and select: the one fit workflow.

    Parameters
    ----------
    data : xarray.Dataset or tuple of (DataFrame, array-like)
        Results (features from :func:`make_features`, with the critical-path columns
        when the Dataset has them) or ``(X, y)``.
    models : dict of str to estimator, default=None
        Default :func:`default_ensemble`.
    cv : dict of str to splitter, default=None
        Default :func:`~scaleprobe.models.evaluation.default_cv`; selection uses its
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
        Fitted models (the naive baseline included), scores, the selected model or
        None, the verdict in words, intervals, and the training metadata.

    Warns
    -----
    DegenerateFitWarning
        A final fit lost a term or hit a bound; a time-only law puts the crossover
        at the smallest node count.
    UnreliableModelWarning
        The selected model extrapolates worse than the naive baseline, or no model
        extrapolates within :data:`RELIABLE_SMAPE`.
    InsufficientDataWarning
        Too few node counts to check extrapolation or calibrate intervals.
    NoiseWarning
        Run-to-run spread as large as the bandwidth effect being modelled.
    """
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
        if {"link_bandwidth", "latency"} <= set(X.columns):
            link = {
                "link_bandwidth": float(X["link_bandwidth"].median()),
                "latency": float(X["latency"].median()),
            }
    y = np.asarray(y, dtype=float)
    if y.size == 0:
        raise ValueError(f"no successful measurements of {target!r} to fit")
    if np.any(y <= 0):
        raise ValueError(f"{target!r} must be positive to be modelled (times, counts)")
    column = "nodes" if "nodes" in X.columns else "ranks"
    X_all, y_all = X, y
    X, y, dropped = _multi_node(X, y, column)
    notes = []
    if dropped:
        notes.append(
            f"single-{column[:-1]} points are left out: one {column[:-1]} has no "
            "inter-node traffic, another regime than the rest"
        )
    models = dict(models) if models is not None else default_ensemble(X, s0=s0)
    splitters = default_cv(column) if cv is None else dict(cv)
    distinct = X[column].nunique()
    extrapolation = splitters.get("extrapolation")
    if extrapolation is not None and not list(extrapolation.split(X, y)):
        warn(
            f"{distinct} distinct {column} count(s): extrapolation cannot be checked "
            "on held-out node counts (it needs 3); scores are random folds only",
            InsufficientDataWarning,
            stacklevel=2,
        )
        splitters.pop("extrapolation")
    noise_against_bandwidth(X, y)
    if not any(list(s.split(X, y)) for s in splitters.values()):
        raise ValueError(
            f"cannot cross-validate {len(X)} measurement(s) over {distinct} "
            f"{column} count(s): there is no split to test a model on"
        )
    scores = evaluate(
        models, (X, y), cv=splitters, level=level, client=client, groupby=groupby
    )
    summary = summarize(scores)
    fitted, degenerate = {}, {}
    for name, model in {**models, BASELINE: PowerLawBaseline(over=column)}.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if isinstance(model, (TrafficModel, FiM)):
                # They model one process as its own regime: give them its runs.
                fitted[name] = clone(model).fit(X_all, y_all)
            else:
                fitted[name] = clone(model).fit(X, y)
        _reemit(caught, name)
        lost = [
            str(w.message)
            for w in caught
            if issubclass(w.category, DegenerateFitWarning)
        ]
        if lost:
            degenerate[name] = lost[0]
    fit = EnsembleFit(
        models=fitted,
        scores=scores,
        summary=summary,
        selected=None,
        verdict="",
        notes=notes,
        intervals={},
        training=_training_metadata(X, y, X_all, column, target, link, dataset, s0),
    )
    if cv is None and "extrapolation" not in splitters:
        fit.verdict = (
            f"with {distinct} {column} count(s) no model can be checked on held-out "
            "node counts: the laws are fitted (project one by name to see it), but "
            "none is presented as trustworthy — measure a third node count"
        )
    else:
        _select(fit, X, splitters, degenerate)
    _calibrate(fit, models, X, y, level, column)
    _check_crossover(fit)
    return fit


def _floor_violation(fit, name):
    """Smallest projected node count where ``name`` falls below the latency floor."""
    floor_model = fit.floor_model()
    if floor_model is None or name == "traffic":
        return None
    ranges = fit.training["feature_ranges"]
    largest = ranges.get("nodes", [1, 1])[1]
    top = max(1024, 32 * largest)
    nodes = 2.0 ** np.arange(np.ceil(np.log2(max(largest, 1))), np.log2(top) + 1)
    scales = ranges.get("scale")
    for scale in sorted(set(scales)) if scales else [None]:
        try:
            frame = fit.frame(
                nodes=nodes, bandwidth=ranges.get("bandwidth", [100])[1], scale=scale
            )
            if "scale" in frame and scales:
                frame = frame.assign(scale=scale)
            below = np.flatnonzero(
                fit.models[name].predict(frame) < floor_model.floor(frame)
            )
        except (ValueError, TypeError, KeyError):
            return None
        if below.size:  # the frame's rows: nodes x any application parameters
            return float(frame["nodes"].iloc[below].min())
    return None


def _select(fit, X, splitters, degenerate):
    cv_name = "extrapolation" if "extrapolation" in splitters else next(iter(splitters))
    excluded = {}
    for name, model in fit.models.items():
        ignored = [] if name == BASELINE else _blind_to(model, X)
        if ignored:
            excluded[name] = (
                f"ignores {', '.join(ignored)}, which "
                f"{'varies' if len(ignored) == 1 else 'vary'}"
            )
    for name in fit.models:
        nodes = _floor_violation(fit, name)
        if nodes is not None and name not in excluded:
            excluded[name] = (
                f"falls below the latency floor of the measured traffic from "
                f"{nodes:g} nodes"
            )
    sound = [
        n
        for n in fit.models
        if n not in excluded and n not in degenerate and n != BASELINE
    ]
    physics = dict(excluded)  # what cannot be right, whatever the scores say
    if sound:  # a degenerate law is only the answer when nothing else is left
        for name, message in degenerate.items():
            excluded.setdefault(name, f"degenerate fit ({message.split(':')[0]})")
    for name, reason in excluded.items():
        fit.notes.append(f"{name} is not selected: {reason}")
    blind = list(excluded)
    table = fit.summary.set_index(["model", "cv"])["smape"]
    try:
        best = select_model(fit.scores, cv=cv_name, exclude=blind)
    except ValueError:
        fit.verdict = (
            f"no model could be checked on held-out data ({cv_name}: every fold "
            "holds too few node counts): the laws are fitted, but none is presented "
            "as trustworthy — project one by name to see it, and measure more node "
            "counts"
        )
        warn(fit.verdict, InsufficientDataWarning, stacklevel=3)
        return
    baseline = float(table.get((BASELINE, cv_name), np.nan))
    what = (
        f"extrapolation to held-out {fit.training['column'][:-1]} counts"
        if cv_name == "extrapolation"
        else (f"{cv_name} cross-validation")
    )
    best, worse = _prefer(fit, table, cv_name, best, excluded, blind, what)
    smape = float(table.get((best, cv_name), np.nan))
    if not smape <= RELIABLE_SMAPE:
        fit.verdict = (
            f"no model extrapolates within {RELIABLE_SMAPE:.0f} % SMAPE (best: {best}, "
            f"{smape:.0f} % on {what}; naive baseline {baseline:.0f} %): the data "
            "cannot tell how this program scales, so no projection is presented as "
            "trustworthy — measure more (or larger) node counts"
        )
        warn(fit.verdict, UnreliableModelWarning, stacklevel=3)
        return
    fit.selected = best
    fit.training["plausible"] = [
        name
        for name in fit.models
        if name != best
        and name not in physics
        and float(table.get((name, cv_name), np.inf)) <= PLAUSIBLE_FACTOR * smape
    ]
    if best == BASELINE:
        fit.verdict = (
            f"no model beats the naive trend by a clear margin, so scaleprobe projects "
            f"the trend: a power law through the two largest measured "
            f"{fit.training['column'][:-1]} counts of each configuration (SMAPE "
            f"{smape:.1f} % on {what}). It knows no physics: no latency floor, no "
            "unmeasured bandwidth or scale — read far projections as the local trend "
            "continued, and measure larger counts to know more"
        )
        if worse is not None:
            warn(
                f"{worse[0]}, the best law, extrapolates worse than the naive baseline "
                f"(SMAPE {worse[1]:.1f} % against {baseline:.1f} %): scaleprobe "
                "projects the naive trend instead",
                UnreliableModelWarning,
                stacklevel=3,
            )
        return
    reason = (
        f"scaleprobe trusts {best}: SMAPE {smape:.1f} % on {what} "
        f"(naive baseline {baseline:.1f} %)"
    )
    if best == "traffic":
        reason += "; it models computation and traffic counts and prices them with "
        reason += "the link model, so it knows the latency floor"
    fit.verdict = reason
    if np.isfinite(baseline) and smape > baseline:
        warn(
            f"{best} extrapolates worse than the naive baseline (SMAPE {smape:.1f} % "
            f"against {baseline:.1f} %): read its projection with care",
            UnreliableModelWarning,
            stacklevel=3,
        )


def _prefer(fit, table, cv_name, best, excluded, blind, what):
    """Pick among the traffic model, the naive trend and the best time-only law.

    In that order of preference: the traffic-informed model carries the physics
    (floors, one node without traffic), the trend assumes least, a time-only law
    assumes a shape. A less preferred candidate is trusted only when it beats every
    more preferred one by :data:`BASELINE_MARGIN`.
    """

    def smape(name):
        return float(table.get((name, cv_name), np.nan))

    law = best
    if best == "traffic":
        try:
            law = select_model(fit.scores, cv=cv_name, exclude=[*blind, "traffic"])
        except ValueError:
            law = None
    order = [
        name
        for name in ("traffic", BASELINE)
        if name in fit.models and name not in excluded and np.isfinite(smape(name))
    ]
    if law is not None and np.isfinite(smape(law)):
        order.append(law)
    if not order:
        return best, None
    chosen = order[0]
    for i, name in enumerate(order[1:], start=1):
        if all(smape(name) < (1 - BASELINE_MARGIN) * smape(p) for p in order[:i]):
            chosen = name
    position = order.index(chosen)
    for i, name in enumerate(order):
        if i < position:
            fit.notes.append(
                f"{name} is not selected: {chosen} beats its SMAPE on {what} by more "
                f"than {BASELINE_MARGIN:.0%} ({smape(chosen):.1f} % against "
                f"{smape(name):.1f} %)"
            )
        elif i > position:
            rival = next(
                p
                for p in order[:i]
                if not smape(name) < (1 - BASELINE_MARGIN) * smape(p)
            )
            fit.notes.append(
                f"{name} is not selected: SMAPE {smape(name):.1f} % on {what} does not "
                f"beat {rival} ({smape(rival):.1f} %) by {BASELINE_MARGIN:.0%}"
            )
    baseline = smape(BASELINE)
    worse = None
    if chosen == BASELINE and law is not None and smape(law) > baseline:
        worse = (law, smape(law))
    return chosen, worse


def _calibrate(fit, models, X, y, level, column):
    cv = ExtrapolationSplit(column=column, n_splits=3)
    for name, model in {**models, BASELINE: PowerLawBaseline(over=column)}.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fit.intervals[name] = calibrate_interval(
                    model, X, y, level=level, cv=cv
                )
            except ValueError as error:
                fit.notes.append(f"{name}: no interval ({error})")
                continue
        if name == fit.selected:
            _reemit(caught, name)


def _check_crossover(fit):
    name = fit.selected
    if name is None or name == "traffic":
        return
    model = fit.models[name]
    if not hasattr(model, "predict_components"):
        return
    smallest = fit.training["feature_ranges"][fit.training["column"]][0]
    try:
        frame = fit.frame(nodes=[smallest], bandwidth=100.0)
        parts = model.predict_components(frame)
    except (ValueError, TypeError, KeyError):
        return
    if float(parts["communication"].iloc[0]) >= float(parts["computation"].iloc[0]):
        warn(
            f"{name} puts the crossover (communication >= computation) at the "
            f"smallest measured node count ({smallest:g}): its computation term is "
            "too small to be trusted (a time-only law cannot see traffic)",
            DegenerateFitWarning,
            stacklevel=3,
        )


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
    units = {
        "nodes": "1",
        "ranks": "1",
        "ppn": "1",
        "bandwidth": "percent",
        "scale": "log2(vertices)",
        target: "s" if "time" in target else "",
    }
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
        "s0": float(s0),
        "run_spread": run_spread(X, y),
        "provenance": provenance,
    }
