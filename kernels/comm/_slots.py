"""Host-wide core slots: at most N ranks of this host compute at the same time."""

from __future__ import annotations

import fcntl
import os
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


class CoreSlots:
    """A token a rank holds while it computes: an ``flock`` on one of N lock files.

    Every process of the host that uses the same directory and count competes for
    the same N tokens, so oversubscribed ranks take turns on the cores instead of
    sharing them (and their caches and memory bandwidth) at the same time. Waiting
    sleeps (backing off as :func:`~scaleprobe.kernels.comm._idle.next_pause` says),
    so it costs no CPU time and hence no virtual time.

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
        acquisition counts up a number in its slot's file, which waiters watch.

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
        self._files = []
        if self.count:
            os.makedirs(self.slot_dir, exist_ok=True)
            for index in range(self.count):
                path = os.path.join(self.slot_dir, f"slot-{index}")
                self._files.append(os.open(path, os.O_RDWR | os.O_CREAT, 0o666))

    def _try(self) -> bool:
        for offset in range(self.count):
            index = (self.first + offset) % self.count
            try:
                fcntl.flock(self._files[index], fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            self.held = index
            fd = self._files[index]
            count = int.from_bytes(os.pread(fd, 8, 0).ljust(8, b"\0"), "little")
            os.pwrite(fd, ((count + 1) % 2**64).to_bytes(8, "little"), 0)
            return True
        return False

    def _handovers(self) -> bytes:
        """The acquisition counters of every slot (changes when a slot moves)."""
        return b"".join(os.pread(fd, 8, 0) for fd in self._files)

    def acquire(self) -> None:
        """Block until this process holds a slot (no-op when disabled or held)."""
        if not self.count or self.held is not None:
            return
        if self._try():
            return
        start = moved = time.perf_counter()
        seen = self._handovers()
        pause = 5e-5
        while not self._try():
            now = time.perf_counter()
            handovers = self._handovers()
            if handovers != seen:
                seen, moved = handovers, now
            elif now - moved > self.max_wait:
                self.timeouts += 1
                break
            time.sleep(pause)
            pause = next_pause(pause, now - start)
        self.wait_time += time.perf_counter() - start

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
        self._files = []
        self.count = 0
