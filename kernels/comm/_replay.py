"""Contention on the shared network: fluid flows, the replay of an epoch, resolution.

Max-min fair sharing (:func:`max_min_rates`, :class:`FlowSet`)
    Every flow crosses a set of links; at any moment each flow gets the rate that
    progressive filling gives: all unfrozen flows grow together until a link is full,
    the flows on that link are frozen at their share, and the others keep growing.
    A flow alone gets the bottleneck of its route; ``k`` flows leaving one NIC get
    ``B / k`` each; ``k`` flows entering one NIC (incast) get ``B / k`` each.

Replay of an epoch (:func:`replay`)
    Between two collectives on all ranks, each rank logs what it did in rows of
    :data:`WIDTH` float64 (see :data:`SEND` ... :data:`MARK`): its sends, the
    transfers each of its waits waited for, its marks, and before each row the time
    that passed without point-to-point waiting (computation, other collectives) as a
    stamp delta ``[time, comp, latency, bandwidth, intra]``. :func:`replay` runs
    every rank's log as a discrete-event simulation in virtual time: sends start
    flows, flows share links max-min fairly on the routes of
    :class:`~scaleprobe.kernels.comm._network.Network`, a flow's bytes arrive one
    latency after they have left, and a wait ends at the latest completion it waited
    for (with that completion's critical path). Intra-node messages take the memory
    model and share nothing. The result is deterministic: it depends on the logs
    only, never on the order in which the ranks ran in real time.

Resolution (:class:`ResolutionMixin`)
    With a shared network the clocks that point-to-point calls return are
    provisional (see :mod:`scaleprobe.kernels.comm._p2p`). Every collective on all
    the job's ranks first *resolves* them: one real Allgather tells every rank
    whether anybody sent anything since the last resolution; if so, rank 0 gathers
    every rank's replay log, replays the epoch and sends every rank its exact stamp
    and the exact times of its marks. None of this costs virtual time. Collectives
    on a sub-communicator (from ``Split``) do not resolve: they wait on provisional
    clocks, and the replay keeps their waits as they were.
"""

from __future__ import annotations

import heapq

import numpy as np

from ._cores import idle_wait

__all__ = [
    "MARK",
    "SEND",
    "WAIT",
    "WAIT_RECV",
    "WAIT_SEND",
    "WIDTH",
    "FlowSet",
    "ResolutionMixin",
    "max_min_rates",
    "replay",
]


_EPS = 1e-12


def max_min_rates(flow_of, link_of, capacity, flows):
    """Max-min fair rate of every flow.

    Parameters
    ----------
    flow_of, link_of : numpy.ndarray of int
        One entry per (flow, link) crossing: flow ``flow_of[e]`` crosses link
        ``link_of[e]``.
    capacity : numpy.ndarray
        Bytes/s of every link.
    flows : int
        Number of flows.

    Returns
    -------
    numpy.ndarray
        Rate of each flow, bytes/s.

    Examples
    --------
    Two flows out of one NIC of 100 B/s, the second also into a NIC it shares
    with a third flow:

    >>> rates = max_min_rates(np.array([0, 0, 1, 1, 2, 2]),
    ...                       np.array([0, 1, 0, 2, 3, 2]),
    ...                       np.full(4, 100.0), 3)
    >>> rates.tolist()
    [50.0, 50.0, 50.0]
    """
    rates = np.zeros(flows)
    if flows == 0:
        return rates
    room = np.array(capacity, dtype=np.float64)
    links = len(room)
    live = np.ones(len(flow_of), dtype=bool)
    users = np.bincount(link_of, minlength=links).astype(np.float64)
    while live.any():
        busy = users > 0
        share = np.full(links, np.inf)
        share[busy] = np.maximum(room[busy], 0.0) / users[busy]
        level = share.min()
        full = busy & (share <= level * (1 + 1e-9) + _EPS)
        # every live flow crossing a full link is frozen at this level
        caught = np.zeros(flows, dtype=bool)
        caught[flow_of[live & full[link_of]]] = True
        rates[caught] = level
        leaving = live & caught[flow_of]
        gone = np.bincount(link_of[leaving], minlength=links)
        room -= gone * level
        users -= gone
        live &= ~leaving
    return rates


class FlowSet:
    """Flows in progress on a network, advanced event by event.

    Parameters
    ----------
    capacity : numpy.ndarray
        Bytes/s of every link.

    Examples
    --------
    Two 100-byte flows out of one 100 B/s NIC, the second starting 0.5 s later:

    >>> flows = FlowSet(np.full(3, 100.0))
    >>> flows.add("a", (0, 1), 100.0)
    >>> flows.advance(0.5)                    # "a" alone: 50 bytes sent
    []
    >>> flows.add("b", (0, 2), 100.0)
    >>> flows.next_finish()                   # then 50 B/s each
    1.5
    >>> flows.advance(1.5), flows.advance(flows.next_finish())
    (['a'], ['b'])
    """

    def __init__(self, capacity):
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.now = 0.0
        self._keys = []
        self._routes = []
        self._left = []
        self._size = []
        self._rates = None

    def __len__(self):
        return len(self._keys)

    def add(self, key, route, nbytes):
        """Start a flow of ``nbytes`` over the links ``route`` now (:attr:`now`)."""
        self._keys.append(key)
        self._routes.append(tuple(route))
        self._left.append(float(nbytes))
        self._size.append(float(nbytes))
        self._rates = None

    def rates(self):
        """Current rate of each flow in progress (in the order they were added)."""
        if self._rates is None:
            lengths = [len(r) for r in self._routes]
            flow_of = np.repeat(np.arange(len(self._routes)), lengths)
            link_of = (
                np.fromiter((i for r in self._routes for i in r), dtype=np.int64)
                if self._routes
                else np.zeros(0, dtype=np.int64)
            )
            self._rates = max_min_rates(
                flow_of, link_of, self.capacity, len(self._routes)
            )
        return self._rates

    def next_finish(self):
        """Time the next flow completes at the current rates (inf when none)."""
        if not self._keys:
            return np.inf
        rates = self.rates()
        return self.now + float(np.min(np.asarray(self._left) / rates))

    def advance(self, until):
        """Move to time ``until``; return the keys of flows finished on the way.

        ``until`` must not pass :meth:`next_finish` by more than rounding: flows
        finish exactly there, and rates change after. A flow finishes when what is
        left of it is rounding (a billionth of its size) or would take less time
        than the clock can resolve, so time always moves on.
        """
        if not self._keys:
            self.now = max(self.now, until)
            return []
        span = max(until - self.now, 0.0)
        rates = self.rates()
        left = np.asarray(self._left) - rates * span
        self.now = max(self.now, until)
        resolution = 1e-15 * max(1.0, abs(self.now))
        done = (left <= 1e-9 * np.asarray(self._size)) | (left <= rates * resolution)
        finished = [key for key, over in zip(self._keys, done, strict=True) if over]
        if finished:
            keep = ~done
            self._keys = [
                k for k, k_keep in zip(self._keys, keep, strict=True) if k_keep
            ]
            self._routes = [
                r for r, k_keep in zip(self._routes, keep, strict=True) if k_keep
            ]
            self._size = [
                n for n, k_keep in zip(self._size, keep, strict=True) if k_keep
            ]
            left = left[keep]
            self._rates = None
        self._left = left.tolist()
        return finished


#: Row codes: a send (``a`` destination world rank, ``b`` bytes, ``c`` sequence
#: number), a wait item for one's own send (``a`` sequence number) or for a received
#: message (``a`` sender world rank, ``b`` its sequence number), the end of a wait
#: (the rank continues when every item since the previous wait end has completed),
#: and a mark (``a`` its index).
SEND, WAIT_SEND, WAIT_RECV, WAIT, MARK = 1, 2, 3, 4, 5
#: Floats per row: code, the 5-float stamp delta, then a, b, c.
WIDTH = 9
_LAT, _BW, _INTRA = 2, 3, 4  # stamp indices of the path parts
_KNOWN_LIMIT = 100_000


def _later(stamp, other):
    return other if other[0] > stamp[0] else stamp


class _Epoch:
    """State of one replay; see :func:`replay`."""

    def __init__(self, bases, logs, tails, node_of, network, memory, known):
        self.logs = [
            np.asarray(log, dtype=np.float64).reshape(-1, WIDTH) for log in logs
        ]
        self.stamps = [np.array(b, dtype=np.float64) for b in bases]
        self.tails = [np.asarray(t, dtype=np.float64) for t in tails]
        self.node_of = np.asarray(node_of, dtype=np.int64)
        self.network = network
        self.memory_bandwidth, self.memory_latency = memory
        # key -> (finish stamp, arrival stamp); waited: key -> 1 sender, 2 receiver, 3
        self.done = {
            key: (finish, arrival) for key, (finish, arrival, _) in known.items()
        }
        self.waited = {key: flags for key, (_, _, flags) in known.items()}
        self.flows = FlowSet(network.capacity)
        self.flows.now = min((s[0] for s in self.stamps), default=0.0)
        self.started = {}  # key -> (start stamp, latency)
        self.position = [0] * len(self.logs)
        self.moved = [False] * len(self.logs)  # the current row's delta is applied
        self.items = [[] for _ in self.logs]
        self.waiting = {}  # key -> ranks blocked on it
        self.marks = [{} for _ in self.logs]
        self.finished = [None] * len(self.logs)
        self.heap = [(float(s[0]), rank) for rank, s in enumerate(self.stamps)]
        heapq.heapify(self.heap)

    def run(self):
        while True:
            next_rank = self.heap[0][0] if self.heap else np.inf
            next_flow = self.flows.next_finish()
            if next_rank == np.inf and next_flow == np.inf:
                break
            if next_flow <= next_rank:
                self._advance(next_flow)
            else:
                time, rank = heapq.heappop(self.heap)
                self._advance(time)
                self._step(rank)
        stuck = [rank for rank, final in enumerate(self.finished) if final is None]
        if stuck:
            missing = sorted(
                {
                    key
                    for rank in stuck
                    for key, _ in self.items[rank]
                    if key not in self.done
                }
            )
            raise RuntimeError(
                f"replay: ranks {stuck} wait for transfers never sent {missing[:5]}"
            )

    def _advance(self, time):
        for key in self.flows.advance(time):
            self._complete(key, self.flows.now)

    def _step(self, rank):
        log, stamp = self.logs[rank], self.stamps[rank]
        while self.position[rank] < len(log):
            row = log[self.position[rank]]
            if not self.moved[rank]:
                self.moved[rank] = True
                stamp += row[1:6]
                if row[1] > 0:
                    heapq.heappush(self.heap, (float(stamp[0]), rank))
                    return
            code, a, b, c = int(row[0]), row[6], row[7], row[8]
            if code == SEND:
                self._send(rank, int(a), float(b), int(c))
            elif code == WAIT_SEND:
                self.items[rank].append(((rank, int(a)), 0))
            elif code == WAIT_RECV:
                self.items[rank].append(((int(a), int(b)), 1))
            elif code == MARK:
                self.marks[rank][int(a)] = float(stamp[0])
            self.position[rank] += 1
            self.moved[rank] = False
            if code == WAIT:
                if not self._wake(rank):
                    return  # blocked: a completion puts it back on the heap
                if stamp[0] > self.flows.now:
                    heapq.heappush(self.heap, (float(stamp[0]), rank))
                    return
        stamp += self.tails[rank]
        self.finished[rank] = stamp

    def _send(self, rank, target, nbytes, sequence):
        key = (rank, sequence)
        stamp = self.stamps[rank]
        source_node, target_node = self.node_of[rank], self.node_of[target]
        if source_node == target_node:
            finish = stamp.copy()
            finish[0] += nbytes / self.memory_bandwidth
            finish[_INTRA] += nbytes / self.memory_bandwidth
            arrival = finish.copy()
            arrival[0] += self.memory_latency
            arrival[_INTRA] += self.memory_latency
            self._settle(key, finish, arrival)
            return
        latency = self.network.latency(source_node, target_node)
        self.started[key] = (stamp.copy(), latency)
        self.flows.add(key, self.network.route(source_node, target_node), nbytes)

    def _complete(self, key, now):
        start, latency = self.started.pop(key)
        finish = start.copy()
        finish[_BW] += now - start[0]
        finish[0] = now
        arrival = finish.copy()
        arrival[0] += latency
        arrival[_LAT] += latency
        self._settle(key, finish, arrival)

    def _settle(self, key, finish, arrival):
        """Record a transfer's completion and wake the ranks that waited for it."""
        self.done[key] = (finish, arrival)
        for rank in self.waiting.pop(key, ()):
            if self._wake(rank):
                heapq.heappush(self.heap, (float(self.stamps[rank][0]), rank))

    def _wake(self, rank):
        """End the rank's wait if all its items completed; say whether it did."""
        items = self.items[rank]
        missing = [key for key, _ in items if key not in self.done]
        if missing:
            for key in missing:
                ranks = self.waiting.setdefault(key, [])
                if rank not in ranks:
                    ranks.append(rank)
            return False
        stamp = self.stamps[rank]
        latest = stamp
        for key, which in items:
            latest = _later(latest, self.done[key][which])
        stamp[:] = latest
        for key, which in items:
            self.waited[key] = self.waited.get(key, 0) | (1 << which)
        self.items[rank] = []
        return True


def replay(
    bases,
    logs,
    tails,
    *,
    node_of,
    network,
    memory_bandwidth,
    memory_latency,
    known=None,
):
    """Exact times of one epoch of every rank, with contention.

    Parameters
    ----------
    bases : sequence of array_like
        Each rank's stamp at the start of the epoch.
    logs : sequence of array_like
        Each rank's rows (``(n, WIDTH)``).
    tails : sequence of array_like
        Each rank's stamp delta after its last row.
    node_of : array_like of int
        Node of every world rank.
    network : Network
        Links, capacities, routes and latencies.
    memory_bandwidth, memory_latency : float
        The intra-node model.
    known : dict, optional
        Completions of earlier epochs' transfers a rank may still wait for:
        ``(sender, sequence) -> (finish stamp, arrival stamp, waited)`` with
        ``waited`` 1 once the sender waited for it, 2 the receiver, 3 both.

    Returns
    -------
    finals : list of numpy.ndarray
        Each rank's stamp at the end of the epoch.
    marks : list of dict
        Each rank's mark index -> time.
    known : dict
        Completions to keep for later epochs (``known`` updated, bounded).

    Examples
    --------
    Two ranks on two nodes of a 100 B/s network each send 100 bytes to the other
    and wait for both transfers: one second on the wire, one latency more.

    >>> from scaleprobe.kernels.comm._network import Network
    >>> net = Network(2, 100.0, 0.5)
    >>> logs = [[[SEND, 0, 0, 0, 0, 0, 1 - r, 100, 0], [WAIT_SEND, 0, 0, 0, 0, 0,
    ...          0, 0, 0], [WAIT_RECV, 0, 0, 0, 0, 0, 1 - r, 0, 0],
    ...          [WAIT, 0, 0, 0, 0, 0, 0, 0, 0]] for r in range(2)]
    >>> finals, _, _ = replay([np.zeros(5)] * 2, logs, [np.zeros(5)] * 2,
    ...                       node_of=[0, 1], network=net, memory_bandwidth=1e9,
    ...                       memory_latency=0.0)
    >>> finals[0].tolist()
    [1.5, 0.0, 0.5, 1.0, 0.0]
    """
    epoch = _Epoch(
        bases,
        logs,
        tails,
        node_of,
        network,
        (memory_bandwidth, memory_latency),
        known or {},
    )
    epoch.run()
    # a transfer is forgotten once both its sender and its receiver waited for it
    keep = {
        key: (*value, epoch.waited.get(key, 0))
        for key, value in epoch.done.items()
        if epoch.waited.get(key, 0) != 3
    }
    if len(keep) > _KNOWN_LIMIT:
        keep = dict(list(keep.items())[-_KNOWN_LIMIT:])
    return epoch.finished, epoch.marks, keep


class ResolutionMixin:
    """``mark``/``marked`` and the resolution of an :class:`InstrumentedComm`."""

    def mark(self) -> int:
        """Remember this instant of this rank (local, free).

        Returns
        -------
        int
            A token for :meth:`marked`.

        Examples
        --------
        >>> start = comm.mark()  # doctest: +SKIP
        >>> ...; comm.Waitall(requests); end = comm.mark()  # doctest: +SKIP
        >>> comm.sync()  # resolves the marks  # doctest: +SKIP
        >>> comm.marked(end) - comm.marked(start)  # doctest: +SKIP
        """
        return self._clock.mark()

    def marked(self, token: int) -> float:
        """Time of a :meth:`mark` (virtual in emulated mode, else wall), seconds.

        With a shared network (``nic_sharing="flows"``, the default) the time of a
        mark that follows point-to-point waits is exact only once a collective on
        all ranks has replayed them; before that it is refused.

        Parameters
        ----------
        token : int
            From :meth:`mark`.

        Returns
        -------
        float

        Raises
        ------
        ValueError
            The mark is not resolved yet, or the token is unknown.
        """
        clock = self._clock
        if not 0 <= int(token) < len(clock.marks):
            raise ValueError(f"no mark {token!r}; this rank made {len(clock.marks)}")
        if int(token) in clock.unresolved:
            raise ValueError(
                f"mark {token} is not resolved yet: its time is known after the next "
                "collective on all ranks (e.g. comm.sync())"
            )
        return clock.marks[int(token)]

    def _resolve(self) -> None:
        """Replace the provisional clocks by the replay's (call inside a call)."""
        clock = self._clock
        if not clock.replaying or self.size != clock.world_size:
            return
        rows = np.asarray(clock.log, dtype=np.float64).reshape(-1, WIDTH)
        sends = float(np.count_nonzero(rows[:, 0] == SEND))
        head = np.concatenate((clock.base, clock.delta, [len(rows), sends]))
        heads = np.empty((self.size, head.size))
        self.mpi.Allgather(head, heads)
        if not heads[:, -1].any():  # no transfer: the provisional times are exact
            clock.unresolved.clear()
            clock.begin_epoch()
            return
        counts = heads[:, -2].astype(np.int64) * WIDTH
        table = np.empty(int(counts.sum())) if self.rank == 0 else None
        self.mpi.Gatherv(
            rows.ravel(), [table, counts] if self.rank == 0 else None, root=0
        )
        marked = int(np.count_nonzero(rows[:, 0] == MARK))
        incoming = np.empty(5 + 2 * marked)
        outgoing = None
        if self.rank == 0:
            outgoing = self._replay_epoch(heads, table, counts)
        # the others sleep while rank 0 replays: spinning would take its CPU (at
        # most 1 ms at a time: the scatter can be large enough to move in pieces)
        idle_wait(self.mpi.Iscatterv(outgoing, incoming, root=0), ceiling=1e-3)
        if not np.isfinite(incoming[0]):
            raise RuntimeError(
                "the replay of point-to-point traffic failed on rank 0: "
                f"{getattr(self, '_replay_error', 'see its error output')}"
            )
        final = incoming[:5]
        marks = dict(
            zip(
                incoming[5::2].astype(int).tolist(),
                incoming[6::2].tolist(),
                strict=True,
            )
        )
        clock.now = float(final[0])
        clock.path = np.array(final[1:], dtype=np.float64)
        clock.egress_free = min(clock.egress_free, clock.now)
        for index, value in marks.items():
            clock.marks[index] = value
        clock.unresolved.clear()
        clock.begin_epoch()

    def _replay_epoch(self, heads, table, counts):
        """Rank 0: replay the gathered logs; the ``[buffer, counts]`` to scatter."""
        clock = self._clock
        offsets = np.concatenate(([0], np.cumsum(counts)))
        # the logs name ranks by world rank: replay in world order
        world = np.argsort(self._world_ranks)
        logs = [table[offsets[r] : offsets[r + 1]] for r in world]
        marked = [
            int(np.count_nonzero(log.reshape(-1, WIDTH)[:, 0] == MARK))
            for log in (table[offsets[r] : offsets[r + 1]] for r in range(self.size))
        ]
        sizes = np.array([5 + 2 * k for k in marked])
        buffer = np.full(int(sizes.sum()), np.nan)
        try:
            finals, marks, clock.known = replay(
                heads[world, :5],
                logs,
                heads[world, 5:10],
                node_of=np.sort(self._world_ranks) // self.ppn,
                network=self.network,
                memory_bandwidth=self.link.memory_bandwidth,
                memory_latency=self.link.memory_latency,
                known=clock.known,
            )
        except Exception as error:  # every rank must leave the collective
            self._replay_error = f"{type(error).__name__}: {error}"
            return [buffer, sizes]
        starts = np.concatenate(([0], np.cumsum(sizes)))
        for position, rank in enumerate(world):
            pairs = sorted(marks[position].items())
            row = [*finals[position], *(v for pair in pairs for v in pair)]
            buffer[starts[rank] : starts[rank] + len(row)] = row
        return [buffer, sizes]
