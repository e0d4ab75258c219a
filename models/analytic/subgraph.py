"""The complexity model of distributed color coding (Chen et al. 2018, Eqs. 4-16).

For a tree template split into sub-templates ``T_i`` (active part ``T_i'``), with
``k`` colours, ``P`` processes and a random vertex partition of a graph with ``|V|``
vertices and ``|E|`` edges, the paper bounds per process

* computation over all ``W = P - 1`` steps (Eqs. 6, 11):
  ``Comp = sum_i C(k,|T_i|) C(|T_i|,|T_i'|) |E| (P-1) / P**2`` plus the same over
  local neighbours; in a vectorized implementation the combination of colour sets
  costs ``C(k,|T_i|) C(|T_i|,|T_i'|)`` per *vertex*, so a ``|V| / P`` term joins in;
* communication per step (Eq. 8): ``Com_w = alpha + beta sum_i C(k,|T_i|) |E| / P**2``;
  all-to-all pays every step, the pipeline overlaps step ``w`` with the computation
  of step ``w - 1`` (Eqs. 10, 13, 14): ``Time_w = max(Comp_w, Com_w)``;
* peak memory (Eqs. 7, 12): ``C(k,|T_i|) (|V|/P + |E|/P**2)`` for the pipeline, the
  all-to-all holding all ``P - 1`` steps' neighbour tables at once.

The template enters through its memory complexity ``sum_i C(k,|T_i|)`` and
computation complexity ``sum_i C(k,|T_i|) C(|T_i|,|T_i'|)`` (Table 3 of the paper;
:meth:`scaleprobe.kernels.subgraph.Template.complexity`). The constants — seconds per
unit of work and per byte, latency, bytes per table entry — are fitted from
measurements by non-negative least squares.

:class:`SubgraphTerms` turns the five inputs into the terms of these equations (a
scikit-learn transformer); :class:`SubgraphComplexity` fits the constants that weigh
them. Both take a table of any width — a sweep's or the kernel records' columns,
picked by name — or an array whose first columns are :data:`FEATURES`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..core.interface import ModelBase, fitted_ranges
from ..laws.lsq import nnls

__all__ = ["FEATURES", "TERMS", "SubgraphComplexity", "SubgraphTerms"]

#: The inputs, in the order of an array's columns.
FEATURES = (
    "ranks",
    "n_vertices",
    "n_edges",
    "memory_complexity",
    "computation_complexity",
)
#: Other column names a table may give an input under (a sweep names the ranks the
#: kernel reports ``ranks_reported``).
_ALIASES = {"ranks": ("ranks", "ranks_reported")}
#: The terms of Eqs. 4-16, in the order :meth:`SubgraphTerms.transform` returns them.
TERMS = (
    "steps",
    "comp_edges",
    "comp_step",
    "comp_vertices",
    "comm_step",
    "mem_vertices",
    "mem_remote",
)
_TARGETS = ("time", "comp_time", "comm_time", "peak_memory")
_MODES = ("alltoall", "pipeline")


def _named_columns(X) -> dict | None:
    """``{feature: column name}`` of a table with named columns, else None."""
    if not (isinstance(X, pd.DataFrame) and any(isinstance(c, str) for c in X.columns)):
        return None
    found = {}
    for feature in FEATURES:
        for name in _ALIASES.get(feature, (feature,)):
            if name in X.columns:
                found[feature] = name
                break
    if not found:
        raise ValueError(
            f"the table has none of the columns {', '.join(FEATURES)} "
            f"(nor ranks_reported); it has {', '.join(map(str, X.columns))}"
        )
    return found


def _inputs(estimator, X, y=None, *, reset: bool, supervised: bool = False):
    """Validate ``X`` (and ``y``); return the five inputs as an (n, 5) array.

    A named table gives the columns of :data:`FEATURES` it has, by name; an array
    gives its first columns. Inputs a table or array lacks are fixed in the data and
    count as 1 (their size is absorbed by the fitted constants); further columns are
    not inputs of the model and are left alone.
    """
    if reset:
        named = _named_columns(X)
        estimator.inputs_ = None if named is None else tuple(named)
        estimator.columns_ = None if named is None else tuple(named.values())
    elif estimator.columns_ is not None:
        if not isinstance(X, pd.DataFrame):
            raise ValueError(
                f"{type(estimator).__name__} was fitted on the named columns "
                f"{', '.join(estimator.columns_)}; pass a table with them"
            )
        missing = [c for c in estimator.columns_ if c not in X.columns]
        if missing:
            raise ValueError(
                f"{type(estimator).__name__} was fitted on the columns "
                f"{', '.join(estimator.columns_)}; the table lacks {', '.join(missing)}"
            )
    if estimator.columns_ is not None:
        X = X[list(estimator.columns_)]
    if not supervised:
        data = validate_data(estimator, X, reset=reset, dtype=np.float64)
    else:
        data, y = validate_data(
            estimator, X, y, reset=reset, dtype=np.float64, y_numeric=True
        )
    if reset and estimator.inputs_ is None:
        estimator.inputs_ = FEATURES[: data.shape[1]]
    full = np.ones((data.shape[0], len(FEATURES)))
    for position, feature in enumerate(estimator.inputs_):
        full[:, FEATURES.index(feature)] = data[:, position]
    return (full, y) if supervised else full


def _terms(full: np.ndarray) -> np.ndarray:
    """The columns of :data:`TERMS` from the (n, 5) inputs."""
    ranks = np.maximum(full[:, 0], 1.0)  # P below 1 counts as one process
    vertices, edges, memory, computation = full[:, 1:].T
    return np.column_stack(
        [
            ranks - 1,
            computation * edges / ranks,
            computation * edges / ranks**2,
            computation * vertices / ranks,
            memory * edges / ranks**2,
            memory * vertices / ranks,
            memory * edges * (ranks - 1) / ranks**2,
        ]
    )


class SubgraphTerms(TransformerMixin, BaseEstimator):
    """The terms of Chen et al. 2018's Eqs. 4-16 from graph, template, process count.

    With ``P`` the process count (values below 1 count as 1), ``|V|``, ``|E|`` the
    graph's size and ``M``, ``C`` the template's memory and computation complexity,
    the columns of :data:`TERMS` are ``steps = P - 1``, ``comp_edges = C |E| / P``,
    ``comp_step = C |E| / P**2``, ``comp_vertices = C |V| / P``,
    ``comm_step = M |E| / P**2``, ``mem_vertices = M |V| / P`` and
    ``mem_remote = M |E| (P - 1) / P**2``.

    ``X`` is a table with (some of) the columns :data:`FEATURES` (``ranks`` may be
    named ``ranks_reported``) among any others, or an array whose first columns are
    :data:`FEATURES` in order. Inputs left out are fixed in the data and count as 1;
    other columns are not used.

    Attributes
    ----------
    inputs_ : tuple of str
        The :data:`FEATURES` the data gave.
    columns_ : tuple of str or None
        Their column names in a table (None for an array).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when fitted on a table.

    Examples
    --------
    >>> import pandas as pd
    >>> records = pd.DataFrame({"kernel": ["subgraph"] * 2, "ranks_reported": [1, 4],
    ...                         "n_vertices": [10, 10], "n_edges": [40, 40]})
    >>> terms = SubgraphTerms().set_output(transform="pandas").fit_transform(records)
    >>> terms[["steps", "comp_edges", "comm_step"]]
       steps  comp_edges  comm_step
    0    0.0        40.0       40.0
    1    3.0        10.0        2.5
    """

    def fit(self, X, y=None):
        """Record which inputs ``X`` gives.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : SubgraphTerms
        """
        _inputs(self, X, reset=True)
        return self

    def transform(self, X):
        """The terms, one column per name of :data:`TERMS`.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, 7)
        """
        check_is_fitted(self)
        return _terms(_inputs(self, X, reset=False))

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns: :data:`TERMS`.

        Parameters
        ----------
        input_features : None
            Ignored.

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self)
        return np.asarray(TERMS, dtype=object)


def _design(target: str, mode: str, terms: np.ndarray) -> tuple[list, list]:
    """Names of the constants and the columns they multiply (besides the base)."""
    t = dict(zip(TERMS, terms.T, strict=True))
    if target == "comp_time":
        return ["per_edge_work", "per_vertex_work"], [
            t["comp_edges"],
            t["comp_vertices"],
        ]
    if target == "comm_time":
        return ["latency", "per_entry"], [t["steps"], t["comm_step"] * t["steps"]]
    if target == "peak_memory":
        remote = t["mem_remote"] if mode == "alltoall" else t["comm_step"]
        return ["per_table_entry", "per_remote_entry"], [t["mem_vertices"], remote]
    return ["per_edge_work", "per_vertex_work", "latency", "per_entry"], [
        t["comp_edges"],
        t["comp_vertices"],
        t["steps"],
        t["comm_step"] * t["steps"],
    ]


def _step_costs(values: dict, t: dict) -> tuple:
    """Computation (Eq. 11) and communication (Eq. 8) of one step, per row."""
    comp_step = values["per_edge_work"] * t["comp_step"]
    comm_step = values["latency"] + values["per_entry"] * t["comm_step"]
    return comp_step, comm_step


class SubgraphComplexity(ModelBase, RegressorMixin, BaseEstimator):
    """Eqs. 4-16 of Chen et al. 2018 with constants fitted from measurements.

    ``X`` is what :class:`SubgraphTerms` takes: a table with the columns of
    :data:`FEATURES` among any others, or an array whose first columns are
    ``ranks`` (P), ``n_vertices``, ``n_edges``, ``memory_complexity`` and
    ``computation_complexity``. Inputs left out are fixed in the data (a sweep over
    ranks only needs ``ranks``): they count as 1 and their size is absorbed by the
    fitted constants.

    Parameters
    ----------
    target : {"time", "comp_time", "comm_time", "peak_memory"}, default="time"
        What ``y`` measures (seconds, or bytes for ``peak_memory``).
    mode : {"alltoall", "pipeline"}, default="alltoall"
        The exchange pattern, for ``time`` and ``peak_memory``.
    relative : bool, default=True
        Minimize relative rather than absolute residuals, so that measurements of
        small and large templates weigh alike (rows with ``y <= 0`` keep weight 1).

    Attributes
    ----------
    intercept_ : float
        The constant part ``base`` (s, or bytes for ``peak_memory``).
    coef_ : ndarray
        The fitted constants, named by :attr:`coef_names_`.
    coef_names_ : tuple of str
        By target: ``per_edge_work`` and ``per_vertex_work`` (s per unit of
        computation complexity), ``latency`` (alpha, s per step), ``per_entry``
        (beta, s per table entry sent), or ``per_table_entry`` and
        ``per_remote_entry`` (bytes).
    inputs_ : tuple of str
        The :data:`FEATURES` the data gave.
    columns_ : tuple of str or None
        Their column names in a table (None for an array).
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when fitted on a table.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[p, 1e4, 5e4, 147, 434] for p in (1, 2, 4, 8)], dtype=float)
    >>> y = 1e-8 * X[:, 4] * X[:, 2] / X[:, 0] + 1e-3
    >>> model = SubgraphComplexity(target="comp_time").fit(X, y)
    >>> model.coef_names_
    ('per_edge_work', 'per_vertex_work')
    >>> bool(np.allclose(model.predict(X), y))
    True
    """

    def __init__(self, *, target="time", mode="alltoall", relative=True):
        self.target = target
        self.mode = mode
        self.relative = relative

    def _evaluate(self, terms, base, coef):
        names, columns = _design(self.target, self.mode, terms)
        if not (self.target == "time" and self.mode == "pipeline"):
            return base + sum(
                c * column for c, column in zip(coef, columns, strict=True)
            )
        # Eqs. 10 and 13: the first step's transfer is exposed, later steps cost the
        # larger of their computation and their communication.
        values = dict(zip(names, coef, strict=True))
        t = dict(zip(TERMS, terms.T, strict=True))
        comp_step, comm_step = _step_costs(values, t)
        return (
            base
            + comp_step
            + values["per_vertex_work"] * t["comp_vertices"]
            + np.where(t["steps"] > 0, comm_step, 0.0)
            + t["steps"] * np.maximum(comp_step, comm_step)
        )

    def fit(self, X, y):
        """Fit the constants by non-negative least squares.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            See the class description.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : SubgraphComplexity
        """
        if self.target not in _TARGETS:
            raise ValueError(f"target must be one of {_TARGETS}, got {self.target!r}")
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {self.mode!r}")
        full, y = _inputs(self, X, y, reset=True, supervised=True)
        terms = _terms(full)
        names, columns = _design(self.target, self.mode, terms)
        design = np.column_stack([np.ones_like(y), *columns])
        y = y.astype(np.float64)  # integer targets must weigh as floats do
        weight = np.ones_like(y)
        if self.relative:
            positive = y > 0
            weight[positive] = 1.0 / y[positive]
        # Scale columns so that nnls sees comparable magnitudes.
        scale = np.abs(design * weight[:, None]).max(axis=0)
        scale[scale == 0] = 1.0
        solution, _ = nnls(design * weight[:, None] / scale, y * weight)
        if self.target == "time" and self.mode == "pipeline":

            def residual(params):
                values = params / scale
                return (self._evaluate(terms, values[0], values[1:]) - y) * weight

            solution = least_squares(residual, solution, bounds=(0, np.inf)).x
        values = solution / scale
        self.intercept_ = float(values[0])
        self.coef_ = values[1:]
        self.coef_names_ = tuple(names)
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def predict(self, X):
        """Predicted ``target`` for each row of ``X``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        terms = _terms(_inputs(self, X, reset=False))
        return np.asarray(
            self._evaluate(terms, self.intercept_, self.coef_), dtype=np.float64
        )

    def overlap(self, X):
        """Eq. 14's overlap ratio ``rho = min(Comp_w, Com_w) / Com_w`` per row.

        Needs a model fitted with ``target="time"``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        if self.target != "time":
            raise ValueError(
                f"overlap needs target='time', this model has {self.target!r}"
            )
        t = dict(zip(TERMS, _terms(_inputs(self, X, reset=False)).T, strict=True))
        values = dict(zip(self.coef_names_, self.coef_, strict=True))
        comp_step, comm_step = _step_costs(values, t)
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.minimum(comp_step, comm_step) / comm_step
        return np.where(comm_step > 0, rho, 1.0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # A physical model with fixed terms does not fit arbitrary regression data.
        tags.regressor_tags.poor_score = True
        return tags
