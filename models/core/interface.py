"""The one interface every performance model implements.

:class:`PerformanceModel` is what the rest of scaleprobe asks of a model: the
cross-validation, the intervals, the choice of the model to trust, projections,
reports, model files and the command line. A model answers every question itself,
its capabilities included (whether its interval is a range of plausible laws,
whether it knows a latency floor, whether it prices traffic on another network), so
nothing outside this module tells models apart by their class or by the attributes
they happen to have.

:class:`ModelBase` gives the answers of a model without a capability (no range of
its own, no floor, one total part), :class:`PerformanceModelTags` the scikit-learn
tags of models of positive counts and times. An estimator from elsewhere (any
scikit-learn regressor) is asked through :func:`interval_method_of` and
:func:`describe_model`, which give it the answers of :class:`ModelBase`.

Examples
--------
>>> import numpy as np
>>> from scaleprobe.models import PowerLawBaseline
>>> model = PowerLawBaseline().fit(np.array([[1.0], [2.0], [4.0]]), [4.0, 2.0, 1.0])
>>> isinstance(model, PerformanceModel)
True
>>> model.interval_method, model.fitted_ranges_
('conformal', {'x0': (1.0, 4.0)})
>>> lower, upper = model.predict_interval(np.array([[8.0]]))  # its prediction
>>> round(float(lower[0]), 9), round(float(upper[0]), 9)
(0.5, 0.5)
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd

__all__ = [
    "DEFAULT_LEVEL",
    "INTERVAL_FLOOR",
    "INTERVAL_METHODS",
    "ModelBase",
    "PerformanceModel",
    "PerformanceModelTags",
    "check_level",
    "describe_model",
    "fitted_ranges",
    "frame_defaults_of",
    "interval_method_of",
]

#: The level of :meth:`PerformanceModel.predict_interval` when none is given.
DEFAULT_LEVEL = 0.9

#: What a model's :meth:`~PerformanceModel.predict_interval` is:
#: ``"consistent-range"``, the range of every law the measurements cannot reject at
#: the level; ``"conformal"``, no range of its own (the prediction, which
#: :func:`~scaleprobe.models.calibrate_interval` widens by what held-out node counts
#: show).
INTERVAL_METHODS = ("consistent-range", "conformal")

#: Spread (log) per doubling beyond the largest measured count that every calibrated
#: interval has at least, either side of its prediction: laws that agree on the
#: measured counts, or data measured without noise, still do not know the machine
#: beyond them (0.05 is 5.1 % per doubling, 1.22 times wide at 4 times the count).
INTERVAL_FLOOR = 0.05


@runtime_checkable
class PerformanceModel(Protocol):
    """A scikit-learn regressor of a time (or a count) that scaleprobe can project.

    Attributes
    ----------
    interval_method : {"consistent-range", "conformal"}
        What :meth:`predict_interval` is (:data:`INTERVAL_METHODS`).
    prices_link : bool
        Whether the model prices its traffic on the link a frame names
        (``link_bandwidth``, ``latency``), so that a projection may move to a network
        with another latency; a time-only law takes another link bandwidth only as a
        share of the training link.
    structural : bool
        Whether the model describes what the program computes and sends rather than
        a shape of its time: it fits one node (no inter-node traffic) as a regime of
        its own, and a jump or a level in the measured time is its to explain.
    has_floor : bool
        Whether :meth:`floor` knows the latency floor (fitted models only).
    calibrates_sizes : bool
        Whether the fit widens the model's interval beyond the measured sizes of the
        application parameters and ``scale`` by what holding out the largest cost
        it (:func:`~scaleprobe.models.calibrate_axis`); False for a model whose
        inputs are metrics it checks against their training ranges itself.
    frame_defaults : dict
        How to build a frame to predict on when nothing else says: ``ppn`` (ranks
        per node the model assumes, None when it assumes none) and ``s0`` (the
        reference scale of the data size ``D = 2**(scale - s0)``).
    fitted_ranges_ : dict of str to tuple of float, or None
        ``(min, max)`` of every numeric column the model was fitted on; None before
        :meth:`fit` (and for models read from files written before it was kept).
    """

    interval_method: str
    prices_link: bool
    structural: bool
    has_floor: bool
    calibrates_sizes: bool
    frame_defaults: dict
    fitted_ranges_: dict | None

    def fit(self, X, y):
        """Fit the model to the measurements ``y`` of the configurations ``X``."""

    def predict(self, X):
        """Predicted value of each row of ``X``."""

    def predict_interval(self, X, *, level=DEFAULT_LEVEL):
        """``(lower, upper)`` around the prediction of each row, at ``level``."""

    def predict_components(self, X):
        """A DataFrame of the prediction's parts, one column each.

        ``computation`` and ``communication`` (and the parts they are made of,
        e.g. ``latency``, ``bandwidth``, a law's terms) where the model splits its
        prediction; a single ``total`` where it does not.
        """

    def describe(self):
        """One line naming the fitted law (terms and coefficients, or its parts)."""

    def floor(self, X):
        """The latency floor of each row, s (NaN where the model knows none)."""


class ModelBase:
    """The answers of a model without a capability; a model overrides what it has.

    Put it before ``RegressorMixin`` and ``BaseEstimator`` in the bases. The
    interval is the prediction itself (``interval_method = "conformal"``: a
    calibration widens it), the components one ``total`` part, the floor unknown,
    and :meth:`describe` the class's name.
    """

    interval_method = "conformal"
    prices_link = False
    structural = False
    calibrates_sizes = True
    fitted_ranges_ = None

    @property
    def has_floor(self):
        """Whether :meth:`floor` knows the latency floor: not without a link model."""
        return False

    @property
    def frame_defaults(self):
        """No ranks per node of its own; the reference scale 25 of ``D``."""
        return {"ppn": None, "s0": 25.0}

    def predict_interval(self, X, *, level=DEFAULT_LEVEL):
        """The prediction as both bounds: the model has no range of its own.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        level : float, default=0.9
            Checked, unused.

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
        """
        check_level(level)
        prediction = np.asarray(self.predict(X), dtype=float)
        return prediction, prediction.copy()

    def predict_components(self, X):
        """The prediction as one part, ``total``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        pandas.DataFrame
        """
        return pd.DataFrame({"total": np.asarray(self.predict(X), dtype=float)})

    def floor(self, X):
        """No latency floor is known: NaN for every row.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        return np.full(len(X), np.nan)

    def describe(self):
        """The class's name (a model with a law to show overrides it).

        Returns
        -------
        str
        """
        return type(self).__name__


class PerformanceModelTags:
    """Mixin: positive inputs (counts, sizes) and targets (times), and no promise to
    fit arbitrary random data well (a law has a fixed shape).

    Put it first in the bases, before ``RegressorMixin`` and ``BaseEstimator``.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.target_tags.positive_only = True
        tags.regressor_tags.poor_score = True
        return tags


def check_level(level):
    """Refuse an interval level outside ``(0, 1)``.

    Parameters
    ----------
    level : float

    Returns
    -------
    float

    Examples
    --------
    >>> check_level(1.5)
    Traceback (most recent call last):
    ...
    ValueError: level must be in (0, 1); got 1.5
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    return level


def fitted_ranges(X):
    """``(min, max)`` of every numeric column of ``X`` (``x0``, ``x1``... of arrays).

    Parameters
    ----------
    X : DataFrame or array-like of shape (n_samples, n_features)

    Returns
    -------
    dict of str to tuple of float

    Examples
    --------
    >>> import pandas as pd
    >>> fitted_ranges(pd.DataFrame({"nodes": [2, 8, 4], "kernel": ["a", "b", "c"]}))
    {'nodes': (2.0, 8.0)}
    """
    if isinstance(X, pd.DataFrame):
        columns = {
            str(c): X[c].to_numpy(dtype=float)
            for c in X.columns
            if pd.api.types.is_numeric_dtype(X[c])
        }
    else:
        array = np.asarray(X, dtype=float)
        array = array.reshape(len(array), -1)
        columns = {f"x{i}": array[:, i] for i in range(array.shape[1])}
    ranges = {}
    for name, values in columns.items():
        finite = values[np.isfinite(values)]
        if finite.size:
            ranges[name] = (float(finite.min()), float(finite.max()))
    return ranges


def interval_method_of(model):
    """What ``model``'s interval is (:data:`INTERVAL_METHODS`); an estimator that is
    no :class:`PerformanceModel` has no range of its own.

    Parameters
    ----------
    model : estimator

    Returns
    -------
    str

    Examples
    --------
    >>> from sklearn.linear_model import LinearRegression
    >>> interval_method_of(LinearRegression())
    'conformal'
    """
    if isinstance(model, PerformanceModel):
        return model.interval_method
    return "conformal"


def frame_defaults_of(model):
    """How to build a frame for ``model`` when nothing else says (``ppn``, ``s0``);
    an estimator that is no :class:`PerformanceModel` assumes no ranks per node and
    the reference scale 25.

    Parameters
    ----------
    model : estimator

    Returns
    -------
    dict

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> frame_defaults_of(ScalingLaw(ppn=18, s0=20))
    {'ppn': 18, 's0': 20}
    """
    if isinstance(model, PerformanceModel):
        return dict(model.frame_defaults)
    return {"ppn": None, "s0": 25.0}


def describe_model(model):
    """One line naming a fitted model's law (terms and coefficients, or its parts).

    Parameters
    ----------
    model : estimator
        A :class:`PerformanceModel` describes itself; any other estimator is named
        by its class.

    Returns
    -------
    str

    Examples
    --------
    >>> from scaleprobe.models import ScalingLaw
    >>> describe_model(ScalingLaw.from_coefficients(["1/p", "1"], [2.0, 0.5]))
    '2/p + 0.5'
    """
    if isinstance(model, PerformanceModel):
        return model.describe()
    return type(model).__name__
