"""Cross-validate an ensemble of models as one Dask graph."""

from __future__ import annotations

import sys
import time
import warnings

import dask
import numpy as np
import pandas as pd
import xarray as xr
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

from ..core.configs import configuration_keys
from ..core.features import make_features
from ..core.interface import interval_method_of
from ..core.warnings import kept_state, quiet
from ..laws.baseline import PowerLawBaseline
from .intervals import _configurations
from .metrics import METRICS, score_predictions
from .splitters import ExtrapolationSplit

__all__ = ["BASELINE", "ConfigurationKFold", "default_cv", "evaluate", "summarize"]

#: Name of the naive baseline :func:`evaluate` always scores.
BASELINE = "baseline"


class ConfigurationKFold:
    """K-fold over configurations (all runs and trials of one stay together).

    ``n_splits`` is lowered to the number of configurations when there are fewer;
    with a single configuration there is no split.

    Parameters
    ----------
    n_splits : int, default=5
    column : str, default="nodes"
        Recorded for intervals; every feature but ``run``/``trial`` defines a
        configuration.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"nodes": [1, 1, 2, 2, 4], "run": [0, 1, 0, 1, 0]})
    >>> len(list(ConfigurationKFold(5).split(X)))
    3
    """

    def __init__(self, n_splits=5, column="nodes"):
        self.n_splits = n_splits
        self.column = column

    def _groups(self, X):
        keys = configuration_keys(X)
        return X.groupby(keys, sort=True).ngroup().to_numpy()

    def split(self, X, y=None, groups=None):
        """Yield ``(train, test)`` index pairs."""
        labels = self._groups(X)
        count = np.unique(labels).size
        if count < 2:
            return
        inner = GroupKFold(n_splits=min(int(self.n_splits), count))
        yield from inner.split(X, y, labels)

    def get_n_splits(self, X=None, y=None, groups=None):
        """Number of splits for ``X``."""
        if X is None:
            return int(self.n_splits)
        count = np.unique(self._groups(X)).size
        return 0 if count < 2 else min(int(self.n_splits), count)

    def __repr__(self):
        return f"ConfigurationKFold(n_splits={self.n_splits})"


def default_cv(column="nodes"):
    """Random folds over configurations and the extrapolation question.

    Parameters
    ----------
    column : str, default="nodes"
        Column of the extrapolation (``ranks`` for data without nodes).

    Returns
    -------
    dict
        ``{"kfold": ConfigurationKFold(5), "extrapolation":
        ExtrapolationSplit(column, n_splits=3)}``
    """
    return {
        "kfold": ConfigurationKFold(5, column=column),
        "extrapolation": ExtrapolationSplit(column=column, n_splits=3),
    }


def _fit_score(model, data, train, test, level):
    """Fit on ``train``, score on the test configurations; one task of the graph."""
    X, y = data
    start = time.perf_counter()
    rows, centres = _configurations(X.iloc[test], y[test])
    with quiet():  # degenerate fits of a fold are expected; final fits report theirs
        try:
            fitted = clone(model).fit(X.iloc[train], y[train])
            pred = np.asarray(fitted.predict(rows), dtype=float)
        except ValueError as error:  # the fold holds too little for this model
            row = dict.fromkeys([*METRICS, "coverage", "interval_ratio"], np.nan)
            row.update(
                n_train=len(train),
                n_test=len(centres),
                fit_seconds=np.nan,
                worker=_worker_address(),
                error=str(error).splitlines()[0],
            )
            return row
        row = score_predictions(centres, pred)
        row["coverage"] = np.nan
        if interval_method_of(fitted) == "consistent-range":
            try:
                lower, upper = fitted.predict_interval(rows, level=level)
            except (ValueError, TypeError):
                lower = upper = np.full(pred.shape, np.nan)
            finite = np.isfinite(lower) & np.isfinite(upper)
            if finite.all():  # an interval that is not finite is never "covered"
                row["coverage"] = float(
                    np.mean((centres >= lower) & (centres <= upper))
                )
                # a lower bound at zero makes the ratio unbounded, not 1e300
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = np.where(lower > 0, upper / lower, np.inf)
                row["interval_ratio"] = float(np.median(ratio))
    row.setdefault("interval_ratio", np.nan)
    row["error"] = ""
    row["n_train"] = len(train)
    row["n_test"] = len(centres)
    row["fit_seconds"] = time.perf_counter() - start
    row["worker"] = _worker_address()
    return row


def _worker_address():
    distributed = sys.modules.get("distributed")
    if distributed is None:  # not on a Dask worker: do not import it for nothing
        return "local"
    try:
        return distributed.get_worker().address
    except ValueError:
        return "local"


def _named(models):
    if isinstance(models, dict):
        return dict(models)
    named = {}
    for model in models:
        params = model.get_params(deep=False)
        name = params.get("form") if params.get("terms") is None else None
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
    baseline=True,
):
    """Cross-validate every model x group x splitter x fold in one Dask graph.

    Scores are computed per configuration: the test rows of a fold are reduced to
    their configurations (trials averaged per run, the geometric mean of the runs)
    and each centre is compared with the prediction.

    Parameters
    ----------
    models : dict of str to estimator, or list of estimators
        The ensemble; lists are named after each model's ``form`` or class.
    dataset : xarray.Dataset or tuple of (DataFrame, array-like)
        Results (turned into features by :func:`make_features`) or ``(X, y)``.
    cv : dict of str to splitter, or splitter, default=None
        Default :func:`default_cv`.
    groupby : str or list of str, default=None
        Feature columns to evaluate separately, e.g. ``"scale"`` for Eq. 2 per scale.
    target : str, default="time"
    client : distributed.Client, default=None
        Run the graph on this cluster (the data are scattered to every worker once);
        None uses the default Dask scheduler.
    level : float, default=0.9
        Level of the intervals whose empirical ``coverage`` of the test
        configurations is reported (models with a range of their own,
        :attr:`~scaleprobe.models.PerformanceModel.interval_method`
        ``"consistent-range"``; an interval that is not finite is reported as NaN,
        never as covered).
    s0 : float, default=25
    baseline : bool, default=True
        Also score the naive :class:`PowerLawBaseline` (named :data:`BASELINE`), so
        that every score can be read against it.

    Returns
    -------
    xarray.Dataset
        Dims ``model``, ``cv``, ``group``, ``fold``; one variable per metric of
        :data:`~scaleprobe.models.evaluation.metrics.METRICS` plus ``coverage``,
        ``interval_ratio`` (median upper/lower), ``n_train``, ``n_test`` (test
        configurations), ``fit_seconds`` and ``worker``. NaN where a splitter has
        fewer folds.
    """
    models = _named(models)
    if not models:
        raise ValueError("models is empty")
    if isinstance(dataset, xr.Dataset):
        X, y = make_features(dataset, target=target, s0=s0)
    else:
        X, y = dataset
        X = X.reset_index(drop=True)
    column = "nodes" if "nodes" in X.columns else "ranks"
    if baseline and BASELINE not in models:
        models[BASELINE] = PowerLawBaseline(over=column)
    splitters = default_cv(column) if cv is None else cv
    if not isinstance(splitters, dict):
        splitters = {type(splitters).__name__: splitters}
    y = np.asarray(y, dtype=float)
    labels, tasks = _tasks(models, (X, y), splitters, groupby, client, level)
    if not tasks:
        raise ValueError(
            "no folds: the splitters produced no train/test split (extrapolation "
            "needs at least three distinct node counts)"
        )
    with kept_state():  # the folds' threads swap the process's warning filters
        if client is not None:
            rows = client.gather(client.compute(tasks))
        else:
            rows = dask.compute(*tasks)
    return _scores(rows, labels, level, target)


def _tasks(models, data, splitters, groupby, client, level):
    """One delayed :func:`_fit_score` per model x group x splitter x fold, and the
    label of each."""
    X, y = data
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
        part = (X.iloc[index].reset_index(drop=True), y[index])
        # Unique keys (hash=False): re-evaluating the same data must not race with
        # the release of an earlier call's identical key.
        shipped = (
            client.scatter(part, broadcast=True, hash=False)
            if client is not None
            else dask.delayed(part, traverse=False)
        )
        for cv_name, splitter in splitters.items():
            for fold, (train, test) in enumerate(splitter.split(part[0], part[1])):
                for name, model in models.items():
                    labels.append((name, cv_name, label, fold))
                    tasks.append(
                        dask.delayed(_fit_score, pure=False)(
                            model, shipped, train, test, level
                        )
                    )
    return labels, tasks


def _scores(rows, labels, level, target):
    """The scores Dataset (dims model, cv, group, fold) of the tasks' rows."""
    frame = pd.DataFrame(
        list(rows),
        index=pd.MultiIndex.from_tuples(labels, names=["model", "cv", "group", "fold"]),
    )
    out = xr.Dataset.from_dataframe(frame)
    for name in METRICS:
        out[name].attrs["long_name"] = METRICS[name].__doc__.splitlines()[0]
    out["coverage"].attrs["long_name"] = (
        f"fraction of test configurations inside the {level:.0%} interval"
    )
    out["interval_ratio"].attrs["long_name"] = "median upper / lower bound"
    out.attrs["level"] = level
    out.attrs["target"] = target
    return out


def summarize(scores):
    """Mean of every metric over groups and folds, as a DataFrame (model x cv).

    ``interval_ratio`` is the median over groups and folds instead: one fold whose
    interval reaches zero has an infinite ratio, which a mean would report for all.

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
        if v not in ("worker", "error") and np.issubdtype(scores[v].dtype, np.number)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices stay NaN
        table = scores[numeric].mean(dim=("group", "fold"), skipna=True)
        if "interval_ratio" in table:
            table["interval_ratio"] = scores["interval_ratio"].median(
                dim=("group", "fold"), skipna=True
            )
    return table.to_dataframe().reset_index()
