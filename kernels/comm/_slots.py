"""Host-wide core slots: at most N ranks of this host compute at the same time."""

from __future__ import annotations

import fcntl
import os
import struct
import tempfile
import time

from ._idle import next_pause

__all__ = ["CoreSlots", "default_slot_dir"]


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
    :func:`~scaleprobe.kernels.comm._idle.next_pause` says, to at most
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
