"""The complexity model of distributed color coding (seed 004, Eqs. 4-16).

For a tree template split into sub-templates ``T_i`` (active part ``T_i'``), with
``k`` colours, ``P`` processes and a random vertex partition of a graph with ``|V|``
vertices and ``|E|`` edges, the seed bounds per process

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
computation complexity ``sum_i C(k,|T_i|) C(|T_i|,|T_i'|)`` (Table 3 of the seed;
:meth:`scaleprobe.kernels.subgraph.Template.complexity`). The constants — seconds per
unit of work and per byte, latency, bytes per table entry — are fitted from
measurements by non-negative least squares.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares, nnls
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["FEATURES", "SubgraphComplexity", "complexity_features"]

#: Columns of ``X``, in order.
FEATURES = (
    "ranks",
    "n_vertices",
    "n_edges",
    "memory_complexity",
    "computation_complexity",
)
_TARGETS = ("time", "comp_time", "comm_time", "peak_memory")
_MODES = ("alltoall", "pipeline")


def complexity_features(rows) -> np.ndarray:
    """The model's ``X`` from kernel records' metrics or a table with those columns.

    Parameters
    ----------
    rows : list of dict or pandas.DataFrame
        Each with ``ranks`` (or ``ranks_reported``, as a sweep Dataset names it),
        ``n_vertices``, ``n_edges``, ``memory_complexity`` and
        ``computation_complexity`` (the subgraph kernel's metrics).

    Returns
    -------
    numpy.ndarray of shape (n_rows, 5)

    Examples
    --------
    >>> complexity_features([{"ranks": 2, "n_vertices": 10, "n_edges": 20,
    ...                       "memory_complexity": 3, "computation_complexity": 6}])
    array([[ 2., 10., 20.,  3.,  6.]])
    """
    if hasattr(rows, "to_dict"):
        rows = rows.to_dict("records")
    table = []
    for row in rows:
        row = dict(row)
        if "ranks" not in row and "ranks_reported" in row:
            row["ranks"] = row["ranks_reported"]
        missing = [name for name in FEATURES if name not in row]
        if missing:
            raise ValueError(
                f"a row lacks {', '.join(missing)}; "
                f"the model needs {', '.join(FEATURES)}"
            )
        table.append([float(row[name]) for name in FEATURES])
    return np.array(table, dtype=np.float64).reshape(-1, len(FEATURES))


def _terms(X: np.ndarray) -> dict:
    # Columns left out at the end describe a fixed problem: they count as 1.
    full = np.ones((X.shape[0], len(FEATURES)))
    full[:, : X.shape[1]] = X
    ranks = np.maximum(full[:, 0], 1.0)
    vertices, edges, memory, computation = (
        full[:, 1],
        full[:, 2],
        full[:, 3],
        full[:, 4],
    )
    return {
        "ranks": ranks,
        "steps": ranks - 1,
        "comp_edges": computation * edges / ranks,
        "comp_step": computation * edges / ranks**2,
        "comp_vertices": computation * vertices / ranks,
        "comm_step": memory * edges / ranks**2,
        "mem_vertices": memory * vertices / ranks,
        "mem_remote": memory * edges * (ranks - 1) / ranks**2,
    }


class SubgraphComplexity(RegressorMixin, BaseEstimator):
    """Eqs. 4-16 of seed 004 with constants fitted from measurements.

    ``X`` has the columns of :data:`FEATURES`, in order: ``ranks`` (P, values below 1
    count as 1), ``n_vertices``, ``n_edges``, ``memory_complexity`` and
    ``computation_complexity`` of the template. Trailing columns may be left out when
    they are fixed in the data (a sweep over ranks only needs ``ranks``): they count
    as 1 and their size is absorbed by the fitted constants.

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
    coef_ : dict of str to float
        Fitted constants: ``base`` and, by target, ``per_edge_work`` and
        ``per_vertex_work`` (s per unit of computation complexity), ``latency``
        (alpha, s per step), ``per_entry`` (beta, s per table entry sent), or
        ``per_table_entry`` and ``per_remote_entry`` (bytes).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[p, 1e4, 5e4, 147, 434] for p in (1, 2, 4, 8)], dtype=float)
    >>> y = 1e-8 * X[:, 4] * X[:, 2] / X[:, 0] + 1e-3
    >>> model = SubgraphComplexity(target="comp_time").fit(X, y)
    >>> bool(np.allclose(model.predict(X), y))
    True
    """

    def __init__(self, *, target="time", mode="alltoall", relative=True):
        self.target = target
        self.mode = mode
        self.relative = relative

    def _design(self, terms):
        ones = np.ones_like(terms["ranks"])
        if self.target == "comp_time":
            return ["base", "per_edge_work", "per_vertex_work"], [
                ones,
                terms["comp_edges"],
                terms["comp_vertices"],
            ]
        if self.target == "comm_time":
            return ["base", "latency", "per_entry"], [
                ones,
                terms["steps"],
                terms["comm_step"] * terms["steps"],
            ]
        if self.target == "peak_memory":
            remote = (
                terms["mem_remote"] if self.mode == "alltoall" else terms["comm_step"]
            )
            return ["base", "per_table_entry", "per_remote_entry"], [
                ones,
                terms["mem_vertices"],
                remote,
            ]
        return ["base", "per_edge_work", "per_vertex_work", "latency", "per_entry"], [
            ones,
            terms["comp_edges"],
            terms["comp_vertices"],
            terms["steps"],
            terms["comm_step"] * terms["steps"],
        ]

    def _evaluate(self, terms, values):
        names, columns = self._design(terms)
        if not (self.target == "time" and self.mode == "pipeline"):
            return sum(values[n] * c for n, c in zip(names, columns, strict=True))
        # Eqs. 10 and 13: the first step's transfer is exposed, later steps cost the
        # larger of their computation and their communication.
        comp_step = values["per_edge_work"] * terms["comp_step"]
        comm_step = values["latency"] + values["per_entry"] * terms["comm_step"]
        return (
            values["base"]
            + comp_step
            + values["per_vertex_work"] * terms["comp_vertices"]
            + np.where(terms["steps"] > 0, comm_step, 0.0)
            + terms["steps"] * np.maximum(comp_step, comm_step)
        )

    def fit(self, X, y):
        """Fit the constants by non-negative least squares.

        Parameters
        ----------
        X : array-like of shape (n_samples, 5)
            Columns :data:`FEATURES`.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : SubgraphComplexity
        """
        if self.target not in _TARGETS:
            raise ValueError(f"target must be one of {_TARGETS}, got {self.target!r}")
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {_MODES}, got {self.mode!r}")
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        if X.shape[1] > len(FEATURES):
            raise ValueError(
                f"X has {X.shape[1]} feature(s), but SubgraphComplexity takes at most "
                f"{len(FEATURES)}: {', '.join(FEATURES)}"
            )
        terms = _terms(X)
        names, columns = self._design(terms)
        design = np.column_stack(columns)
        weight = np.ones_like(y)
        if self.relative:
            positive = y > 0
            weight[positive] = 1.0 / y[positive]
        # Scale columns so that nnls sees comparable magnitudes.
        scale = np.abs(design * weight[:, None]).max(axis=0)
        scale[scale == 0] = 1.0
        solution, _ = nnls(design * weight[:, None] / scale, y * weight)
        values = dict(zip(names, solution / scale, strict=True))
        if self.target == "time" and self.mode == "pipeline":
            start = solution.copy()

            def residual(params):
                values = dict(zip(names, params / scale, strict=True))
                return (self._evaluate(terms, values) - y) * weight

            result = least_squares(residual, start, bounds=(0, np.inf))
            values = dict(zip(names, result.x / scale, strict=True))
        self.coef_ = {name: float(value) for name, value in values.items()}
        return self

    def predict(self, X):
        """Predicted ``target`` for each row of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 5)

        Returns
        -------
        numpy.ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.asarray(self._evaluate(_terms(X), self.coef_), dtype=np.float64)

    def overlap(self, X):
        """Eq. 14's overlap ratio ``rho = min(Comp_w, Com_w) / Com_w`` per row.

        Needs a model fitted with ``target="time"``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 5)

        Returns
        -------
        numpy.ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        if self.target != "time":
            raise ValueError(
                f"overlap needs target='time', this model has {self.target!r}"
            )
        terms = _terms(validate_data(self, X, reset=False, dtype=np.float64))
        comp_step = self.coef_["per_edge_work"] * terms["comp_step"]
        comm_step = self.coef_["latency"] + self.coef_["per_entry"] * terms["comm_step"]
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.minimum(comp_step, comm_step) / comm_step
        return np.where(comm_step > 0, rho, 1.0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # A physical model with fixed terms does not fit arbitrary regression data.
        tags.regressor_tags.poor_score = True
        return tags
