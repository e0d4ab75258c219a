"""Replay of one epoch of point-to-point traffic on the shared (fluid) network.

Between two collectives on all ranks, each rank logs what it did in rows of
:data:`WIDTH` float64 (see :data:`SEND` ... :data:`MARK`): its sends, the transfers
each of its waits waited for, its marks, and before each row the time that passed
without point-to-point waiting (computation, other collectives) as a stamp delta
``[time, comp, latency, bandwidth, intra]``. :func:`replay` runs every rank's log as
a discrete-event simulation in virtual time: sends start flows, flows share links
max-min fairly (:mod:`scaleprobe.kernels.comm._fluid`) on the routes of
:class:`~scaleprobe.kernels.comm._network.Network`, a flow's bytes arrive one
latency after they have left, and a wait ends at the latest completion it waited for
(with that completion's critical path). Intra-node messages take the memory model and
share nothing. The result is deterministic: it depends on the logs only, never on the
order in which the ranks ran in real time. This module imports only numpy.
"""

from __future__ import annotations

import heapq

import numpy as np

from ._fluid import FlowSet

__all__ = ["MARK", "SEND", "WAIT", "WAIT_RECV", "WAIT_SEND", "WIDTH", "replay"]

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
