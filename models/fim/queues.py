"""Discrete-event simulation of FiM-Com's D -> M -> C -> R tandem queues.

Bhimani et al. 2019 (Section 3) model a collective as jobs (data points) passing
four parts in series: **D** the data transfer, **M** the metadata, **C** the network
initialisation (a delay server) and **R** the receivers. Every job waits at D from
time zero. The service laws (Eq. 13-16), as this module reads them:

- D: a job is sent at a rate :math:`\\zeta \\sim U(\\zeta_{min}, \\zeta_{max})` jobs/s
  (Eq. 13), i.e. takes :math:`1/\\zeta`;
- M: a FIFO server whose speed depends on the instantaneous number :math:`\\chi` of
  jobs at M, :math:`\tilde\\mu_2 = \nu \\ln(1 + \\chi)` jobs/s (Eq. 14 writes
  :math:`\\log\\chi`; the scale :math:`\nu` carries the units and the ``1 +`` lets a
  lone job be served), each job needing an exponential amount of work, the speed
  updated at every arrival (so that with single jobs M is exactly the birth-death
  process of that rate);
- C: a delay server (no queue) for the network initialisation, which activates the
  sender and then each receiving node (Section 3.3): every job bound for one
  receiver is delayed by that receiver's activation, an exponential time of mean
  :math:`\\eta` drawn once per collective (Eq. 15);
- R: FIFO receivers, each job taking an exponential time of mean :math:`\\phi\\psi`
  (Eq. 16, with :math:`\\phi` the number of receivers that fetch at once: 1 for a
  scatter and a gather, the number of receivers for a broadcast).

Eq. 15-16 write the laws as ``exp(eta)`` and ``phi * exp(psi)`` and call them rates;
read as rates drawn from exponential distributions, a service *time* ``1/rate``
would have no finite mean, so they are read as exponential service times with means
:math:`\\eta` and :math:`\\phi\\psi`. With :math:`\\phi` multiplying the time, the
receivers of a broadcast share the receiving end and its time grows with their number,
as the paper's measurements show (Fig. 1b); the literal rate would make it shrink.

Patterns (Fig. 4): ``scatter`` sends the jobs round-robin to ``R`` receivers;
``broadcast`` duplicates every job to all ``R`` receivers; ``gather`` runs D, M and C
per sender in parallel and merges them into one FIFO receiver at the root. scaleprobe
adds compositions for collectives the paper does not model: ``allgather`` (a gather,
then a broadcast of what was gathered), ``allreduce`` (a gather of every sender's
vector, then a broadcast of one vector), ``alltoall`` (every rank scatters at once
over its own link: one scatter) and ``tree_broadcast``, the binomial tree MPI
libraries use for a broadcast (and scaleprobe's emulated communicator charges):
``ceil(log2 q)`` rounds, in each of which every rank that has the data sends all of
it to one that has not, as a one-receiver scatter; a round ends with its slowest
transfer; ``ring_allgather``, the ring MPI libraries use for an allgather of
long messages (and scaleprobe's emulated communicator charges; recursive doubling
and Bruck move the same data in fewer rounds): ``q - 1`` rounds, in each of which
every rank sends one rank's block to its neighbour, as a one-receiver scatter,
ending with the slowest of the ``q`` transfers. The paper's ``broadcast`` passes
every job once through D and M and then duplicates it to the receivers, whose
receiving end it shares (time linear in ``q``); the tree moves the whole data
``ceil(log2 q)`` times, one receiver at a time.

Replications of one collective are simulated side by side (:func:`simulate_many`):
every array gets a leading replications axis, and the loops run over groups alone:
never over replications, senders, or the rounds of a tree or a ring, whose transfers
are simulated side by side too.

Large collectives move millions of data points; more than ``max_groups`` are
simulated as that many groups of equal size, a group being served as its points
would be in a row (D: the sum of its points' times, by its mean and variance; M and
R: gamma-distributed work).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "PATTERNS",
    "ServiceLaws",
    "fifo_departures",
    "metadata_departures",
    "replication_cells",
    "simulate",
    "simulate_many",
]


#: Collective patterns: the paper's three and scaleprobe's compositions.
PATTERNS = (
    "scatter",
    "broadcast",
    "gather",
    "allgather",
    "allreduce",
    "alltoall",
    "tree_broadcast",
    "ring_allgather",
)

#: Most rounds of a ``ring_allgather`` simulated one by one; more are that many
#: rounds, their times scaled to the number of rounds.
RING_ROUNDS = 8
#: Most groups of data points a ring round's transfer is simulated as, whatever
#: ``q`` and ``max_groups`` (as many as :class:`~scaleprobe.models.FiMCom`'s
#: calibration simulates): the metadata server's speed depends on how the points
#: arrive, so the grouping must not change between calibration and prediction, nor
#: with the process count.
RING_GROUPS = 32


def _groups(jobs, max_groups):
    """Data points per simulated group: at most ``max_groups`` nearly equal groups."""
    jobs = int(jobs)
    count = min(jobs, max(int(max_groups), 1))
    if count == 0:
        return np.zeros(0, dtype=np.int64)
    return np.full(count, jobs // count) + (np.arange(count) < jobs % count)


def _send(sizes, laws, rng, shape=()):
    """D then M for independent senders of the same groups: the groups' times out of
    M, in order, an array of ``shape + (len(sizes),)``."""
    low, high = laws.zeta_min, laws.zeta_max
    mean = math.log(high / low) / (high - low) if high > low else 1.0 / low
    variance = max(1.0 / (low * high) - mean * mean, 0.0)
    full = (*shape, len(sizes))
    single = 1.0 / rng.uniform(low, high, full)
    summed = rng.normal(sizes * mean, np.sqrt(sizes * variance), full)
    data = np.where(sizes == 1, single, np.maximum(summed, 0.5 * sizes * mean))
    sent = np.cumsum(data, axis=-1).reshape(-1, len(sizes))
    work = rng.gamma(sizes, 1.0, sent.shape)
    nu = laws.metadata_rate
    if len(sent) == 1:  # one sender: the plain loop is faster
        rate = lambda chi: nu * math.log1p(chi)  # noqa: E731
        return metadata_departures(sent[0], work[0], sizes, rate).reshape(full)
    return metadata_departures_many(sent, work, sizes, nu).reshape(full)


def _ends(arrivals, work, scale, rng):
    """Last departure of each FIFO receiver (the last axis holds its arrivals) of
    ``work`` gamma-distributed work at ``scale`` s per data point."""
    services = rng.gamma(work, scale, np.shape(arrivals))
    return fifo_departures(arrivals, services)[..., -1]  # departures never decrease


def _received(arrivals, work, scale, rng):
    """Last departure from FIFO receivers (last axis) of ``work`` gamma-distributed
    work at ``scale`` s per data point, one per leading index."""
    ends = _ends(arrivals, work, scale, rng)
    return ends.max(axis=tuple(range(1, ends.ndim)))


#: Most cells (replications x receivers x groups) simulated in one array; more are
#: taken a block of replications at a time.
_CELLS = 1 << 21


def _initialisation(laws, rng, shape, points):
    """C's delay of transfers of ``points`` data points each, s.

    Up to ``laws.eager_limit`` bytes a message is sent eagerly: the receiver's
    activation alone, exponential of mean :math:`\\eta` (Eq. 15). Beyond, the
    rendezvous protocol first shakes hands (Bhimani et al. 2019, Section 4.1.1): a
    request to the receiver and its answer, each one more activation, so the delay is
    the sum of three (gamma of shape 3, mean :math:`3\\eta`).
    """
    delay = rng.exponential(laws.eta, shape)
    if points * laws.job_bytes > laws.eager_limit:
        delay = delay + rng.gamma(2.0, laws.eta, shape)
    return delay


def _blocks(replications, cells_each):
    """Slices of the replications that keep each block under :data:`_CELLS`."""
    step = max(_CELLS // max(int(cells_each), 1), 1)
    return [slice(a, min(a + step, replications)) for a in range(0, replications, step)]


def _scatter(jobs, receivers, laws, rng, max_groups, replications):
    """Groups sent round robin to ``receivers`` FIFO receivers: the last to finish."""
    sizes = _groups(jobs, max_groups)
    out = np.zeros(replications)
    if not receivers or not len(sizes):
        return out
    used = min(receivers, len(sizes))
    rounds = -(-len(sizes) // used)
    pad = rounds * used - len(sizes)
    # receiver r takes groups r, r + used, ...; padding (size 0, served in no time,
    # arriving at once) leaves its departures as they were
    work = np.pad(sizes, (0, pad)).reshape(rounds, used).T
    for block in _blocks(replications, rounds * used):
        count = block.stop - block.start
        sent = np.pad(_send(sizes, laws, rng, (count,)), ((0, 0), (0, pad)))
        arrivals = sent.reshape(count, rounds, used).transpose(0, 2, 1)
        each = -(-len(sizes) // used) * int(sizes.max())  # a receiver's, at most
        arrivals = arrivals + _initialisation(laws, rng, (count, used, 1), each)
        out[block] = _received(arrivals, work, laws.psi, rng)
    return out


def _broadcast(jobs, receivers, laws, rng, max_groups, replications):
    """Every group duplicated to all receivers, which share the receiving end."""
    sizes = _groups(jobs, max_groups)
    out = np.zeros(replications)
    if not receivers or not len(sizes):
        return out
    for block in _blocks(replications, receivers * len(sizes)):
        count = block.stop - block.start
        sent = _send(sizes, laws, rng, (count,))
        delay = _initialisation(laws, rng, (count, receivers, 1), int(sizes.sum()))
        arrivals = sent[:, None, :] + delay
        out[block] = _received(arrivals, sizes, receivers * laws.psi, rng)
    return out


def _rounds(sizes, transfers, laws, rng, replications):
    """Rounds of one-receiver transfers of ``sizes``, ``transfers[i]`` of them at once
    in round ``i``: each round ends with its slowest transfer, the rounds follow one
    another. Every transfer of every round is simulated side by side."""
    transfers = np.asarray(transfers, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(transfers)[:-1]])
    total = int(transfers.sum())
    out = np.empty(replications)
    for block in _blocks(replications, total * len(sizes)):
        count = block.stop - block.start
        sent = _send(sizes, laws, rng, (count, total))
        sent += _initialisation(laws, rng, (count, total, 1), int(sizes.sum()))
        ends = _ends(sent, sizes, laws.psi, rng)
        out[block] = np.maximum.reduceat(ends, starts, axis=1).sum(axis=1)
    return out


def _tree_broadcast(jobs, receivers, laws, rng, max_groups, replications):
    """``ceil(log2 q)`` rounds of one-receiver transfers of all the data."""
    sizes = _groups(jobs, max_groups)
    pairs, held, ranks = [], 1, receivers + 1
    while len(sizes) and held < ranks:
        # every rank that has the data sends all of it to one that has not
        pairs.append(min(held, ranks - held))
        held += pairs[-1]
    if not pairs:
        return np.zeros(replications)
    return _rounds(sizes, pairs, laws, rng, replications)


def _ring_allgather(jobs, receivers, laws, rng, max_groups, replications):
    """``q - 1`` rounds of ``q`` one-receiver transfers of one block each.

    A rank receives ``jobs`` data points in all, ``jobs / (q - 1)`` a round. At most
    :data:`RING_ROUNDS` rounds are simulated; more are that many, scaled: the mean
    is the same, the spread over replications larger than the ring's (a
    conservative interval).
    """
    if not receivers or jobs <= 0:
        return np.zeros(replications)
    ranks = receivers + 1
    sizes = _groups(max(round(jobs / receivers), 1), min(max_groups, RING_GROUPS))
    rounds = min(receivers, RING_ROUNDS)
    out = _rounds(sizes, [ranks] * rounds, laws, rng, replications)
    return out * (receivers / rounds)


def _gather(jobs, senders, laws, rng, max_groups, replications):
    """D, M and C per sender in parallel, merged into the root's FIFO receiver."""
    if not senders or jobs <= 0:
        return np.zeros(replications)
    each = _groups(jobs, senders) if jobs >= senders else np.ones(int(jobs), int)
    parts = {}  # senders with the same groups are simulated side by side
    for n in each:
        part = tuple(_groups(n, max(max_groups // senders, 1)))
        parts[part] = parts.get(part, 0) + 1
    arrivals, sizes = [], []
    for part, count in parts.items():
        part = np.array(part)
        sent = _send(part, laws, rng, (replications, count))
        sent += _initialisation(laws, rng, (replications, count, 1), int(part.sum()))
        arrivals.append(sent.reshape(replications, -1))
        sizes.append(np.tile(part, count))
    arrivals, sizes = np.concatenate(arrivals, axis=1), np.concatenate(sizes)
    order = np.argsort(arrivals, axis=1, kind="stable")
    arrivals = np.take_along_axis(arrivals, order, axis=1)
    return _received(arrivals, sizes[order], laws.psi, rng)


def simulate_many(pattern, jobs, processes, laws, rng, replications, max_groups=1024):
    """Completion times of independent replications of one collective, side by side.

    Parameters
    ----------
    pattern : str
        One of :data:`PATTERNS`.
    jobs : int
        Data points of the collective: sent by the root (scatter, broadcast,
        tree_broadcast: each once), received by the root (gather), received by
        each rank (allgather, ring_allgather), per rank's vector (allreduce) or
        sent by each rank (alltoall).
    processes : int
        Ranks taking part; ``processes - 1`` receivers or senders.
    laws : ServiceLaws
    rng : numpy.random.Generator
    replications : int
    max_groups : int, default=1024

    Returns
    -------
    numpy.ndarray of shape (replications,)
        Seconds (0 without another rank or without jobs).

    Examples
    --------
    >>> laws = ServiceLaws(1e6, 1e6, 1e9, 1e-12, 1e-12)
    >>> rng = np.random.default_rng(0)
    >>> times = simulate_many("scatter", 1000, 4, laws, rng, 3)  # 1e6 jobs/s
    >>> np.round(times * 1e3, 2).tolist()  # ms
    [1.0, 1.0, 1.0]
    """
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
    if isinstance(replications, bool) or int(replications) != replications:
        raise ValueError(f"replications must be an integer, got {replications!r}")
    if replications < 0:
        raise ValueError(f"replications must be >= 0, got {replications!r}")
    if not replications:
        return np.zeros(0)
    others = max(int(processes) - 1, 0)
    jobs = max(round(jobs), 0)
    run = (laws, rng, max_groups, int(replications))
    if pattern in ("scatter", "alltoall"):  # all-to-all: each rank scatters at once
        return _scatter(jobs, others, *run)
    if pattern == "broadcast":
        return _broadcast(jobs, others, *run)
    if pattern == "tree_broadcast":
        return _tree_broadcast(jobs, others, *run)
    if pattern == "gather":
        return _gather(jobs, others, *run)
    if pattern == "ring_allgather":
        return _ring_allgather(jobs, others, *run)
    if pattern == "allgather":
        return _gather(jobs, others, *run) + _broadcast(jobs, others, *run)
    # allreduce: a gather of every sender's vector, then a broadcast of one vector
    return _gather(jobs * others, others, *run) + _broadcast(jobs, others, *run)


def replication_cells(pattern, jobs, processes, max_groups=1024):
    """Cells (transfers times groups of data points) one replication simulates.

    The work of a replication beyond the loop over groups every call runs: what a
    Dask task's share of the replications must be large in to be worth a task of its
    own (:class:`~scaleprobe.models.FiMCom` splits by it).

    Parameters
    ----------
    pattern : str
        One of :data:`PATTERNS`.
    jobs : int
        Data points of the collective (see :func:`simulate_many`).
    processes : int
        Ranks taking part.
    max_groups : int, default=1024

    Returns
    -------
    int

    Examples
    --------
    >>> replication_cells("scatter", 30_000, 1024)  # one sender: its groups
    1024
    >>> replication_cells("tree_broadcast", 30_000, 1024)  # 1023 transfers of them
    1047552
    """
    others = max(int(processes) - 1, 0)
    jobs = max(round(jobs), 0)
    groups = min(jobs, max(int(max_groups), 1))
    if pattern in ("scatter", "alltoall", "gather"):
        return max(groups, min(jobs, others))
    if pattern in ("broadcast", "tree_broadcast"):
        return others * groups
    if pattern == "ring_allgather":
        return min(others, RING_ROUNDS) * (others + 1) * min(groups, RING_GROUPS)
    # allgather, allreduce: a gather, then a broadcast
    return max(groups, min(jobs, others)) + others * groups


def simulate(pattern, jobs, processes, laws, rng, max_groups=1024):
    """Completion time of one collective, one replication.

    Parameters
    ----------
    pattern : str
        One of :data:`PATTERNS`.
    jobs : int
        Data points of the collective (see :func:`simulate_many`).
    processes : int
        Ranks taking part; ``processes - 1`` receivers or senders.
    laws : ServiceLaws
    rng : numpy.random.Generator
    max_groups : int, default=1024

    Returns
    -------
    float
        Seconds (0 without another rank or without jobs).

    Examples
    --------
    >>> laws = ServiceLaws(1e6, 1e6, 1e9, 1e-12, 1e-12)
    >>> rng = np.random.default_rng(0)
    >>> round(float(simulate("scatter", 1000, 4, laws, rng)) * 1e3, 2)  # ms, 1e6 jobs/s
    1.0
    """
    return float(simulate_many(pattern, jobs, processes, laws, rng, 1, max_groups)[0])


# ----------------------------------------------------------------------------
# The servers of FiM-Com's tandem queues (Bhimani et al. 2019, Eq. 13-16): the
# service laws' parameters, a FIFO server, and the metadata server M whose speed
# :math:`\nu \ln(1 + \chi)` depends on the data points present. The collectives
# that pass jobs through them are above.


@dataclass(frozen=True)
class ServiceLaws:
    """Parameters of the service laws (Eq. 13-16).

    Attributes
    ----------
    zeta_min, zeta_max : float
        Range of the data transfer rate, jobs/s.
    metadata_rate : float
        :math:`\\nu`, jobs/s per unit of :math:`\\ln(1 + \\chi)`.
    eta : float
        Mean initialisation delay, s.
    psi : float
        Mean receive time of one job by one receiver, s.
    job_bytes : float, default=8.0
        Bytes of one job.
    eager_limit : float, default=inf
        Largest message (bytes to one receiver in one transfer) sent eagerly; a
        larger one waits for the rendezvous handshake: two more activations.
    """

    zeta_min: float
    zeta_max: float
    metadata_rate: float
    eta: float
    psi: float
    job_bytes: float = 8.0
    eager_limit: float = math.inf


def fifo_departures(arrivals, services):
    """Departure times of a FIFO single server (Lindley's recursion, vectorised).

    ``d_k = max(a_k, d_{k-1}) + s_k`` equals ``S_k + max_{j<=k}(a_j - S_{j-1})`` with
    ``S`` the cumulative services, computed along the last axis.

    Parameters
    ----------
    arrivals : array-like
        Non-decreasing arrival times (last axis).
    services : array-like
        Service times, same shape (or broadcastable).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> fifo_departures([0.0, 0.0, 5.0], [1.0, 1.0, 1.0]).tolist()
    [1.0, 2.0, 6.0]
    """
    arrivals = np.asarray(arrivals, dtype=float)
    services = np.broadcast_to(np.asarray(services, dtype=float), arrivals.shape)
    done = np.cumsum(services, axis=-1)
    return done + np.maximum.accumulate(arrivals - (done - services), axis=-1)


def metadata_departures(arrivals, work, sizes, rate):
    """Departures of a FIFO server whose speed depends on the data points present.

    Parameters
    ----------
    arrivals : array-like
        Non-decreasing arrival times of the groups.
    work : array-like
        Work of each group (its service time at speed 1).
    sizes : array-like
        Data points in each group.
    rate : callable
        Speed for ``chi`` data points present (including the one in service).

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> metadata_departures([0.0, 0.0], [1.0, 1.0], [1, 1], lambda chi: 1.0).tolist()
    [1.0, 2.0]
    """
    arrivals = [float(a) for a in arrivals]
    work = [float(w) for w in work]
    sizes = [float(s) for s in sizes]
    count = len(arrivals)
    out = np.empty(count)
    now, arrived, present = 0.0, 0, 0.0
    for k in range(count):
        now = max(now, arrivals[k])
        stop = bisect.bisect_right(arrivals, now, lo=arrived)
        if stop > arrived:
            present += sum(sizes[arrived:stop])
            arrived = stop
        remaining = work[k]
        while True:
            speed = rate(present)
            finish = now + remaining / speed
            if arrived < count and arrivals[arrived] < finish:
                remaining -= (arrivals[arrived] - now) * speed
                now = arrivals[arrived]
                present += sizes[arrived]
                arrived += 1
            else:
                now = finish
                break
        out[k] = now
        present -= sizes[k]
    return out


def metadata_departures_many(arrivals, work, sizes, nu):
    """:func:`metadata_departures` at speed ``nu * log1p(chi)`` for independent
    senders at once: one row of ``arrivals`` and ``work`` per sender, the same
    ``sizes``; the loop runs over the groups, each step over all senders.

    A group's data points present when its service starts are those arrived and not
    yet departed: FIFO makes that the sizes from the group itself up to the last
    arrival, a difference of cumulative sizes.

    Parameters
    ----------
    arrivals : ndarray of shape (senders, groups)
        Non-decreasing arrival times of each sender's groups.
    work : ndarray of shape (senders, groups)
        Work of each group (its service time at speed 1).
    sizes : ndarray of shape (groups,)
        Data points per group.
    nu : float
        The metadata rate, jobs/s per unit of ``log1p(chi)``.

    Returns
    -------
    ndarray of shape (senders, groups)
        Departure times.
    """
    senders, count = arrivals.shape
    rows = np.arange(senders)
    cumulative = np.concatenate([[0.0], np.cumsum(sizes, dtype=float)])
    ahead = np.concatenate([arrivals, np.full((senders, 1), np.inf)], axis=1)
    out = np.empty((senders, count))
    now = np.zeros(senders)
    arrived = np.zeros(senders, dtype=np.int64)
    for k in range(count):
        np.maximum(now, arrivals[:, k], out=now)
        np.maximum(arrived, k + 1, out=arrived)
        while True:  # everything that has arrived by now joins the queue
            came = ahead[rows, arrived] <= now
            if not came.any():
                break
            arrived += came
        remaining = work[:, k].copy()
        serving = np.ones(senders, dtype=bool)
        while True:  # serve, the speed changing at every arrival before the end
            speed = nu * np.log1p(cumulative[arrived] - cumulative[k])
            finish = now + remaining / speed
            following = ahead[rows, arrived]
            interrupted = serving & (following < finish)
            ended = serving & ~interrupted
            now[ended] = finish[ended]
            serving = interrupted
            if not serving.any():
                break
            remaining[serving] -= (following - now)[serving] * speed[serving]
            now[serving] = following[serving]
            arrived += serving
        out[:, k] = now
    return out
