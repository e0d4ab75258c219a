"""Exact times for the point-to-point traffic of an epoch, at a collective on all ranks.

With a shared network the clocks that point-to-point calls return are provisional
(see :mod:`scaleprobe.kernels.comm._p2p`). Every collective on all the job's ranks
first *resolves* them: one real Allgather tells every rank whether anybody sent
anything since the last resolution; if so, rank 0 gathers every rank's replay log,
replays the epoch with contention (:func:`~scaleprobe.kernels.comm._replay.replay`)
and sends every rank its exact stamp and the exact times of its marks. None of this
costs virtual time, and the result does not depend on the order in which the ranks
ran in real time. Collectives on a sub-communicator (from ``Split``) do not resolve:
they wait on provisional clocks, and the replay keeps their waits as they were.
"""

from __future__ import annotations

import numpy as np

from ._idle import idle_wait
from ._replay import MARK, SEND, WIDTH, replay

__all__ = ["ResolutionMixin"]


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
