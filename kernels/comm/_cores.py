"""Sharing the host's cores: core slots, and waiting for MPI without spinning.

Core slots (:class:`CoreSlots`)
    At most N ranks of this host compute at the same time: a rank holds a token (an
    ``flock`` on one of N lock files) while it computes.

Waiting without spinning (:func:`idle_wait`, :func:`idle_barrier`)
    MPI implementations busy-poll while a blocking call waits. When the ranks of a
    host take turns on its cores, a rank that waits in a collective for ranks still
    queued for a core would spin on the core they need: with ``k`` ranks waiting and
    ``c`` cores, the computing ranks get ``c / (c + k)`` of the CPU and the queue
    behind them grows. The helpers here complete a request by testing it and
    sleeping between tests instead, so a waiting rank uses almost no CPU. The sleep
    backs off from 10 us to ``longest`` (0.2 ms), and beyond it to a twentieth of
    the time already waited (at most 50 ms): a long wait, the lot of most ranks on an
    oversubscribed host, wakes rarely (every wake-up costs the computing ranks a
    context switch and cache), and still ends at most about 5 % late.

    The communicator uses them where a rank waits for its peers to *arrive*: the
    barrier that starts every collective when slots are on, the start-up barrier,
    the scatter of the replay's results. Point-to-point waits stay in MPI's own
    blocking calls: a large message moves in pieces, each waiting for the next test
    of both ends, and two sleeping ends slowed a 1 MiB message to seconds (MPICH
    4.2's shared-memory pipeline).
"""

from __future__ import annotations

import fcntl
import os
import struct
import tempfile
import time

__all__ = ["CoreSlots", "default_slot_dir", "idle_barrier", "idle_wait", "next_pause"]


LONGEST = 2e-4
#: A sleep is at most this fraction of the time waited so far ...
RELATIVE = 0.05
#: ... and never longer than this, seconds.
CEILING = 0.05


def next_pause(
    pause: float, waited: float, longest: float = LONGEST, ceiling: float = CEILING
) -> float:
    """The sleep after ``pause``, when ``waited`` seconds have passed.

    Doubles ``pause`` up to ``longest``, or up to ``RELATIVE * waited`` (at most
    ``ceiling``) once that is longer.

    Examples
    --------
    >>> next_pause(1e-5, 0.0)
    2e-05
    >>> next_pause(2e-4, 0.002)  # 2 ms waited: stays at 0.2 ms
    0.0002
    >>> next_pause(1e-3, 0.1)   # 100 ms waited: up to 5 ms
    0.002
    >>> round(next_pause(0.04, 10.0), 6)  # long waits: at most 50 ms
    0.05
    """
    return min(2 * pause, max(longest, min(RELATIVE * waited, ceiling)))


def _mpi():
    from mpi4py import MPI

    return MPI


def idle_wait(
    request, status=None, longest: float = LONGEST, ceiling: float = CEILING
) -> None:
    """Complete an MPI request, sleeping between tests.

    Only for requests that need no progress from this rank once their peers are
    there (a barrier's empty messages): a large message is moved in pieces, each
    of which waits for the next test of both ends, so a sleeping end slows it down
    by up to ``ceiling`` per piece (MPICH 4.2's shared-memory pipeline took seconds
    for 1 MiB).

    Parameters
    ----------
    request : mpi4py.MPI.Request
        The request.
    status : mpi4py.MPI.Status, optional
        Filled when the request completes.
    longest : float, default=2e-4
        Longest sleep between two tests in the first ``longest / RELATIVE`` seconds
        (see :func:`next_pause`).
    ceiling : float, default=CEILING
        Longest sleep between two tests of a long wait.
    """
    delay, start = 1e-5, time.perf_counter()
    while not request.Test(status):
        time.sleep(delay)
        delay = next_pause(delay, time.perf_counter() - start, longest, ceiling)


def idle_barrier(mpi_comm) -> None:
    """A barrier on ``mpi_comm`` that sleeps while it waits.

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Comm
        The communicator.
    """
    idle_wait(mpi_comm.Ibarrier())


def default_slot_dir() -> str:
    """Directory of the slot lock files: ``/dev/shm`` if present, else the temp dir.

    Returns
    -------
    str
        ``<base>/scaleprobe-slots-<uid>``.
    """
    base = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(base, f"scaleprobe-slots-{os.getuid()}")


#: The longest sleep of the waiter at the head of the queue, seconds: a freed slot
#: stays unused at most this long.
HEAD_PAUSE = 1e-3
_RECORD = struct.Struct("<Qd")  # acquisitions of the slot, monotonic time of the last


class CoreSlots:
    """A token a rank holds while it computes: an ``flock`` on one of N lock files.

    Every process of the host that uses the same directory and count competes for
    the same N tokens, so oversubscribed ranks take turns on the cores instead of
    sharing them (and their caches and memory bandwidth) at the same time.

    Waiting is first come, first served and costs no CPU (hence no virtual time): a
    rank that finds no free slot queues on a gate lock (``gate``, a blocking
    ``flock``: it sleeps in the kernel), and only the rank holding the gate, the head
    of the queue, tests the slots, sleeping between tests (backing off as
    :func:`~scaleprobe.kernels.comm._cores.next_pause` says, to at most
    ``HEAD_PAUSE``). A rank that wants a slot while others queue joins the queue
    instead of taking a slot as it frees: without that, ranks of a busy job that
    leave short calls would take every freed slot, and a rank of another job on the
    host could wait for as long as that job runs.

    Parameters
    ----------
    count : int
        Number of slots (lock files ``slot-0 .. slot-<count-1>``); 0 disables.
    slot_dir : str, optional
        Where the lock files live; :func:`default_slot_dir` by default.
    first : int, default=0
        Slot to try first (spreading ranks over the slots avoids a stampede).
    max_wait : float, default=60.0
        Wall seconds without any slot changing hands after which a waiting rank
        gives up and computes without a slot (counted in ``timeouts``), so a rank
        that blocks outside the communicator while holding a slot slows other ranks
        down instead of hanging them. A long queue that moves never times out: every
        acquisition writes its time into its slot's file, which the head of the
        queue reads.
    clock : callable, default=time.monotonic
        Seconds of a monotonic clock shared by every process of the host: the time
        an acquisition writes into its slot's file and the waiting is measured by
        (tests inject a fake one).
    sleep : callable, default=time.sleep
        How the head of the queue pauses between tests of the slots.

    Attributes
    ----------
    held : int or None
        Index of the slot held, or None.
    wait_time : float
        Wall seconds spent waiting for slots so far.
    timeouts : int
        How often ``max_wait`` ran out.
    """

    def __init__(
        self,
        count: int,
        slot_dir: str | None = None,
        first: int = 0,
        max_wait: float = 60.0,
        *,
        clock=time.monotonic,
        sleep=time.sleep,
    ):
        if count < 0:
            raise ValueError(f"core_slots must be >= 0 (0 = off), got {count}")
        self.count = int(count)
        self.slot_dir = slot_dir or default_slot_dir()
        self.first = first
        self.held = None
        self.wait_time = 0.0
        self.max_wait = max_wait
        self.timeouts = 0
        self._clock = clock
        self._sleep = sleep
        self._files = []
        self._gate = None
        if self.count:
            os.makedirs(self.slot_dir, exist_ok=True)
            for index in range(self.count):
                path = os.path.join(self.slot_dir, f"slot-{index}")
                self._files.append(os.open(path, os.O_RDWR | os.O_CREAT, 0o666))
            gate = os.path.join(self.slot_dir, "gate")
            self._gate = os.open(gate, os.O_RDWR | os.O_CREAT, 0o666)

    def _try(self) -> bool:
        for offset in range(self.count):
            index = (self.first + offset) % self.count
            try:
                fcntl.flock(self._files[index], fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            self.held = index
            fd = self._files[index]
            count, _ = self._record(fd)
            record = _RECORD.pack((count + 1) % 2**64, self._clock())
            os.pwrite(fd, record, 0)
            return True
        return False

    @staticmethod
    def _record(fd) -> tuple[int, float]:
        raw = os.pread(fd, _RECORD.size, 0)
        if len(raw) < _RECORD.size:  # a new file, or one of an older layout
            raw = raw[:8].ljust(8, b"\0") + bytes(8)
        return _RECORD.unpack(raw)

    def _handovers(self) -> tuple[int, ...]:
        """The acquisition counters of every slot (changes when a slot moves)."""
        return tuple(self._record(fd)[0] for fd in self._files)

    def _last_handover(self, now: float) -> float:
        """Monotonic time a slot last changed hands (times after ``now`` ignored)."""
        times = [self._record(fd)[1] for fd in self._files]
        return max((t for t in times if t <= now), default=0.0)

    def acquire(self) -> None:
        """Block until this process holds a slot (no-op when disabled or held).

        Queues behind the ranks already waiting (see the class description), and
        gives up, counting a timeout, once no slot has changed hands for
        ``max_wait`` seconds since this call began.
        """
        if not self.count or self.held is not None:
            return
        start = self._clock()
        # the gate is free unless someone waits: then this blocks, asleep, in line
        fcntl.flock(self._gate, fcntl.LOCK_EX)
        try:
            pause = 1e-5
            while not self._try():
                now = self._clock()
                if now - max(start, self._last_handover(now)) > self.max_wait:
                    self.timeouts += 1
                    break
                self._sleep(pause)
                pause = min(next_pause(pause, now - start), HEAD_PAUSE)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)
        self.wait_time += self._clock() - start

    def release(self) -> None:
        """Give the slot back (no-op when none is held)."""
        if self.held is not None:
            fcntl.flock(self._files[self.held], fcntl.LOCK_UN)
            self.held = None

    def close(self) -> None:
        """Release the slot and close the lock files."""
        self.release()
        for fd in self._files:
            os.close(fd)
        if self._gate is not None:
            os.close(self._gate)
            self._gate = None
        self._files = []
        self.count = 0
