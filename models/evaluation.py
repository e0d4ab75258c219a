"""Cross-validate an ensemble of models as one Dask graph, and pick the best one."""

from __future__ import annotations

import time

import dask
import numpy as np
import pandas as pd
import xarray as xr
from sklearn.base import clone
from sklearn.model_selection import KFold

from .features import make_features
from .intervals import conformal_interval
from .metrics import METRICS, score_predictions
from .splitters import ExtrapolationSplit

__all__ = ["default_cv", "evaluate", "select_model", "summarize"]

_HIGHER_IS_BETTER = {"r2", "within_10", "within_30", "coverage"}


def default_cv():
    """The paper's random 4/5 split and the extrapolation question.

    Returns
    -------
    dict
        ``{"kfold": KFold(5, shuffle=True, random_state=0),
        "extrapolation": ExtrapolationSplit("nodes", n_splits=2)}``
    """
    return {
        "kfold": KFold(n_splits=5, shuffle=True, random_state=0),
        "extrapolation": ExtrapolationSplit(column="nodes", n_splits=2),
    }


def _fit_score(model, data, train, test, level):
    """Fit on ``train``, score on ``test``; one task of the evaluation graph."""
    X, y = data
    start = time.perf_counter()
    X_train, y_train = X.iloc[train], y[train]
    fitted = clone(model).fit(X_train, y_train)
    pred = fitted.predict(X.iloc[test])
    row = score_predictions(y[test], pred)
    row["coverage"] = np.nan
    if X_train["nodes"].nunique() >= 3 and np.all(y > 0):
        # Calibrate on the training fold only, then check the held-out points.
        interval = conformal_interval(model, X_train, y_train, level=level)
        lower, upper = interval.bounds(pred, X["nodes"].iloc[test])
        row["coverage"] = float(np.mean((y[test] >= lower) & (y[test] <= upper)))
    row["n_train"] = len(train)
    row["n_test"] = len(test)
    row["fit_seconds"] = time.perf_counter() - start
    row["worker"] = _worker_address()
    return row


def _worker_address():
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def _named(models):
    if isinstance(models, dict):
        return dict(models)
    named = {}
    for model in models:
        name = (
            getattr(model, "form", None)
            if getattr(model, "terms", None) is None
            else None
        )
        name = name or type(model).__name__
        while name in named:
            name += "_"
        named[name] = model
    return named


def evaluate(
    models,
    dataset,
    *,
    cv=None,
    groupby=None,
    target="time",
    client=None,
    level=0.9,
    s0=25,
):
    """Cross-validate every model x group x splitter x fold in one Dask graph.

    Parameters
    ----------
    models : dict of str to estimator, or list of estimators
        The ensemble; lists are named after each model's ``form`` or class.
    dataset : xarray.Dataset or tuple of (DataFrame, array-like)
        Results (turned into features by :func:`make_features`) or ``(X, y)``.
    cv : dict of str to splitter, or splitter, default=None
        Default :func:`default_cv` (random 5-fold and extrapolation).
    groupby : str or list of str, default=None
        Feature columns to evaluate separately, e.g. ``"scale"`` for Eq. 2 per scale.
    target : str, default="time"
    client : distributed.Client, default=None
        Run the graph on this cluster (the data are scattered to every worker once);
        None uses the default Dask scheduler.
    level : float, default=0.9
        Nominal coverage of the conformal intervals whose empirical ``coverage`` on
        the test fold is reported (calibrated on the training fold only).
    s0 : float, default=25

    Returns
    -------
    xarray.Dataset
        Dims ``model``, ``cv``, ``group``, ``fold``; one variable per metric of
        :data:`~scaleprobe.models.metrics.METRICS` plus ``coverage``, ``n_train``,
        ``n_test``, ``fit_seconds`` and ``worker`` (the address that ran the task).
        NaN where a splitter has fewer folds.
    """
    models = _named(models)
    if not models:
        raise ValueError("models is empty")
    splitters = default_cv() if cv is None else cv
    if not isinstance(splitters, dict):
        splitters = {type(splitters).__name__: splitters}
    if isinstance(dataset, xr.Dataset):
        X, y = make_features(dataset, target=target, s0=s0)
    else:
        X, y = dataset
        X = X.reset_index(drop=True)
    y = np.asarray(y, dtype=float)
    keys = [groupby] if isinstance(groupby, str) else list(groupby or [])
    missing = [k for k in keys if k not in X.columns]
    if missing:
        raise ValueError(
            f"groupby columns {missing} are not features; have {list(X.columns)}"
        )
    groups = X.groupby(keys).indices.items() if keys else [("all", np.arange(len(X)))]
    labels, tasks = [], []
    for group, index in groups:
        label = (
            group
            if keys == []
            else ",".join(
                f"{k}={v}" for k, v in zip(keys, np.atleast_1d(group), strict=True)
            )
        )
        data = (X.iloc[index].reset_index(drop=True), y[index])
        # Unique keys (hash=False): re-evaluating the same data must not race with
        # the release of an earlier call's identical key.
        data = (
            client.scatter(data, broadcast=True, hash=False)
            if client is not None
            else dask.delayed(data, traverse=False)
        )
        for cv_name, splitter in splitters.items():
            for fold, (train, test) in enumerate(
                splitter.split(X.iloc[index].reset_index(drop=True), y[index])
            ):
                for name, model in models.items():
                    labels.append((name, cv_name, label, fold))
                    tasks.append(
                        dask.delayed(_fit_score, pure=False)(
                            model, data, train, test, level
                        )
                    )
    if not tasks:
        raise ValueError("no folds: the splitters produced no train/test split")
    if client is not None:
        rows = client.gather(client.compute(tasks))
    else:
        rows = dask.compute(*tasks)
    frame = pd.DataFrame(
        list(rows),
        index=pd.MultiIndex.from_tuples(labels, names=["model", "cv", "group", "fold"]),
    )
    out = xr.Dataset.from_dataframe(frame)
    for name in METRICS:
        out[name].attrs["long_name"] = METRICS[name].__doc__.splitlines()[0]
    out["coverage"].attrs["long_name"] = (
        f"fraction of test points inside the {level:.0%} conformal interval"
    )
    out.attrs["level"] = level
    out.attrs["target"] = target
    return out


def summarize(scores):
    """Mean of every metric over groups and folds, as a DataFrame (model x cv).

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset({"mape": (("model", "cv", "group", "fold"), [[[[1.0, 3.0]]]])},
    ...                 coords={"model": ["base"], "cv": ["kfold"], "group": ["all"],
    ...                         "fold": [0, 1]})
    >>> summarize(ds)["mape"].tolist()
    [2.0]
    """
    numeric = [
        v
        for v in scores.data_vars
        if v != "worker" and np.issubdtype(scores[v].dtype, np.number)
    ]
    table = scores[numeric].mean(dim=("group", "fold"), skipna=True).to_dataframe()
    return table.reset_index()


def select_model(scores, *, cv="extrapolation", metric="smape"):
    """Name of the model with the best mean ``metric`` under splitter ``cv``.

    Parameters
    ----------
    scores : xarray.Dataset
        Output of :func:`evaluate`.
    cv : str, default="extrapolation"
    metric : str, default="smape"
        Lower is better except for ``r2``, ``within_10``, ``within_30``, ``coverage``.

    Returns
    -------
    str
    """
    if cv not in scores["cv"].values:
        raise ValueError(f"cv {cv!r} not evaluated; have {list(scores['cv'].values)}")
    if metric not in scores.data_vars:
        raise ValueError(f"metric {metric!r} unknown; have {sorted(METRICS)}")
    mean = scores[metric].sel(cv=cv).mean(dim=("group", "fold"), skipna=True)
    values = mean.to_numpy()
    if np.all(np.isnan(values)):
        raise ValueError(f"no finite {metric!r} scores under cv {cv!r}")
    best = np.nanargmax(values) if metric in _HIGHER_IS_BETTER else np.nanargmin(values)
    return str(mean["model"].values[int(best)])
