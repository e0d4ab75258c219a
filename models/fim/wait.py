r"""FiM's wait for the slowest of :math:`q` processes.

An iteration of an iterative MPI kernel ends at a collective: every rank waits for
the slowest. FiM-Cal's cycles are those of all ranks (Eq. 11 regresses the total
cycles ``TC``; :math:`TC/(qF)` is the *mean* rank's time), so a time that waits for
the slowest rank is the mean rank's times a factor :math:`W(q) \ge 1` that grows with
:math:`q`: the more ranks, the further out the slowest of them lies. Fitted on the
slowest rank's time at 1 to 4 ranks, FiM-Cal's calibration (Eq. 12) takes the
training's factor as a constant and misses its growth (NPB EP's class B on a 2-core
virtual machine: the slowest rank 1.02-1.07x the mean on 4 ranks, 1.16-1.21x on 32,
in three record sets; K-means 1.07 and 1.38; PageRank, whose Kronecker graph gives
the ranks unequal shares of the links, 1.24 and 1.54).

The iterative and NPB kernels record both: ``comp_time_iterations`` sums the slowest
rank's computation over the iterations, ``comp_time_iterations_mean`` the mean
rank's. Where the training has both, FiM fits its computation on the mean rank's
and the factor on their ratio, as the expected maximum of :math:`q` independent
draws of a rank's time,

.. math::

    W(q) = 1 + s\, e(q), \qquad e(q) = E\Big[\max_{i \le q} Z_i\Big] - E[Z],

with :math:`s` the spread of a rank's time relative to its mean, fitted by
non-negative least squares through the origin on the training configurations'
median ratios, each weighted by its mean rank's time (a long run's ratio weighs more:
a short run's is inflated by fixed perturbations of a few milliseconds that a long run
averages out; NPB EP class S on 4 ranks: 1.26, class A 1.06). Two tails are fitted:

- ``"exponential"``, :math:`e(q) = H_q - 1` (:math:`H_q` the harmonic number): a
  rank's time is its work plus delays with an exponential tail (interrupts,
  preemption, a co-runner's cache misses), the maximum growing as :math:`\ln q`;
- ``"normal"``, :math:`e(q)` the expected largest of :math:`q` standard normals,
  growing as :math:`\sqrt{2 \ln q}`.

From 2 and 4 ranks the two cannot be told apart (:math:`e(4)/e(2)` is 2.17 and
1.83); at 32 ranks they part (:math:`e(32)` is 3.06 and 2.07). The measured growth
from 4 to 32 ranks, :math:`(W(32) - 1)/(W(4) - 1)`, was 2.9 for EP, 3.5 for K-means
and 2.6 for PageRank, at the large size of one record set: the exponential tail's
2.8, not the normal's 2.0. FiM predicts with the exponential tail (``wait``) and its
interval spans both.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, special, stats

__all__ = ["TAILS", "excess", "fit_wait", "slowest", "wait_factor"]

#: The tails of a rank's time whose expected maximum over q ranks FiM can take.
TAILS = ("exponential", "normal")


def _normal_maximum(q):
    """Expected largest of ``q`` standard normal draws (0 for one)."""
    if q <= 1:
        return 0.0

    def density(z):
        return z * q * stats.norm.pdf(z) * np.exp((q - 1) * stats.norm.logcdf(z))

    value, _ = integrate.quad(density, -12.0, 12.0 + np.sqrt(2 * np.log(q)), limit=200)
    return float(value)


def excess(q, tail):
    """Expected maximum of ``q`` independent draws over one draw's mean, in units of
    the draws' scale.

    Parameters
    ----------
    q : array-like of float
        Process counts (at least 1; a count below 1 counts as 1).
    tail : {"exponential", "normal"}

    Returns
    -------
    ndarray of float
        ``H_q - 1`` (the harmonic number, continued to real ``q`` by the digamma
        function) for ``"exponential"``; the expected largest of ``q`` standard
        normals for ``"normal"``. Zero at ``q = 1``.

    Examples
    --------
    >>> excess([1, 2, 4], "exponential").round(4).tolist()
    [0.0, 0.5, 1.0833]
    >>> excess([2], "normal").round(4).tolist()
    [0.5642]
    """
    counts = np.maximum(np.asarray(q, dtype=float), 1.0)
    if tail == "exponential":
        return special.digamma(counts + 1.0) + np.euler_gamma - 1.0
    if tail == "normal":
        distinct, index = np.unique(counts, return_inverse=True)
        values = np.array([_normal_maximum(float(c)) for c in distinct])
        return values[index].reshape(counts.shape)
    raise ValueError(f"tail must be one of {TAILS}, got {tail!r}")


def fit_wait(keys, q, ratio, weight):
    """Each tail's spread ``s`` from the training's slowest-over-mean ratios.

    Parameters
    ----------
    keys : ndarray of shape (n_samples, k)
        What makes a configuration (application parameters and process count): the
        median of its runs' ratios and of their weights is fitted.
    q : ndarray of shape (n_samples,)
        Process counts.
    ratio : ndarray of shape (n_samples,)
        The slowest rank's computation over the mean rank's (at least 1).
    weight : ndarray of shape (n_samples,)
        The mean rank's computation, s.

    Returns
    -------
    dict of str to float
        ``s`` per tail (:data:`TAILS`): non-negative, 0 when no configuration has
        more than one process.
    """
    _, group = np.unique(np.asarray(keys, dtype=float), axis=0, return_inverse=True)
    group = group.ravel()
    counts, excesses, weights = [], [], []
    for index in np.unique(group):
        rows = group == index
        counts.append(float(q[rows][0]))
        excesses.append(float(np.median(ratio[rows])) - 1.0)
        weights.append(float(np.median(weight[rows])))
    counts, excesses, weights = map(np.asarray, (counts, excesses, weights))
    spreads = {}
    for tail in TAILS:
        e = excess(counts, tail)
        denominator = float(np.sum(weights * e * e))
        if denominator <= 0:
            spreads[tail] = 0.0
            continue
        spreads[tail] = max(float(np.sum(weights * e * excesses)) / denominator, 0.0)
    return spreads


def wait_factor(spreads, q, tail):
    """The slowest of ``q`` ranks' time over the mean rank's, ``1 + s e(q)``.

    Parameters
    ----------
    spreads : dict of str to float
        From :func:`fit_wait`.
    q : array-like of float
    tail : {"exponential", "normal"}

    Returns
    -------
    ndarray of float

    Examples
    --------
    >>> wait_factor({"exponential": 0.1}, [1, 2, 32], "exponential").round(3)
    array([1.   , 1.05 , 1.306])
    """
    return 1.0 + spreads[tail] * excess(q, tail)


def slowest(spreads, q, mean, tail, ranged=False):
    """The slowest of ``q`` ranks' computation from the mean rank's.

    Parameters
    ----------
    spreads : dict of str to float or None
        From :func:`fit_wait`; None when the computation fitted was the slowest
        rank's already (``mean`` is returned as it is).
    q : array-like of float
    mean : ndarray, or tuple ``(lower, upper)`` of ndarray with ``ranged``
    tail : {"exponential", "normal"}
        The tail of a point prediction.
    ranged : bool, default=False
        ``mean`` is a range: the lower end takes the lower of the tails' factors,
        the upper end the higher.

    Returns
    -------
    ndarray, or tuple of ndarray with ``ranged``

    Examples
    --------
    >>> slowest({"exponential": 0.1, "normal": 0.1}, [2.0], (1.0, 2.0), "exponential",
    ...         ranged=True)
    (array([1.05]), array([2.11283792]))
    """
    if spreads is None:
        return mean
    if not ranged:
        return mean * wait_factor(spreads, q, tail)
    factors = [wait_factor(spreads, q, each) for each in TAILS]
    return mean[0] * np.min(factors, axis=0), mean[1] * np.max(factors, axis=0)
