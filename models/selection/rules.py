"""The rules :func:`~scaleprobe.models.choose_model` applies to the scores.

A model is set aside when its predictions ignore a parameter the sweep varies, when
it falls below the latency floor of the measured traffic, or (while anything else is
left) when its fit is degenerate. Among the rest the traffic-informed model, the
naive trend and the best time-only law are preferred in that order, each less
preferred one trusted only when it beats the others by :data:`BASELINE_MARGIN`; and
when nothing extrapolates within :data:`RELIABLE_SMAPE`, nothing is presented as a
winner. Each rule returns what it found; the decision is
:func:`~scaleprobe.models.choose_model`'s.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..core.configs import configuration_keys
from ..evaluation.crossval import BASELINE
from ..evaluation.metrics import METRICS
from ..projection.grid import training_frame
from .limits import BASELINE_MARGIN, PLAUSIBLE_FACTOR, RELIABLE_SMAPE

__all__ = [
    "BASELINE_MARGIN",
    "PLAUSIBLE_FACTOR",
    "RELIABLE_SMAPE",
    "blind_to",
    "crossover_warning",
    "floor_model",
    "floor_violation",
    "percent",
    "prefer",
    "select_model",
    "set_aside",
]

_HIGHER_IS_BETTER = {"r2", "within_10", "within_30", "coverage"}


def percent(value):
    """A score in percent as the verdict prints it: one decimal, and one significant
    digit below 0.05 so that two scores at rounding error do not read as 0.0.

    Examples
    --------
    >>> percent(12.345), percent(0.0), percent(1.3e-14), percent(float("nan"))
    ('12.3', '0.0', '1e-14', 'nan')
    """
    if 0 < abs(value) < 0.05:
        return f"{value:.1g}"
    return f"{value:.1f}"


def select_model(scores, *, cv="extrapolation", metric="smape", exclude=()):
    """Name of the model with the best mean ``metric`` under splitter ``cv``.

    The rule that ranks the candidates by their cross-validation; the naive baseline
    is never ranked (it is what the others are read against).

    Parameters
    ----------
    scores : xarray.Dataset
        Output of :func:`~scaleprobe.models.evaluate`.
    cv : str, default="extrapolation"
    metric : str, default="smape"
        Lower is better except for ``r2``, ``within_10``, ``within_30``, ``coverage``.
    exclude : sequence of str, default=()
        Models not to select (the baseline is always excluded).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        ``cv`` or ``metric`` not in the scores, or no finite score left.
    """
    if cv not in scores["cv"].values:
        raise ValueError(f"cv {cv!r} not evaluated; have {list(scores['cv'].values)}")
    if metric not in scores.data_vars:
        raise ValueError(f"metric {metric!r} unknown; have {sorted(METRICS)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = scores[metric].sel(cv=cv).mean(dim=("group", "fold"), skipna=True)
    names = [str(n) for n in mean["model"].values]
    values = mean.to_numpy().astype(float)
    banned = {BASELINE, *exclude}
    values = np.where([n in banned for n in names], np.nan, values)
    if np.all(np.isnan(values)):
        raise ValueError(f"no finite {metric!r} scores under cv {cv!r}")
    best = np.nanargmax(values) if metric in _HIGHER_IS_BETTER else np.nanargmin(values)
    return names[int(best)]


def blind_to(model, X):
    """The varying configuration keys a fitted model's predictions ignore.

    Bandwidth, scale and every application parameter of the sweep are checked: a
    model that predicts the same time at their smallest and largest values mixes
    configurations it cannot tell apart. A column the model takes as a feature of
    its own (``feature_names_in_``: a metric a term selection may leave out) is not
    a parameter it ignores; bandwidth always is checked.

    Parameters
    ----------
    model : estimator
        Fitted.
    X : pandas.DataFrame
        The training features.

    Returns
    -------
    list of str
        The columns whose smallest and largest values give the same prediction at
        the largest node count (or that the model cannot predict with).
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


def floor_model(models):
    """The fitted model whose latency floor bounds every projection, or None.

    Parameters
    ----------
    models : dict of str to PerformanceModel

    Returns
    -------
    PerformanceModel or None
        The traffic-informed model (``traffic``), when it knows the floor.
    """
    model = models.get("traffic")
    return model if model is not None and model.has_floor else None


def floor_violation(model, floor, training):
    """Smallest projected node count where ``model`` falls below the latency floor.

    Parameters
    ----------
    model : PerformanceModel
        Fitted.
    floor : PerformanceModel or None
        The model that knows the floor (:func:`floor_model`); None: no check.
    training : dict
        The training metadata (feature ranges, ppn, ``s0``, parameters).

    Returns
    -------
    float or None
        None when the model stays above the floor up to ``max(1024, 32 n)`` nodes
        (``n`` the largest measured) at every measured scale, or cannot be checked.
    """
    if floor is None or model is floor:
        return None
    ranges = training["feature_ranges"]
    largest = ranges.get("nodes", [1, 1])[1]
    top = max(1024, 32 * largest)
    nodes = 2.0 ** np.arange(np.ceil(np.log2(max(largest, 1))), np.log2(top) + 1)
    scales = ranges.get("scale")
    for scale in sorted(set(scales)) if scales else [None]:
        try:
            frame = training_frame(
                training,
                nodes=nodes,
                bandwidth=ranges.get("bandwidth", [100])[1],
                scale=scale,
            )
            if "scale" in frame and scales:
                frame = frame.assign(scale=scale)
            below = np.flatnonzero(model.predict(frame) < floor.floor(frame))
        except (ValueError, TypeError, KeyError):
            return None
        if below.size:  # the frame's rows: nodes x any application parameters
            return float(frame["nodes"].iloc[below].min())
    return None


def set_aside(models, X, training, degenerate):
    """The models that cannot be trusted whatever their scores, and why.

    Parameters
    ----------
    models : dict of str to PerformanceModel
        Fitted, the naive baseline included (never set aside).
    X : pandas.DataFrame
        The training features.
    training : dict
        The training metadata.
    degenerate : dict of str to str
        Models whose final fit was degenerate, with the warning it gave.

    Returns
    -------
    excluded : dict of str to str
        Every model set aside, with its reason, in the order the rules found them.
    physics : dict of str to str
        Those set aside for what cannot be right (blind to a parameter, below the
        floor): never plausible alternatives either.
    """
    excluded = {}
    for name, model in models.items():
        ignored = [] if name == BASELINE else blind_to(model, X)
        if ignored:
            excluded[name] = (
                f"ignores {', '.join(ignored)}, which "
                f"{'varies' if len(ignored) == 1 else 'vary'}"
            )
    floor = floor_model(models)
    for name, model in models.items():
        nodes = floor_violation(model, floor, training)
        if nodes is not None and name not in excluded:
            excluded[name] = (
                f"falls below the latency floor of the measured traffic from "
                f"{nodes:g} nodes"
            )
    sound = [n for n in models if n not in excluded and n not in degenerate]
    physics = dict(excluded)
    if [n for n in sound if n != BASELINE]:
        # a degenerate law is only the answer when nothing else is left
        for name, message in degenerate.items():
            excluded.setdefault(name, f"degenerate fit ({message.split(':')[0]})")
    return excluded, physics


def prefer(smape, candidates, law, what):
    """Pick among the traffic model, the naive trend and the best time-only law.

    In that order of preference: the traffic-informed model carries the physics
    (floors, one node without traffic), the trend assumes least, a time-only law
    assumes a shape. A less preferred candidate is trusted only when it beats every
    more preferred one by :data:`BASELINE_MARGIN`.

    Parameters
    ----------
    smape : callable
        Name -> the SMAPE it scored (NaN when it has none).
    candidates : list of str
        ``traffic`` and the baseline, in that order, where they may be chosen.
    law : str or None
        The best time-only law, when there is one.
    what : str
        The cross-validation in words, for the reasons.

    Returns
    -------
    chosen : str or None
        None when no candidate has a finite score.
    refused : list of tuple of (str, str)
        Every other candidate with the reason it was not chosen.
    """
    order = [name for name in candidates if np.isfinite(smape(name))]
    if law is not None and np.isfinite(smape(law)):
        order.append(law)
    if not order:
        return None, []
    chosen = order[0]
    for i, name in enumerate(order[1:], start=1):
        if all(smape(name) < (1 - BASELINE_MARGIN) * smape(p) for p in order[:i]):
            chosen = name
    position = order.index(chosen)
    refused = []
    for i, name in enumerate(order):
        if i < position:
            refused.append(
                (
                    name,
                    f"{chosen} beats its SMAPE on {what} by more than "
                    f"{BASELINE_MARGIN:.0%} ({percent(smape(chosen))} % against "
                    f"{percent(smape(name))} %)",
                )
            )
        elif i > position:
            rival = next(
                p
                for p in order[:i]
                if not smape(name) < (1 - BASELINE_MARGIN) * smape(p)
            )
            refused.append(
                (
                    name,
                    f"SMAPE {percent(smape(name))} % on {what} does not beat "
                    f"{rival} ({percent(smape(rival))} %) by {BASELINE_MARGIN:.0%}",
                )
            )
    return chosen, refused


def crossover_warning(model, name, training):
    """Why a trusted time-only law cannot be trusted on its crossover, or None.

    A law whose communication already dominates at the smallest measured node count
    has lost its computation term (a time-only law cannot see traffic).

    Parameters
    ----------
    model : PerformanceModel
        The trusted model, fitted.
    name : str
        Its name.
    training : dict
        The training metadata.

    Returns
    -------
    str or None
    """
    if model.structural:
        return None
    smallest = training["feature_ranges"][training["column"]][0]
    try:
        frame = training_frame(training, nodes=[smallest], bandwidth=100.0)
        parts = model.predict_components(frame)
    except (ValueError, TypeError, KeyError):
        return None
    if not {"computation", "communication"} <= set(parts.columns):
        return None
    if float(parts["communication"].iloc[0]) >= float(parts["computation"].iloc[0]):
        return (
            f"{name} puts the crossover (communication >= computation) at the "
            f"smallest measured node count ({smallest:g}): its computation term is "
            "too small to be trusted (a time-only law cannot see traffic)"
        )
    return None
