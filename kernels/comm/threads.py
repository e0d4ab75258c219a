"""Threads of one rank: a pool for a kernel's parallel regions, charged honestly.

A rank swept at ``threads: T`` runs its computation on :class:`ThreadTeam` s of
``T`` threads (the pattern of Suzumura et al. 2011's MPI x OpenMP Graph500 and Chen
et al. 2018's threaded subgraph counting). Python threads run in parallel while
numpy and scipy work in compiled loops that release the interpreter lock (gathers,
``take``, sorts, sparse row indexing, arithmetic over large arrays); a team is worth
its threads only for such work.

**Charging a parallel region.** In throttle mode ``emulated`` a rank's clock advances
by its process CPU time, which over a parallel region sums the CPU of every thread:
two threads busy for one second each would charge two seconds. :meth:`ThreadTeam.map`
instead charges the region its critical path: the longest CPU time any one thread
spent in it (each thread's own ``CLOCK_THREAD_CPUTIME_ID``), plus the calling
thread's own CPU time in the region. That is how long the region lasts on cores of
its own, as the process CPU time of a single thread is how long a serial burst lasts,
and, like it, does not grow when other processes share the host's cores. In the
other modes the wall clock times the region, as any computation.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["ThreadTeam", "balanced_cuts"]


def balanced_cuts(weights, parts: int) -> np.ndarray:
    """Cut items into ``parts`` consecutive pieces of about equal total weight.

    Parameters
    ----------
    weights : array-like of number
        Weight of every item (for example the length of a vertex's neighbour
        list).
    parts : int
        Pieces wanted (at least 1).

    Returns
    -------
    numpy.ndarray of int
        ``parts + 1`` boundaries, from 0 to the number of items: piece ``i`` holds
        items ``cuts[i]:cuts[i + 1]`` (a piece may be empty).

    Examples
    --------
    >>> balanced_cuts([5, 1, 1, 1, 1, 1], 2).tolist()
    [0, 1, 6]
    >>> balanced_cuts([1, 1, 1, 1], 3).tolist()
    [0, 2, 3, 4]
    """
    weights = np.asarray(weights, dtype=np.float64)
    ends = np.cumsum(weights)
    total = float(ends[-1]) if ends.size else 0.0
    targets = total * np.arange(1, parts) / parts
    inner = np.searchsorted(ends, targets, side="left") + 1
    inner = np.minimum(inner, weights.size)
    return np.concatenate(([0], inner, [weights.size])).astype(np.int64)


class ThreadTeam:
    """``threads`` worker threads for one rank's parallel regions.

    Parameters
    ----------
    threads : int
        Threads of the rank; 1 runs every region inline, on the calling thread.
    comm : InstrumentedComm, optional
        The rank's communicator, whose clock :meth:`map` charges each region's
        critical path (emulated mode); None: nothing is charged specially.
    thread_time : callable, optional
        The calling thread's CPU clock, seconds (:func:`time.thread_time` by
        default); tests inject their own.

    Attributes
    ----------
    last_region : float
        Critical-path seconds of the last parallel region (0 before the first).

    Examples
    --------
    >>> with ThreadTeam(2) as team:
    ...     team.map(lambda x: x * x, [1, 2, 3])
    [1, 4, 9]
    """

    def __init__(self, threads: int, comm=None, *, thread_time=None):
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
        self.threads = threads
        self._clock = getattr(comm, "_clock", None)
        self._thread_time = time.thread_time if thread_time is None else thread_time
        self._pool = (
            ThreadPoolExecutor(threads, thread_name_prefix="scaleprobe-team")
            if threads > 1
            else None
        )
        self.last_region = 0.0

    def __enter__(self) -> ThreadTeam:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker threads (after the regions running finish)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _timed(self, function, item):
        start = self._thread_time()
        out = function(item)
        return out, threading.get_ident(), self._thread_time() - start

    def map(self, function, items, during=None) -> list:
        """Run ``function`` on every item, on the team's threads; results in order.

        With more than one thread and item, the call is one parallel region: the
        rank's clock is charged its critical path (see the module's notes), kept
        in :attr:`last_region`.

        Parameters
        ----------
        function : callable
            ``function(item)``; items must be independent (no item reads what
            another writes).
        items : iterable
        during : callable, optional
            Run on the calling thread while the threads work (a transfer that
            overlaps the region: the calling thread is the communication thread);
            in emulated mode the region then ends at the later of the two.

        Returns
        -------
        list
            ``[function(item) for item in items]``.
        """
        items = list(items)
        if self._pool is None or len(items) < 2:
            out = [function(item) for item in items]
            if during is not None:
                during()
            return out
        if self._clock is not None:
            self._clock.begin_parallel()
        try:
            done, own = self._region(function, items, during)
        except BaseException:
            if self._clock is not None:  # the clock charges as before the region
                self._clock.end_parallel(0.0)
            raise
        busy: dict[int, float] = {}
        for _, worker, seconds in done:
            busy[worker] = busy.get(worker, 0.0) + seconds
        self.last_region = max(busy.values()) + own
        if self._clock is not None:
            self._clock.end_parallel(self.last_region)
        return [out for out, _, _ in done]

    def _region(self, function, items, during):
        """Run the items on the pool and ``during`` here; the timed results and the
        calling thread's own CPU seconds in the region (outside ``during``)."""
        began = self._thread_time()
        futures = [self._pool.submit(self._timed, function, item) for item in items]
        own = self._thread_time() - began
        if during is not None:
            during()
        began = self._thread_time()
        done = [future.result() for future in futures]
        # submitting and joining are the calling thread's work; its time inside
        # ``during`` is communication, which the communicator charges
        return done, own + self._thread_time() - began
