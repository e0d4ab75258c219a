"""One rank's clock and counters, shared by a communicator and its splits."""

from __future__ import annotations

import time

import numpy as np

__all__ = ["COLLECTIVE_SCALINGS", "PATH_KEYS", "RankClock", "call_overhead", "extend"]

COUNTER_KEYS = (
    "comp_time",
    "comm_time",
    "bytes_sent",
    "bytes_inter",
    "bytes_intra",
    "messages",
    "messages_inter",
)

#: Parts of a rank's critical path, in the order of a stamp's entries 1..4.
PATH_KEYS = ("comp", "latency", "bandwidth", "intra")

#: How the latency-bound rounds of a collective over all ranks grow with ``p``:
#: ``"tree"`` as ``log2 p`` (barrier, binomial trees, recursive doubling, Bruck),
#: ``"linear"`` as ``p`` (pairwise-exchange alltoall, ring allgather and allreduce).
COLLECTIVE_SCALINGS = ("tree", "linear")


def extend(stamp, seconds: float, part: int):
    """A copy of ``stamp`` moved ``seconds`` later, charged to path part ``part``.

    A *stamp* is a float64 array ``[time, comp, latency, bandwidth, intra]``: a
    virtual time and the decomposition of the chain of events that led to it (see
    :class:`RankClock`). ``part`` indexes :data:`PATH_KEYS`.
    """
    out = np.array(stamp, dtype=np.float64)
    out[0] += seconds
    out[1 + part] += seconds
    return out


class RankClock:
    """Virtual (or wall) time of one rank, split into computation and communication.

    In ``"emulated"`` mode the clock advances by the process CPU time spent between
    communication calls (the CPU mark is reset when a call returns, so CPU burnt
    polling inside MPI is never charged) and by whatever completion time the link
    model gives a call. In ``"none"`` mode it is the wall clock, and the time inside
    calls is communication. The core slot (if any) is released on entering a call and
    taken again on leaving it.

    **The communicator's own CPU.** A call's bookkeeping (and reading the CPU
    clock, a system call) starts before the CPU mark is read on entering it and
    ends after the mark is reset on leaving it; that share of every call lies in
    the computation burst between two calls. ``overhead`` is subtracted from every
    burst (down to zero), as a profiler subtracts its own calibrated cost per event:
    :func:`call_overhead` measures it.

    **Critical path.** In emulated mode the clock also keeps ``path``: the split of
    ``now`` into computation, inter-node latency, inter-node bandwidth and intra-node
    (memory model) seconds along the chain of events that determined ``now``. When a
    call completes later than the rank's own time, the rank inherits the path of
    whatever it waited for (the sender of a message, the latest rank entering a
    collective) plus the modelled transfer; so the path of the rank that finishes last
    is the run's critical path, and its parts sum to the completion time. Latency and
    bandwidth parts scale exactly with the link's latency and inverse bandwidth: that
    is what lets a model re-price the recorded traffic on another network.

    Parameters
    ----------
    mode : {"none", "emulated", "netns"}
        Time base: virtual for ``"emulated"``, wall clock otherwise.
    slots : CoreSlots or None
        Host-wide compute token, held between calls.
    cpu_time, wall_time : callable, optional
        The process CPU clock and the wall clock, seconds (:func:`time.process_time`
        and :func:`time.perf_counter` by default); tests inject their own.
    overhead : float, default=0.0
        Seconds of every computation burst that are the communicator's own
        (:func:`call_overhead`), not charged.

    Examples
    --------
    >>> cpu = [0.0]                 # a CPU clock the example advances by hand
    >>> clock = RankClock("emulated", cpu_time=lambda: cpu[0])
    >>> cpu[0] += 0.5               # half a second of computation ...
    >>> clock.enter()               # ... then a call
    0.5
    >>> clock.leave(extend(clock.stamp(), 2.0, PATH_KEYS.index("bandwidth")))
    >>> cpu[0] += 0.25              # the call took 2 s on the wire
    >>> clock.time(), clock.snapshot()["comm_time"]
    (2.75, 2.0)
    """

    def __init__(
        self, mode: str, slots=None, *, cpu_time=None, wall_time=None, overhead=0.0
    ):
        self.mode = mode
        self.overhead = float(overhead)
        self.slots = slots
        self._cpu_time = time.process_time if cpu_time is None else cpu_time
        self._wall_time = time.perf_counter if wall_time is None else wall_time
        self.emulated = mode == "emulated"
        # the clock a computation burst is read from (one call: it lies in the
        # burst between two communication calls)
        self._read = self._cpu_time if self.emulated else self._wall_time
        self.counts = dict.fromkeys(COUNTER_KEYS, 0)
        self.counts["comp_time"] = 0.0
        self.counts["comm_time"] = 0.0
        self.egress_free = 0.0
        self.path = np.zeros(len(PATH_KEYS))
        self.collectives = {}
        self.collective_latency = dict.fromkeys(COLLECTIVE_SCALINGS, 0.0)
        self._depth = 0
        self._region = None  # start of the open parallel region, if any
        # Replay of point-to-point traffic with contention (see _replay): set by the
        # communicator when its link shares the network between flows.
        self.replaying = False
        self.world_size = 1
        self.sequence = 0
        self.marks = []
        self.unresolved = set()
        self.known = {}  # completions kept between replays (rank 0 only)
        self.restart(acquire=False)

    def restart(self, acquire: bool = True) -> None:
        """Set time zero here (call right after a barrier so ranks agree).

        Parameters
        ----------
        acquire : bool, default=True
            Take a core slot first (never before a blocking MPI call).
        """
        if acquire and self.slots is not None:
            self.slots.acquire()
        self.wall_start = self._wall_time()
        self.now = 0.0
        self.path = np.zeros(len(PATH_KEYS))
        self.begin_epoch()
        self._entered = 0.0
        self._mark = self._read()

    def begin_epoch(self) -> None:
        """Start a new replay log at the current stamp (its times are exact here)."""
        self.log = []
        self.delta = np.zeros(1 + len(PATH_KEYS))
        self.base = self.stamp()

    def record(self, code: int, a: float = 0.0, b: float = 0.0, c: float = 0.0):
        """Append a replay row (see :mod:`scaleprobe.kernels.comm._replay`).

        The row carries the time that passed since the previous row without a
        point-to-point wait (the stamp delta), which the replay adds back.
        """
        if self.replaying:
            self.log.append(
                [float(code), *self.delta.tolist(), float(a), float(b), float(c)]
            )
            self.delta[:] = 0.0

    def mark(self) -> int:
        """Remember this instant; return its index into :attr:`marks`.

        In emulated mode the bookkeeping after the instant is not computation: the
        CPU mark is reset on return, as on leaving a call.
        """
        self.flush()
        self.marks.append(self.now if self.emulated else self.wall())
        index = len(self.marks) - 1
        if self.replaying:
            self.record(5, index)  # _replay.MARK
            self.unresolved.add(index)
        if self.emulated and not self._depth:
            self._mark = self._read()
        return index

    def wall(self) -> float:
        """Wall seconds since time zero."""
        return self._wall_time() - self.wall_start

    def flush(self) -> None:
        """Charge the computation burst since the last mark (none in an emulated
        parallel region: :meth:`end_parallel` charges it)."""
        if self._depth:
            return
        mark = self._read()
        if self.emulated and self._region is not None:
            self._mark = mark
            return
        burst = max(mark - self._mark - self.overhead, 0.0)
        self._mark = mark
        self.counts["comp_time"] += burst
        if self.emulated:
            self.now += burst
            self.path[0] += burst
            self.delta[0] += burst
            self.delta[1] += burst

    def begin_parallel(self) -> None:
        """Start a parallel region: charge the computation burst before it.

        Until :meth:`end_parallel`, the process CPU time (every thread's) is not
        charged; communication calls made meanwhile (the region's transfers, on the
        calling thread) advance the clock as usual.
        """
        self.flush()
        self._region = self.now

    def end_parallel(self, seconds: float) -> None:
        """End a parallel region begun with :meth:`begin_parallel`.

        In emulated mode the region is charged ``seconds`` (its critical path: the
        longest thread's CPU time, what the region lasts on cores of its own) in
        place of the process CPU time, which sums every thread's. The region ran
        from its start, so communication made during it overlaps it: the clock
        ends at the later of the two. Other modes time the region on the wall
        clock, as any computation.

        Parameters
        ----------
        seconds : float
            Computation seconds of the region.

        Examples
        --------
        >>> cpu = [0.0]
        >>> clock = RankClock("emulated", cpu_time=lambda: cpu[0])
        >>> clock.begin_parallel()
        >>> cpu[0] += 2.0          # two threads, one second of CPU each
        >>> clock.end_parallel(1.0)
        >>> clock.time(), clock.snapshot()["comp_time"]
        (1.0, 1.0)
        """
        start, self._region = self._region, None
        if not self.emulated or start is None:
            return
        self._mark = self._read()  # the threads' CPU, summed, is not charged
        seconds = max(float(seconds), 0.0)
        self.counts["comp_time"] += seconds
        extra = start + seconds - self.now  # beyond what the transfers took
        if extra > 0:
            self.now += extra
            self.path[0] += extra
            self.delta[0] += extra
            self.delta[1] += extra

    def time(self) -> float:
        """Current time of this rank, seconds since time zero."""
        self.flush()
        return self.now if self.emulated else self.wall()

    def enter(self) -> float:
        """Start a communication call; returns the arrival time.

        Calls may nest (a call built from others); only the outermost one releases
        and re-takes the core slot and ends the computation burst.
        """
        if self._depth:
            self._depth += 1
            return self.now if self.emulated else self.wall()
        self.flush()
        self._depth = 1
        if self.slots is not None:
            self.slots.release()
        self._entered = self.now if self.emulated else self.wall()
        return self._entered

    def stamp(self):
        """``[now, *path]`` (see :func:`extend`); call inside a communication call."""
        return np.concatenate(([self.now], self.path))

    def leave(self, done=None, p2p=False) -> None:
        """End a communication call that completes at stamp ``done`` (or None).

        Parameters
        ----------
        done : array-like or None
            ``[time, comp, latency, bandwidth, intra]``: when the call completes and
            the critical path that led there. Ignored unless emulated and later than
            the rank's own time.
        p2p : bool, default=False
            The call waited for point-to-point transfers, which the replay times
            again; any other call's wait is kept in the replay log as it is.
        """
        if self.emulated and done is not None and done[0] > self.now:
            if not p2p:
                self.delta += np.asarray(done, dtype=np.float64) - self.stamp()
            self.now = float(done[0])
            self.path = np.array(done[1:], dtype=np.float64)
        self._depth -= 1
        if self._depth:
            return
        if self.emulated:
            self.counts["comm_time"] += self.now - self._entered
        else:
            self.counts["comm_time"] += self.wall() - self._entered
        if self.slots is not None:
            self.slots.acquire()
        self._mark = self._read()

    def add_message(self, nbytes: int, inter: bool, messages: int = 1) -> None:
        """Count ``messages`` messages of ``nbytes`` bytes in all, sent by this rank."""
        nbytes = int(nbytes)
        self.counts["bytes_sent"] += nbytes
        self.counts["messages"] += messages
        if inter:
            self.counts["bytes_inter"] += nbytes
            self.counts["messages_inter"] += messages
        else:
            self.counts["bytes_intra"] += nbytes

    def add_traffic(self, traffic: dict) -> None:
        """Count what :func:`rank_traffic` says this rank sent."""
        counts = self.counts
        counts["bytes_inter"] += traffic["bytes_inter"]
        counts["bytes_intra"] += traffic["bytes_intra"]
        counts["bytes_sent"] += traffic["bytes_inter"] + traffic["bytes_intra"]
        counts["messages"] += traffic["messages"]
        counts["messages_inter"] += traffic["messages_inter"]

    def add_collective(
        self, kind: str, nbytes: float, latency: float = 0.0, scaling=None
    ) -> None:
        """Count one call of collective ``kind`` moving ``nbytes`` per rank.

        ``latency`` is the inter-node latency the call's schedule charged (seconds)
        and ``scaling`` how its number of latency-bound rounds grows with the ranks
        (:data:`COLLECTIVE_SCALINGS`, None for a call on a split communicator); the
        latency is summed per scaling in :attr:`collective_latency`.
        """
        calls = self.collectives.setdefault(kind, [0, 0.0])
        calls[0] += 1
        calls[1] += float(nbytes)
        if scaling is not None:
            self.collective_latency[scaling] += float(latency)

    def snapshot(self) -> dict:
        """Counter values now (computation burst included)."""
        self.flush()
        return dict(self.counts)


class _NullCall:
    """A communication call that does nothing, shaped like the communicator's."""

    def __init__(self, clock):
        self._clock = clock

    def call(self, value=None):
        self._clock.enter()
        try:
            return value
        finally:
            self._clock.leave(None)


def call_overhead(cpu_time=None, calls: int = 200, batches: int = 7) -> float:
    """CPU seconds a communication call leaves in the burst before the next call.

    Times ``batches`` runs of ``calls`` calls that do nothing, back to back, each
    made as a program makes a call to the communicator (a method call whose body
    enters and leaves the clock): what an emulated clock charges per call is then
    the calls' own cost outside the window the clock excludes, the reading of the
    CPU clock included. The least batch is kept, so a burst is never cut by more
    than the cheapest the bookkeeping was.

    Parameters
    ----------
    cpu_time : callable, optional
        The CPU clock (:func:`time.process_time` by default).
    calls, batches : int
        Calls per batch, batches.

    Returns
    -------
    float
        Seconds per call.

    Examples
    --------
    >>> ticks = iter(range(10**6))  # a CPU clock that advances 1 us a reading
    >>> round(call_overhead(lambda: next(ticks) * 1e-6, calls=10, batches=2), 9)
    1e-06
    """
    clock = RankClock("emulated", cpu_time=cpu_time)
    null = _NullCall(clock)
    least = float("inf")
    for _ in range(batches):
        null.call()
        before = clock.counts["comp_time"]
        for _ in range(calls):
            null.call()
        least = min(least, (clock.counts["comp_time"] - before) / calls)
    return least
