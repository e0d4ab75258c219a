"""The limits the choice of a model is judged by, free of heavy imports (the
many-series fit of :mod:`scaleprobe.models.profiles` applies them too)."""

from __future__ import annotations

__all__ = ["BASELINE_MARGIN", "PLAUSIBLE_FACTOR", "RELIABLE_SMAPE", "smape_of_log"]

#: Extrapolation SMAPE (percent) above which no model is presented as a winner.
RELIABLE_SMAPE = 50.0

#: A model whose extrapolation SMAPE is within this factor of the selected one's is
#: a plausible alternative: its interval joins the selected model's.
PLAUSIBLE_FACTOR = 2.0

#: Share by which a time-only law must beat the naive baseline's extrapolation SMAPE
#: to be trusted over it (a law's extra assumptions have to earn their keep), and by
#: which the baseline must beat the traffic-informed model to be trusted over that.
BASELINE_MARGIN = 0.1


def smape_of_log(error):
    """SMAPE (percent) of a prediction off by ``error`` in log: ``200 tanh(|e| / 2)``.

    ``|a - b| / ((a + b) / 2)`` for ``a = b exp(e)``.

    Parameters
    ----------
    error : float or ndarray

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> round(float(smape_of_log(0.5108)), 1)  # a prediction 5/3 of the measurement
    50.0
    """
    import numpy as np

    return 200.0 * np.tanh(np.abs(error) / 2.0)
