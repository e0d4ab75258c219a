"""scikit-learn's estimator contract for every scaleprobe estimator, with no xfail.

scikit-learn's checks build data such as ``X - X.min()``, so a process-count column
holds exactly 0 — a point where ``1/p`` is undefined and every scaling law rightly
raises. The test-only shim :class:`ProcessCounts` hands the estimator ``|X| + 1``
(counts are at least one) and leaves everything else — sparse input, 1-D input,
unfitted calls, sample weights, pickling — to the estimator itself. That
scaleprobe estimators reject non-positive counts is tested in their own modules.
"""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scaleprobe.models import (
    RBASP,
    CommunicationPredictor,
    FiMCal,
    FlatTrend,
    PMNFSearch,
    PowerLawBaseline,
    RegimeTrend,
    RoundLaw,
    ScalingLaw,
    TrafficModel,
)
from scaleprobe.models.fim.com import FiMCom
from scaleprobe.models.fim.model import FiM
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_is_fitted

# Random data make degenerate fits (zero coefficients, too few node counts): the
# warnings are right, and the contract is what is checked here.
pytestmark = pytest.mark.filterwarnings("ignore::scaleprobe.models.ScaleprobeWarning")


def _counts(X):
    if sp.issparse(X):
        return X  # the estimator must reject it itself
    if isinstance(X, pd.DataFrame):
        X = X.copy()
        for column in X.select_dtypes("number").columns:
            X[column] = X[column].abs() + 1
        return X
    array = np.asarray(X)
    if array.ndim == 2 and array.dtype.kind in "fiub":
        return np.abs(array.astype(float)) + 1.0
    return X


class ProcessCounts(RegressorMixin, BaseEstimator):
    """Test-only shim: the wrapped estimator sees ``|X| + 1`` (see module docstring).

    Parameters
    ----------
    estimator : estimator
    """

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y):
        """Fit the wrapped estimator on shifted X."""
        return self._fit(X, y)

    def _fit(self, X, y, **kwargs):
        self.estimator_ = clone(self.estimator).fit(_counts(X), y, **kwargs)
        self.n_features_in_ = self.estimator_.n_features_in_
        if hasattr(self.estimator_, "feature_names_in_"):
            self.feature_names_in_ = self.estimator_.feature_names_in_
        return self

    def predict(self, X):
        """Predict with the wrapped estimator on shifted X."""
        check_is_fitted(self)
        return self.estimator_.predict(_counts(X))

    def __sklearn_tags__(self):
        tags = self.estimator.__sklearn_tags__()
        tags.input_tags.positive_only = False  # the shim maps any X to counts >= 1
        return tags


class WeightedProcessCounts(ProcessCounts):
    """The shim for estimators whose ``fit`` takes ``sample_weight``."""

    def fit(self, X, y, sample_weight=None):
        """Fit the wrapped estimator on shifted X, passing the weights on."""
        if sample_weight is None:
            return self._fit(X, y)
        return self._fit(X, y, sample_weight=sample_weight)


# The searches are kept small (one term, a few candidates and folds): the contract is
# the same whatever their size, and the default searches take minutes on random data.
@parametrize_with_checks(
    [
        WeightedProcessCounts(ScalingLaw()),
        WeightedProcessCounts(PMNFSearch(max_terms=1)),
        ProcessCounts(TrafficModel(max_terms=1)),
        ProcessCounts(PowerLawBaseline()),
        ProcessCounts(RegimeTrend()),
        ProcessCounts(FlatTrend()),
        CommunicationPredictor(loss="absolute", max_terms=2, candidates=2, folds=2),
        ProcessCounts(FiMCal()),
        ProcessCounts(
            FiMCom(replications=2, calibration_replications=1, max_groups=8, max_iter=5)
        ),
        ProcessCounts(FiM(replications=3)),
        RBASP(),  # linear in log2(y): any finite X is in its domain
        ProcessCounts(RoundLaw(shape="tree")),
    ]
)
def test_sklearn_contract(estimator, check):
    check(estimator)
