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

**Ranks that take turns on the cores.** Where a host runs more ranks than it has
cores, the ranks compute in turns of as many as it has cores (scaleprobe's emulated
mode keeps host-wide core slots; a rank waiting for a slot does not compute). The
records say it: ``cache_sharers``, the most ranks of a host computing at once, falls
below the process count ``q`` (FiM takes the ``q`` ranks to share one host, as its
cache load does); the host's cores ``c`` are then the training's most
``cache_sharers`` (:func:`host_cores`), and a point runs :math:`t = q / c` turns
(:func:`turns`). A rank of a later turn computes while the ranks of the earlier turns
wait in the collective that ends the iteration, polling on the same cores: its CPU
time grows with the ranks already done. FiM takes that growth linear in the turn,
:math:`1 + \kappa k` for turn :math:`k = 0 \ldots t - 1`, so that on average over the
ranks the computation is :math:`1 + \kappa (t - 1)/2` times a rank's alone
(:func:`turn_factor`), and the slowest rank, of the last turn, lies another
:math:`\kappa (t - 1)/2` further out. Both the spread and :math:`\kappa` are fitted
at once on the training's slowest-over-mean ratios (non-negative least squares on
:math:`e(q)` and :math:`(t - 1)/2`), which the process law of the mean rank does not
touch; the mean rank's computation is fitted with the turns' factor taken out and
predicted with it put back. NPB EP's class S on a 2-core host (1, 2, 4 ranks
trained): the slowest rank 1.02x the mean at 2 ranks, 1.09x at 4 (2 turns), 1.21x at
8 (4 turns), which the spread alone puts at 1.12x. Training without an oversubscribed
point cannot tell the cores (:math:`t = 1` everywhere, the wait as before).

A growth per turn seen at one oversubscribed turn count is one step, not a law:
with the spread fitted on the counts that fit on the cores, that count alone fixes
:math:`\kappa`, and nothing in the training tells a growth that goes on with the turns
from one that stops once the host is oversubscribed (a rank's CPU time grows by the
caches and switches it shares with the ranks polling beside it, not by how many turns
came before). FiM then holds the growth at the measured turn count beyond it
(:func:`turn_factor` with ``beyond="held"``, its point prediction) and its range
spans the growth carried on linearly (``beyond="grown"``); with two or more
oversubscribed turn counts the linear growth is fitted and predicted. NPB EP on the
2-core host, trained at 1, 2, 4 ranks (2 turns): at 32 ranks (16 turns) its large
size's ranks computed their share without growing, and the slowest was 1.09x the
mean, where the growth carried on put the mean rank at 1.85x.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, special, stats

from ..laws.lsq import nnls

__all__ = [
    "BEYOND",
    "TAILS",
    "collective_wait",
    "excess",
    "fit_collective_wait",
    "fit_wait",
    "host_cores",
    "slowest",
    "turn_factor",
    "turns",
    "wait_factor",
]

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


def host_cores(q, sharers):
    """The host's cores as the training shows them: its most ranks computing at once,
    where some point ran more ranks than that (else None: not known).

    Parameters
    ----------
    q : array-like of float
        Process counts of the training rows.
    sharers : array-like of float or None
        Their ``cache_sharers`` (the most ranks of a host computing at once).

    Returns
    -------
    float or None

    Examples
    --------
    >>> host_cores([1, 2, 4], [1, 2, 2])
    2.0
    >>> host_cores([1, 2], [1, 2]) is None, host_cores([4], None) is None
    (True, True)
    """
    if sharers is None:
        return None
    q = np.asarray(q, dtype=float)
    sharers = np.asarray(sharers, dtype=float)
    known = np.isfinite(sharers) & (sharers >= 1)
    if not np.any(known & (sharers < q)):
        return None
    return float(np.max(sharers[known]))


def turns(q, cores):
    """Turns ``t = q / c`` the ranks take on ``c`` cores (1 where they all fit, or
    the cores are not known).

    Parameters
    ----------
    q : array-like of float
    cores : float or None

    Returns
    -------
    ndarray of float

    Examples
    --------
    >>> turns([1, 2, 4, 8], 2.0).tolist(), turns([8], None).tolist()
    ([1.0, 1.0, 2.0, 4.0], [1.0])
    """
    q = np.asarray(q, dtype=float)
    if cores is None:
        return np.ones_like(q)
    return np.maximum(q / float(cores), 1.0)


#: How the growth per turn goes on beyond the training's turn counts.
BEYOND = ("held", "grown")


def turn_factor(spreads, q, tail, beyond="held"):
    """The mean rank's computation over a rank's alone, ``1 + kappa (t - 1)/2``.

    Parameters
    ----------
    spreads : dict or None
        From :func:`fit_wait` (its ``cores``, ``turns`` and ``held``).
    q : array-like of float
    tail : {"exponential", "normal"}
    beyond : {"held", "grown"}, default="held"
        Beyond the training's turns, where it measured one oversubscribed turn
        count (``held`` in ``spreads``): ``"held"`` takes the growth at that count,
        ``"grown"`` carries it on linearly. With two or more counts measured (no
        ``held``) both carry it on.

    Returns
    -------
    ndarray of float

    Examples
    --------
    >>> fitted = {"exponential": 0.04, "cores": 2.0, "turns": {"exponential": 0.2}}
    >>> turn_factor(fitted, [2, 4, 8], "exponential").round(3).tolist()
    [1.0, 1.1, 1.3]
    >>> held = {**fitted, "held": 2.0}  # one oversubscribed count: 2 turns
    >>> turn_factor(held, [2, 4, 8], "exponential").round(3).tolist()
    [1.0, 1.1, 1.1]
    >>> turn_factor(held, [2, 4, 8], "exponential", "grown").round(3).tolist()
    [1.0, 1.1, 1.3]
    """
    if beyond not in BEYOND:
        raise ValueError(f"beyond must be one of {BEYOND}, got {beyond!r}")
    q = np.asarray(q, dtype=float)
    if not spreads or spreads.get("cores") is None:
        return np.ones_like(q)
    kappa = spreads.get("turns", {}).get(tail, 0.0)
    t = turns(q, spreads["cores"])
    if beyond == "held" and spreads.get("held") is not None:
        t = np.minimum(t, float(spreads["held"]))
    return 1.0 + kappa * (t - 1.0) / 2.0


def _configurations(keys, q, ratio, weight, t):
    """The median ratio, weight and turns of every configuration."""
    _, group = np.unique(np.asarray(keys, dtype=float), axis=0, return_inverse=True)
    group = group.ravel()
    rows = [group == index for index in np.unique(group)]
    return tuple(
        np.array([float(np.median(values[r])) for r in rows])
        for values in (q, ratio - 1.0, weight, t)
    )


def fit_wait(keys, q, ratio, weight, cores=None):
    """Each tail's spread ``s`` from the training's slowest-over-mean ratios, and
    with the host's cores, the growth ``kappa`` of a rank's computation per turn.

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
    cores : float, optional
        The host's cores (:func:`host_cores`); None: the ranks never took turns.

    Returns
    -------
    dict
        ``s`` per tail (:data:`TAILS`): non-negative, 0 when no configuration has
        more than one process; with ``cores``, also ``cores``, ``turns``,
        ``kappa`` per tail (non-negative), and ``held``: the one oversubscribed
        turn count the training measured, beyond which the growth is not known
        (None where it measured two or more; :func:`turn_factor`).

    Examples
    --------
    >>> q = np.array([2.0, 4.0, 8.0])
    >>> ratio = 1 + 0.04 * excess(q, "exponential") + 0.2 * (q / 2 - 1) / 2
    >>> fitted = fit_wait(q[:, None], q, ratio, np.ones(3), cores=2.0)
    >>> round(fitted["exponential"], 6), round(fitted["turns"]["exponential"], 6)
    (0.04, 0.2)
    """
    t = turns(q, cores)
    counts, excesses, weights, t = _configurations(keys, q, ratio, weight, t)
    spreads = {"turns": {}} if cores is not None else {}
    root = np.sqrt(weights)
    for tail in TAILS:
        columns = [excess(counts, tail)]
        if cores is not None:
            columns.append((t - 1.0) / 2.0)
        basis = np.column_stack(columns) * root[:, None]
        if not np.any(basis):
            coef = np.zeros(len(columns))
        else:
            coef, _ = nnls(basis, excesses * root)
        spreads[tail] = float(coef[0])
        if cores is not None:
            spreads["turns"][tail] = float(coef[1])
    if cores is not None:
        spreads["cores"] = float(cores)
        measured = np.unique(t[t > 1.0])
        spreads["held"] = float(measured[0]) if len(measured) == 1 else None
    return spreads


def wait_factor(spreads, q, tail, beyond="held"):
    """The slowest of ``q`` ranks' time over the mean rank's, ``1 + s e(q)`` (plus
    ``kappa (t - 1)/2`` where the ranks take ``t`` turns on the cores).

    Parameters
    ----------
    spreads : dict of str to float
        From :func:`fit_wait`.
    q : array-like of float
    tail : {"exponential", "normal"}
    beyond : {"held", "grown"}, default="held"
        The growth per turn beyond the training's turns (:func:`turn_factor`).

    Returns
    -------
    ndarray of float

    Examples
    --------
    >>> wait_factor({"exponential": 0.1}, [1, 2, 32], "exponential").round(3)
    array([1.   , 1.05 , 1.306])
    >>> wait_factor({"exponential": 0.0, "cores": 2.0, "turns": {"exponential": 0.2}},
    ...             [2, 8], "exponential").round(3).tolist()  # the last turn's rank
    [1.0, 1.3]
    """
    turned = turn_factor(spreads, q, tail, beyond)
    return 1.0 + spreads[tail] * excess(q, tail) + turned - 1.0


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
        with the growth per turn held beyond the training's turns, the upper end
        the higher, with it carried on (:func:`turn_factor`).

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
    low = [wait_factor(spreads, q, each, "held") for each in TAILS]
    high = [wait_factor(spreads, q, each, "grown") for each in TAILS]
    return mean[0] * np.min(low, axis=0), mean[1] * np.max(high, axis=0)


# ----------------------------------------------------------------------------
# The wait at every collective.
#
# ``comp_time_iterations`` is the slowest rank over a whole iteration; between two
# collectives every rank waits for the slowest of that burst, and the time less the
# collectives (each collective's cost is what it took beyond the latest arrival) is
# the computation on the critical path. Where an iteration has many collectives and
# short bursts between them the two part, by a delay per collective that grows with
# the ranks and not with the work between them: NPB CG's class S (1170 collectives
# in 15 iterations) 13 us a collective on 4 ranks, class A 26 us, whose bursts are
# ten times longer.


def fit_collective_wait(extra, calls, q):
    r"""The delay :math:`d` a collective waits for the slowest rank's burst,
    :math:`d\,e(q)` per call, :math:`e` the exponential tail's excess.

    The median, not below zero, over the training's rows of more than one rank of
    their extra critical-path computation over :math:`\text{calls} \times e(q)`: a
    single run of a loaded host sets no delay (NPB IS's class S at 2 ranks, one run
    55 ms beyond its computation and collectives where the others of its sizes had
    1.5 and 4.2 ms: least squares through the origin read 1.35 ms a call from it and
    put 4 ranks at 0.065 s for the measured 0.018). With fewer than two process
    counts above one in the rows, the delay is 0: one count cannot tell a wait that
    grows with the ranks from a constant cost of running in parallel.

    Parameters
    ----------
    extra : array-like of shape (n,)
        Time less the collectives less ``comp_time_iterations``, s (not below 0).
    calls : array-like of shape (n,)
        Collective calls of each row.
    q : array-like of shape (n,)
        Process counts.

    Returns
    -------
    float
        :math:`d`, s; 0 where fewer than two process counts above one have rows.

    Examples
    --------
    >>> q = np.array([1, 2, 4])
    >>> calls = np.array([100.0, 100.0, 100.0])
    >>> extra = 1e-5 * calls * excess(q, "exponential")
    >>> round(fit_collective_wait(extra, calls, q) * 1e6, 9)
    10.0
    >>> fit_collective_wait(extra[:2], calls[:2], q[:2])  # 2 ranks alone: no law
    0.0
    """
    q = np.asarray(q, dtype=float)
    basis = np.asarray(calls, dtype=float) * excess(q, "exponential")
    extra = np.asarray(extra, dtype=float)
    known = np.isfinite(extra) & np.isfinite(basis) & (basis > 0)
    if len(np.unique(q[known])) < 2:
        return 0.0
    return max(float(np.median(np.maximum(extra[known], 0.0) / basis[known])), 0.0)


def collective_wait(delay, calls, q):
    """The wait at every collective of rows: ``delay`` e(q) per call, s.

    Parameters
    ----------
    delay : float or None
        :func:`fit_collective_wait`'s :math:`d` (None: no wait).
    calls : array-like of shape (n,)
        Collective calls of each row.
    q : array-like of shape (n,)
        Process counts.

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> collective_wait(1e-5, [1000.0, 1000.0], [1, 4]).round(6).tolist()
    [0.0, 0.010833]
    """
    calls = np.asarray(calls, dtype=float)
    if not delay:
        return np.zeros(calls.shape)
    return delay * calls * excess(q, "exponential")
