"""The traffic-informed model: computation and traffic counts, priced by a link model.

A kernel that talks through scaleprobe's instrumented communicator in emulated mode
records, per run, the critical path of its completion time split into computation,
inter-node latency, inter-node transfer and intra-node transfer seconds
(``cp_comp_time``, ``cp_latency_time``, ``cp_bandwidth_time``, ``cp_intra_time``;
see :mod:`scaleprobe.kernels.comm`). Divided by the link's latency, the latency part
is a *count* of latency-bound steps on the critical path; multiplied by the
effective link bandwidth, the transfer part is a count of *bytes* through the
busiest interface. Those counts are nearly deterministic and follow simple laws of
the process count (``p - 1`` rounds of a pairwise all-to-all, ``log2 p`` of a tree),
so they extrapolate far better than a time does; and because they are counts, they
can be priced on any other network.

:class:`TrafficModel` fits one scaling law (:class:`PMNFSearch`) per part and per
configuration group (problem ``scale``, ``ppn`` and every application parameter the
sweep varies, such as ``points``). A group that was not measured but differs from
measured ones in one column (a larger ``scale``, more ``points``) is reached along it:
every part continues through the two nearest measured values as a power of the size
or as a fixed cost plus a cost per unit of size, the form picked by a third value
where there is one (:mod:`scaleprobe.models.traffic.axes`).
Where the kernel also split the
latency of its collectives over all ranks by how their rounds grow
(``coll_tree_latency_time``: barriers, trees, recursive doubling, ``log2 p`` rounds;
``coll_linear_latency_time``: pairwise alltoall, rings, ``p - 1`` rounds), those
steps are not searched but fitted as ``a + b log2 n`` and ``a + b n``
(:class:`~scaleprobe.models.RoundLaw`): a search over a few small node counts cannot
tell ``n`` from ``sqrt(n) log2 n``, the algorithm can. The point-to-point rest of the
latency is searched as before. Then it predicts::

    time = comp(n) + latency_count(n) * latency + bytes(n) / (link_bandwidth * bw / 100)
           + intra(n)

with ``latency`` and ``link_bandwidth`` those of the training link unless the
prediction frame names another network. The structure gives the physical limits
for free: no inter-node traffic on one node, a latency floor that grows with the
number of latency-bound steps, and a slower-than-one-node regime when
communication starts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scaleprobe.kernels.schema import (
    COLLECTIVE_LATENCY_COLUMNS,
    CRITICAL_PATH_COLUMNS,
    LINK_COLUMNS,
)
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ..core.configs import collapse_trials, configuration_keys
from ..core.interface import ModelBase, PerformanceModelTags, check_level, fitted_ranges
from ..core.warnings import ExtrapolationWarning, quiet, warn
from ..laws.pmnf import PMNFSearch
from ..laws.rounds import RoundLaw
from .axes import (
    axis_pairs,
    choose_forms,
    continue_along,
    size_exponents,
    size_of,
)

__all__ = [
    "COUNT_EXPONENTS",
    "TrafficModel",
]


class TrafficModel(PerformanceModelTags, ModelBase, RegressorMixin, BaseEstimator):
    """Completion time from laws of computation and traffic, priced by a link model.

    Parameters
    ----------
    over : {"nodes", "ranks"}, default="nodes"
        Variable of the part laws (within a group ``ppn`` is fixed, so both give
        the same laws; ``nodes`` reads best).
    max_terms : int, default=2
        Largest number of non-constant terms of each part law.
    level : float, default=0.9
        Level of the part laws' intervals used by :meth:`floor`.

    Attributes
    ----------
    mode_ : {"traffic", "time"}
        ``"time"`` when ``X`` held no critical-path columns: the model then fits the
        time itself with one :class:`PMNFSearch` (nothing to price).
    laws_ : dict
        ``{group: {part: law or None, "single_node": float or None}}``;
        ``group`` is a tuple of the values of ``group_columns_`` (``scale``, ``ppn``,
        then the application parameters); a group asked for that was not measured
        is reached along the one column it differs in (see the module); parts are
        ``computation``, ``latency`` (steps; only the point-to-point ones when
        ``collectives_``), ``bandwidth`` (bytes), ``intra`` (seconds) as
        :class:`PMNFSearch` laws and, when ``collectives_``, ``tree`` and
        ``linear`` as :class:`~scaleprobe.models.RoundLaw`. None marks a part
        that is zero in the data. The laws describe two nodes and more;
        ``single_node`` is the measured computation on one node (another code path:
        no exchange at all), used as is there.
    collectives_ : bool
        Whether the data split the collectives' latency by the shape of their
        rounds (:data:`~scaleprobe.kernels.schema.COLLECTIVE_LATENCY_COLUMNS`):
        their steps then follow ``a + b log2 n`` and ``a + b n`` exactly as their
        algorithms do, instead of a searched law.
    part_means_ : dict
        ``{group: DataFrame}``: the measured parts (computation seconds, latency
        steps, bytes, ...) averaged per node count, from which the exponents in the
        size are measured.
    group_columns_ : tuple of str
    link_ : dict
        Training link: ``link_bandwidth`` (bytes/s) and ``latency`` (s).
    node_range_ : tuple of float
        Smallest and largest node count of the training data.
    time_law_ : PMNFSearch
        Only in ``"time"`` mode.
    fitted_ranges_ : dict of str to tuple of float
        ``(min, max)`` of every numeric column of the training ``X``.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> n = np.array([1, 2, 4, 8, 16] * 2, dtype=float)
    >>> X = pd.DataFrame({"nodes": n, "ppn": 1, "bandwidth": 100.0,
    ...                   "link_bandwidth": 1e9, "latency": 1e-6,
    ...                   "cp_comp_time": 1.0 / n,
    ...                   "cp_latency_time": 1e-6 * 3 * (n - 1),
    ...                   "cp_bandwidth_time": 8e6 / n / 1e9 * (n > 1),
    ...                   "cp_intra_time": 0.0})
    >>> y = X[list(CRITICAL_PATH_COLUMNS)].sum(axis=1)
    >>> model = TrafficModel().fit(X, y)
    >>> new = pd.DataFrame({"nodes": [1024.0], "ppn": 1, "bandwidth": 100.0})
    >>> parts = model.predict_components(new).round(6)
    >>> parts[["computation", "latency"]].to_numpy().tolist()
    [[0.000977, 0.003293]]

    (The latency law is chosen from five node counts; 64 times further out it
    lies 7 % above the true 3.069 ms.)
    """

    interval_method = "consistent-range"
    prices_link = True
    structural = True
    #: Mean measured part of the time per configuration, filled by :meth:`fit`;
    #: model files written before the measured parts were stored lack them.
    part_means_ = None

    def __init__(self, *, over="nodes", max_terms=2, level=0.9):
        self.over = over
        self.max_terms = max_terms
        self.level = level

    # -- fitting ----------------------------------------------------------------------
    def fit(self, X, y):
        """Fit the part laws (or, without traffic columns, the time law).

        Parameters
        ----------
        X : pandas.DataFrame or array-like
            Feature frame with ``nodes``, ``ppn``, ``bandwidth``, the columns of
            :data:`~scaleprobe.kernels.schema.CRITICAL_PATH_COLUMNS` and
            :data:`~scaleprobe.kernels.schema.LINK_COLUMNS` (``scale`` and ``run``/
            ``trial`` when present). Anything else is fitted as time only, the first
            column being the process count.
        y : array-like of shape (n_samples,)
            Completion times (used in time-only mode and to check the parts).

        Returns
        -------
        self : TrafficModel
        """
        if self.over not in ("nodes", "ranks"):
            raise ValueError(f"over must be 'nodes' or 'ranks'; got {self.over!r}")
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1); got {self.level!r}")
        has_traffic = isinstance(X, pd.DataFrame) and set(CRITICAL_PATH_COLUMNS) <= set(
            X.columns
        )
        if not has_traffic:
            return self._fit_time(X, y)
        missing = [
            c
            for c in ("nodes", "ppn", "bandwidth", *LINK_COLUMNS)
            if c not in X.columns
        ]
        if missing:
            raise ValueError(
                f"a traffic-informed fit needs columns {missing} besides the "
                "critical-path columns (make_features(..., traffic=True) adds them)"
            )
        self.mode_ = "traffic"
        y = np.asarray(y, dtype=float)
        frame = X.reset_index(drop=True)
        collectives = [c for c in COLLECTIVE_LATENCY_COLUMNS if c in frame.columns]
        values = frame[
            list(CRITICAL_PATH_COLUMNS) + collectives + list(LINK_COLUMNS)
        ].astype(float)
        values["time"] = y
        keep = [
            c
            for c in frame.columns
            if c not in CRITICAL_PATH_COLUMNS
            and c not in LINK_COLUMNS
            and c not in COLLECTIVE_LATENCY_COLUMNS
        ]
        runs, means = collapse_trials(frame[keep], values)
        self.group_columns_ = group_columns(runs)
        self.link_ = {
            "link_bandwidth": float(np.median(means["link_bandwidth"])),
            "latency": float(np.median(means["latency"])),
        }
        self._fit_groups(runs, self._counts(runs, means, collectives))
        nodes = runs["nodes"].astype(float)
        self.node_range_ = (float(nodes.min()), float(nodes.max()))
        self.n_features_in_ = len(self._input_columns())
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    def _counts(self, runs, means, collectives):
        """The parts of every run's critical path: computation seconds, latency-bound
        steps, bytes through the busiest interface, intra-node seconds and, where
        the data split them (``collectives_``), the rounds of tree-shaped and linear
        collectives."""
        parts = pd.DataFrame(
            {
                "computation": means["cp_comp_time"],
                # Counts: latency-bound steps, and bytes through the busiest interface.
                "latency": means["cp_latency_time"] / means["latency"],
                "bandwidth": means["cp_bandwidth_time"]
                * means["link_bandwidth"]
                * runs["bandwidth"].astype(float)
                / 100.0,
                "intra": means["cp_intra_time"],
            }
        )
        finite = np.isfinite(means[collectives].to_numpy(dtype=float)).all()
        complete = len(collectives) == len(COLLECTIVE_LATENCY_COLUMNS)
        self.collectives_ = complete and bool(finite)
        if self.collectives_:
            # Rounds of collectives over all ranks follow their algorithm's shape;
            # what remains of the latency (point-to-point steps) is searched.
            for part, column in zip(
                ("tree", "linear"), COLLECTIVE_LATENCY_COLUMNS, strict=True
            ):
                parts[part] = means[column] / means["latency"]
            rest = parts["latency"] - parts["tree"] - parts["linear"]
            parts["latency"] = rest.where(rest > 1e-6 * parts["latency"], 0.0)
        return parts

    def _fit_groups(self, runs, parts):
        """One law per part and configuration group, and what each group measured
        per node count (the size exponents come from it)."""
        groups = (
            runs.groupby(list(self.group_columns_))
            if self.group_columns_
            else [((), runs)]
        )
        self.laws_ = {}
        self.part_means_ = {}
        for key, group in groups:
            key = group_key(key if isinstance(key, tuple) else (key,))
            group_parts = parts.loc[group.index]
            where = ", ".join(
                f"{c}={v}" for c, v in zip(self.group_columns_, key, strict=True)
            )
            self.laws_[key] = fit_group(
                group,
                group_parts,
                where or "all data",
                over=self.over,
                max_terms=self.max_terms,
            )
            self.part_means_[key] = group_parts.groupby(
                group["nodes"].astype(float).to_numpy()
            ).mean()

    def _fit_time(self, X, y):
        self.mode_ = "time"
        self.collectives_ = False
        if isinstance(X, pd.DataFrame):
            column = self.over if self.over in X.columns else X.columns[0]
            X = X[[column]]
        data, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        check_non_negative(data, type(self).__name__)
        law = PMNFSearch(parameter="ranks", max_terms=self.max_terms)
        self.time_law_ = law.fit(data[:, :1], y)
        self.group_columns_ = ()
        self.laws_ = {}
        self.link_ = {}
        self.node_range_ = (float(data[:, 0].min()), float(data[:, 0].max()))
        self.fitted_ranges_ = fitted_ranges(X)
        return self

    # -- prediction -------------------------------------------------------------------
    def _input_columns(self):
        return ["nodes", "ppn", "bandwidth", *self.group_columns_]

    def _time_input(self, X):
        if isinstance(X, pd.DataFrame) and hasattr(self, "feature_names_in_"):
            X = X[list(self.feature_names_in_)]
        elif isinstance(X, pd.DataFrame):
            column = self.over if self.over in X.columns else X.columns[0]
            X = X[[column]].to_numpy()
        data = validate_data(self, X, reset=False, dtype=np.float64)
        return data[:, :1]

    def _frame(self, X):
        if not isinstance(X, pd.DataFrame):
            raise TypeError(
                "a traffic-informed model predicts from a DataFrame with nodes, ppn "
                f"and bandwidth columns; got {type(X).__name__}"
            )
        frame = X.reset_index(drop=True)
        if "ppn" not in frame and "ppn" in self.group_columns_:
            trained = sorted(
                {key[self.group_columns_.index("ppn")] for key in self.laws_}
            )
            raise ValueError(
                f"X has no ppn: this model was trained at ppn {trained}; give it"
            )
        missing = [
            c for c in ("nodes", "bandwidth", *self.group_columns_) if c not in frame
        ]
        if missing:
            raise ValueError(f"X lacks columns {missing}")
        return frame

    def _link(self, frame):
        link = frame.get("link_bandwidth", self.link_["link_bandwidth"])
        latency = frame.get("latency", self.link_["latency"])
        effective = (
            np.asarray(link, dtype=float)
            * frame["bandwidth"].to_numpy(dtype=float)
            / 100.0
        )
        return np.broadcast_to(effective, len(frame)), np.broadcast_to(
            np.asarray(latency, dtype=float), len(frame)
        )

    def _priced(self, X, level=None):
        """Seconds of each part, (3, rows): lower, point, upper (``level`` None:
        the point three times)."""
        frame = self._frame(X)
        effective, latency = self._link(frame)
        values = part_values(self, frame, level)
        steps = sum(values[part] for part in LATENCY_PARTS)
        priced = {
            "computation": values["computation"],
            "latency": steps * latency,
            "bandwidth": values["bandwidth"] / effective,
            "intra": values["intra"],
        }
        return priced

    def predict(self, X):
        """Predict completion times on the frame's link (default: the training one).

        Parameters
        ----------
        X : pandas.DataFrame
            ``nodes``, ``ppn``, ``bandwidth`` (percent), the group columns, and
            optionally ``link_bandwidth`` (bytes/s) and ``latency`` (s) of the
            target network.

        Returns
        -------
        ndarray of shape (n_samples,)

        Raises
        ------
        ValueError
            A group that was not measured and differs from the measured ones in
            more than one column.

        Warns
        -----
        ExtrapolationWarning
            A group beyond the measured values of a column that has only two of
            them: nothing checks the power law through them.
        """
        check_is_fitted(self)
        if self.mode_ == "time":
            return self.time_law_.predict(self._time_input(X))
        priced = self._priced(X)
        return sum(v[1] for v in priced.values())

    def predict_components(self, X):
        """Predicted seconds of each part, plus ``communication`` (all but computation).

        Parameters
        ----------
        X : pandas.DataFrame

        Returns
        -------
        pandas.DataFrame
            Columns ``computation``, ``latency``, ``bandwidth``, ``intra``,
            ``communication``.
        """
        check_is_fitted(self)
        if self.mode_ == "time":
            parts = self.time_law_.predict_components(self._time_input(X))
            return parts
        priced = self._priced(X)
        out = pd.DataFrame({part: v[1] for part, v in priced.items()})
        out["communication"] = out["latency"] + out["bandwidth"] + out["intra"]
        return out

    def predict_interval(self, X, *, level=0.9):
        """Sum of the part laws' intervals (each the range of consistent laws).

        Parameters
        ----------
        X : pandas.DataFrame
        level : float, default=0.9
            Level of each part's interval.

        Returns
        -------
        lower, upper : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        check_level(level)
        if self.mode_ == "time":
            return self.time_law_.predict_interval(self._time_input(X), level=level)
        priced = self._priced(X, level=level)
        low = sum(v[0] for v in priced.values())
        high = sum(v[2] for v in priced.values())
        return low, high

    def floor(self, X):
        """Latency floor: the fewest latency-bound steps the data allow, times latency.

        No program whose critical path holds those steps can finish sooner on that
        network, whatever its bandwidth.

        Parameters
        ----------
        X : pandas.DataFrame

        Returns
        -------
        ndarray of shape (n_samples,)
            Seconds (0 on one node; NaN in time-only mode).
        """
        check_is_fitted(self)
        if self.mode_ == "time":
            return np.full(len(X), np.nan)
        return self._priced(X, level=self.level)["latency"][0]

    @property
    def has_floor(self):
        """Whether :meth:`floor` knows the latency floor: fitted on the critical
        path's parts (not in time-only mode)."""
        return getattr(self, "mode_", None) == "traffic"

    def describe(self):
        """The part laws of every group (or the time law in time-only mode).

        Returns
        -------
        str
        """
        check_is_fitted(self)
        if self.mode_ == "time":
            return self.time_law_.describe()
        lines = []
        for key, group in self.laws_.items():
            label = ", ".join(
                f"{c}={v:g}" for c, v in zip(self.group_columns_, key, strict=True)
            )
            inner = "; ".join(
                f"{part}: {law.describe()}"
                for part, law in group.items()
                if part != "single_node" and law is not None
            )
            lines.append(f"[{label}] {inner}" if label else inner)
        return " | ".join(lines)


# ---------------------------------------------------------------- the part laws
# The part laws of a traffic-informed model, per configuration group. A group is
# one combination of ``scale``, ``ppn`` and the application parameters the
# sweep varies. :func:`fit_group` fits one law per part of the critical path
# (computation seconds, latency-bound steps, bytes through the busiest interface,
# intra-node seconds, and, where the kernel split them, the rounds of tree-shaped and
# linear collectives); :func:`part_values` evaluates them row by row, reaching a group
# that was not measured along the one column it differs in
# (:mod:`scaleprobe.models.traffic.axes`).


#: Terms of the count laws: counts come from algorithms whose costs are built of
#: ``1``, ``log2 p``, ``sqrt p``, ``p`` and ``p log2 p`` (and their inverses).
COUNT_EXPONENTS = ("1/2", "1")
COUNT_LAWS = {"exponents": COUNT_EXPONENTS, "log_exponents": (0, 1)}

#: Terms of the computation law: a serial part, the divided work ``1/p`` (nothing
#: falls faster) and overheads growing as ``log2 p``, ``p`` or ``p log2 p``.
COMPUTATION_LAWS = {"exponents": ("1",), "log_exponents": (0, 1), "falling": ("1/p",)}

PARTS = ("computation", "latency", "bandwidth", "intra", "tree", "linear")
#: Parts counted in latency-bound steps (priced by the link's latency).
LATENCY_PARTS = ("latency", "tree", "linear")
_FIRST_GROUP_COLUMNS = ("scale", "ppn", "threads")
#: Columns that are not group keys: the law's variable, the priced link, the size
#: ``D`` (another name for ``scale``).
_NOT_GROUPS = ("nodes", "ranks", "bandwidth", "D")


def group_columns(runs):
    """``scale``, ``ppn``, ``threads``, then every application parameter of the sweep.

    Parameters
    ----------
    runs : pandas.DataFrame
        One row per run, configuration columns only.

    Returns
    -------
    tuple of str
    """
    keys = [c for c in configuration_keys(runs) if c not in _NOT_GROUPS]
    return tuple(
        [c for c in _FIRST_GROUP_COLUMNS if c in keys]
        + [c for c in keys if c not in _FIRST_GROUP_COLUMNS]
    )


def group_key(values):
    """A group key with numbers as floats (as the laws are stored).

    Parameters
    ----------
    values : iterable

    Returns
    -------
    tuple

    Examples
    --------
    >>> group_key((12, "bfs", 1))
    (12.0, 'bfs', 1.0)
    """
    out = []
    for value in values:
        try:
            out.append(float(value))
        except (TypeError, ValueError):
            out.append(value)
    return tuple(out)


def fit_group(runs, parts, where, *, over, max_terms):
    """The part laws of one configuration group.

    Parameters
    ----------
    runs : pandas.DataFrame
        The group's runs (``nodes`` and ``over``).
    parts : pandas.DataFrame
        Their parts (columns of :data:`PARTS`), row for row.
    where : str
        The group, for error messages.
    over : {"nodes", "ranks"}
        Variable of the laws.
    max_terms : int
        Largest number of non-constant terms of a searched law.

    Returns
    -------
    dict
        ``{part: law or None, "single_node": float or None}`` (see
        :attr:`TrafficModel.laws_ <scaleprobe.models.TrafficModel>`).

    Raises
    ------
    ValueError
        A part with traffic at fewer than two multi-node node counts.
    """
    variable = runs[over].astype(float).to_numpy()
    multi = runs["nodes"].to_numpy(dtype=float) > 1
    laws = {}
    single = parts["computation"].to_numpy(dtype=float)[~multi]
    # One node runs another code path (no exchange at all): its computation is
    # kept as measured, and the laws describe two nodes and more.
    laws["single_node"] = (
        float(np.exp(np.mean(np.log(single)))) if single.size else None
    )
    for part in PARTS:
        if part not in parts:
            continue
        values = parts[part].to_numpy(dtype=float)
        rows = multi & (values > 0)
        if part != "computation" and not rows.any():
            laws[part] = None  # no such traffic in the data (e.g. ppn = 1 intra)
            continue
        if part in ("tree", "linear"):
            if np.unique(variable[multi]).size < 2:
                raise ValueError(
                    f"{where}: collective rounds need two or more multi-node "
                    f"node counts; got {np.unique(runs['nodes'][multi]).tolist()}"
                )
            laws[part] = RoundLaw(shape=part).fit(
                variable[multi].reshape(-1, 1), values[multi]
            )
            continue
        if np.unique(variable[rows]).size < 2:
            raise ValueError(
                f"{where}: the {part} part needs measurements at two or more "
                f"multi-node node counts; got {np.unique(runs['nodes'][rows]).tolist()}"
            )
        with quiet():  # a part's few node counts are the model's own affair
            laws[part] = PMNFSearch(
                parameter="ranks",
                max_terms=max_terms,
                family_interval="both" if part == "computation" else False,
                **(COMPUTATION_LAWS if part == "computation" else COUNT_LAWS),
            ).fit(variable[rows].reshape(-1, 1), values[rows])
    return laws


def part_values(model, frame, level=None):
    """The fitted model's part laws evaluated row by row.

    Parameters
    ----------
    model : TrafficModel
        Fitted in traffic mode.
    frame : pandas.DataFrame
        ``nodes``, ``ppn`` (default 1) and the model's group columns.
    level : float, default=None
        Level of the part laws' intervals; None gives the point for all three.

    Returns
    -------
    dict
        ``{part: ndarray of shape (3, n_rows)}``: lower, point, upper.
    """
    out = {part: np.zeros((3, len(frame))) for part in PARTS}
    columns = model.group_columns_
    keys = (
        [group_key(k) for k in zip(*(frame[c] for c in columns), strict=True)]
        if columns
        else [()] * len(frame)
    )
    nodes = frame["nodes"].to_numpy(dtype=float)
    ppn = frame["ppn"].to_numpy(dtype=float) if "ppn" in frame else np.ones(len(frame))
    variable = nodes if model.over == "nodes" else nodes * ppn
    for key in dict.fromkeys(keys):
        rows = np.array([k == key for k in keys])
        laws = model.laws_.get(key)
        if laws is not None:
            values = _evaluate(laws, variable[rows], nodes[rows], level)
        else:
            values = _along(model, key, variable[rows], nodes[rows], level)
        for part, value in values.items():
            out[part][:, rows] = value
    return out


def _evaluate(laws, variable, nodes, level):
    """One measured group's parts at these rows: part -> (3, rows) array."""
    out = {part: np.zeros((3, variable.size)) for part in PARTS}
    single = laws["single_node"]
    use, alone = nodes > 1, nodes <= 1
    for part in PARTS:
        law = laws.get(part)
        if law is None:
            continue
        if part == "computation" and alone.any():
            out[part][:, alone] = (
                single
                if single is not None
                else law.predict(variable[alone].reshape(-1, 1))
            )
        if not use.any():
            continue
        p = variable[use].reshape(-1, 1)
        mid = law.predict(p)
        if level is not None:
            low, high = law.predict_interval(p, level=level)
        else:
            low = high = mid
        out[part][:, use] = np.vstack([low, mid, high])
    return out


def _along(model, key, variable, nodes, level):
    """An unmeasured group, reached along the one column it differs in."""
    columns, laws = model.group_columns_, model.laws_
    where = dict(zip(columns, key, strict=True))
    if model.part_means_ is None:  # a model file written before they were stored
        raise ValueError(
            f"{where} was not measured; this model knows {columns} "
            f"in {sorted(laws)} (refit it to reach other sizes)"
        )
    try:
        column, near, far, inside = axis_pairs(key, list(laws), columns)
    except (ValueError, TypeError) as error:
        raise ValueError(
            f"{where} was not measured, and the traffic model cannot reach it: "
            f"{error}; it knows {columns} in {sorted(laws)}"
        ) from None
    index = columns.index(column)

    def exponents(pair):
        first, second = pair
        return size_exponents(
            model.part_means_[first],
            model.part_means_[second],
            size_of(column, first[index]),
            size_of(column, second[index]),
        )

    if far is None and not inside:
        measured = sorted(group[index] for group in near)
        warn(
            f"traffic: {column} = {key[index]:g} was not measured: every part "
            f"follows the power law in the size through {column} = "
            f"{measured[0]:g} and {measured[1]:g}, and no third value checks it",
            ExtrapolationWarning,
            stacklevel=5,
        )
    sizes = tuple(size_of(column, group[index]) for group in near)
    forms = None
    if far is not None:
        forms = choose_forms(
            exponents(far),
            exponents(near),
            (size_of(column, far[0][index]), *sizes),
        )
    return continue_along(
        _evaluate(laws[near[1]], variable, nodes, level),
        nodes,
        sizes,
        size_of(column, key[index]),
        exponents(near),
        far=None if far is None else exponents(far),
        forms=forms,
    )
