"""Cross-validation splitters for scaling data (scikit-learn splitter protocol).

scikit-learn's ``KFold(5, shuffle=True)`` is the paper's random 4/5 split; the classes
here ask the questions users actually have: does the model extrapolate to more nodes,
to an unseen scale, to an unseen bandwidth?
"""

from __future__ import annotations

import numpy as np

__all__ = ["ExtrapolationSplit", "LeaveOneBandwidthOut", "LeaveOneScaleOut"]


def _column(X, column):
    if hasattr(X, "columns"):
        if column not in X.columns:
            raise ValueError(f"X has no column {column!r}; columns: {list(X.columns)}")
        return np.asarray(X[column])
    if isinstance(column, int):
        return np.asarray(X)[:, column]
    raise ValueError(
        f"column {column!r} needs a DataFrame; for arrays give an int index"
    )


class ExtrapolationSplit:
    """Train on the small values of a column, test on all larger ones.

    With distinct values ``v_1 < ... < v_m`` of ``column`` the i-th split
    (i = 1..n_splits) trains on rows with ``value <= v_(m-i)`` and tests on the rest,
    so the first split holds out only the largest node count. With ``train_max`` there
    is one split: train on ``value <= train_max``.

    Parameters
    ----------
    column : str or int, default="nodes"
        Column of a DataFrame ``X`` (or index into an array).
    n_splits : int, default=2
        Number of splits when ``train_max`` is None.
    train_max : float, default=None
        Largest value in the training set (a single split).
    min_train_values : int, default=2
        Splits leaving fewer distinct training values are skipped.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"nodes": [1, 2, 4, 8]})
    >>> split = ExtrapolationSplit(n_splits=2)
    >>> [(tr.tolist(), te.tolist()) for tr, te in split.split(X)]
    [([0, 1, 2], [3]), ([0, 1], [2, 3])]
    """

    def __init__(self, column="nodes", n_splits=2, train_max=None, min_train_values=2):
        self.column = column
        self.n_splits = n_splits
        self.train_max = train_max
        self.min_train_values = min_train_values

    def _limits(self, values):
        distinct = np.unique(values)
        if self.train_max is not None:
            return [float(self.train_max)]
        if int(self.n_splits) < 1:
            raise ValueError(f"n_splits must be >= 1; got {self.n_splits!r}")
        limits = []
        for i in range(1, int(self.n_splits) + 1):
            if distinct.size - i >= self.min_train_values:
                limits.append(distinct[distinct.size - i - 1])
        return limits

    def split(self, X, y=None, groups=None):
        """Yield ``(train_index, test_index)`` pairs."""
        values = _column(X, self.column)
        for limit in self._limits(values):
            train = np.flatnonzero(values <= limit)
            test = np.flatnonzero(values > limit)
            if train.size and test.size:
                yield train, test

    def get_n_splits(self, X=None, y=None, groups=None):
        """Number of splits (needs ``X`` unless ``train_max`` is given)."""
        if self.train_max is not None:
            return 1
        if X is None:
            return int(self.n_splits)
        return len(self._limits(_column(X, self.column)))

    def __repr__(self):
        return (
            f"ExtrapolationSplit(column={self.column!r}, n_splits={self.n_splits}, "
            f"train_max={self.train_max})"
        )


class _LeaveOneValueOut:
    column = None

    def split(self, X, y=None, groups=None):
        """Yield ``(train_index, test_index)``, one split per distinct value."""
        values = _column(X, self.column)
        for value in np.unique(values):
            test = np.flatnonzero(values == value)
            train = np.flatnonzero(values != value)
            if train.size:
                yield train, test

    def get_n_splits(self, X=None, y=None, groups=None):
        """Number of distinct values of the column."""
        if X is None:
            raise ValueError(f"{type(self).__name__}.get_n_splits needs X")
        return int(np.unique(_column(X, self.column)).size)

    def __repr__(self):
        return f"{type(self).__name__}()"


class LeaveOneScaleOut(_LeaveOneValueOut):
    """Hold out one problem ``scale`` at a time.

    Examples
    --------
    >>> import pandas as pd
    >>> LeaveOneScaleOut().get_n_splits(pd.DataFrame({"scale": [26, 27, 27]}))
    2
    """

    column = "scale"


class LeaveOneBandwidthOut(_LeaveOneValueOut):
    """Hold out one ``bandwidth`` percentage at a time.

    Examples
    --------
    >>> import pandas as pd
    >>> LeaveOneBandwidthOut().get_n_splits(pd.DataFrame({"bandwidth": [10, 50]}))
    2
    """

    column = "bandwidth"
