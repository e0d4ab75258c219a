"""The scikit-learn tags every performance model shares."""

from __future__ import annotations

__all__ = ["PerformanceModelTags"]


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
