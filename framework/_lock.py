"""One run per output at a time: an advisory lock file beside the results.

Two sweeps writing one output would measure every point twice, on the same cores at
the same time, and the last rename would silently win. The lock file
(``results/pingpong.lock`` for ``results/pingpong.zarr``) is held with ``flock`` for
as long as a run uses the store and says who holds it: host, process id, start time
and command. The kernel releases an ``flock`` when its holder dies, ``kill -9``
included, so a lock left by a dead run is taken over by the next one (with a note).
Where ``flock`` is not supported, a holder on this host is alive exactly when its
process exists; one on another host is assumed alive.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shlex
import socket
import sys
import time

from ._storefiles import StoreError, io_error

__all__ = ["OutputLock", "OutputLockedError", "describe_holder"]


class OutputLockedError(StoreError):
    """Another run holds the output's lock."""


def describe_holder(holder: dict | None) -> str:
    """Say who holds (or held) a lock, in a few words.

    Examples
    --------
    >>> describe_holder({"host": "n1", "pid": 42, "started": "2026-01-02 03:04:05",
    ...                  "command": "scaleprobe run a.yaml"})
    "pid 42 on n1, since 2026-01-02 03:04:05: 'scaleprobe run a.yaml'"
    >>> describe_holder(None)
    'an unknown process'
    """
    if not isinstance(holder, dict):
        return "an unknown process"
    text = f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}"
    if holder.get("started"):
        text += f", since {holder['started']}"
    if holder.get("command"):
        text += f": {holder['command']!r}"
    return text


def _read(fd: int) -> dict | None:
    try:
        text = os.pread(fd, 65536, 0).decode("utf-8", "replace")
        holder = json.loads(text) if text.strip() else None
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def _running_here(holder: dict | None) -> bool:
    """Whether the lock's holder is a live process (unknown hosts count as live)."""
    if not isinstance(holder, dict):
        return False
    if holder.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(holder.get("pid")), 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


class OutputLock:
    """The advisory lock of one output.

    Parameters
    ----------
    path : str
        The lock file.
    store : str
        The store it protects (named in messages).
    """

    def __init__(self, path: str, store: str):
        self.path = path
        self.store = store
        self._fd = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def holder(self) -> dict | None:
        """Return who holds the lock now, or None when nobody does.

        Returns
        -------
        dict or None
            ``host``, ``pid``, ``started``, ``command`` of the holder.
        """
        if self.held:
            return _read(self._fd)
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return _read(fd) or {}
            except OSError:
                holder = _read(fd)
                return holder if _running_here(holder) else None
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)

    def _open(self) -> int:
        folder = os.path.dirname(self.path) or "."
        try:
            os.makedirs(folder, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise io_error(exc, "lock file", self.path) from None

    def _refuse(self, holder) -> None:
        raise OutputLockedError(
            f"{self.store} is in use by another scaleprobe run "
            f"({describe_holder(holder)}); wait for it to finish or stop it, or give "
            "another output"
        )

    def acquire(self) -> str | None:
        """Take the lock, or refuse at once naming its holder.

        Returns
        -------
        str or None
            A note when the lock of a run that died was taken over.

        Raises
        ------
        OutputLockedError
            Another live run holds the lock.
        StoreError
            The lock file cannot be created (read-only, a file in the way, disk full).
        """
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read(fd)
                os.close(fd)
                self._refuse(holder)
            except OSError as exc:
                if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                    os.close(fd)
                    raise io_error(exc, "lock file", self.path) from None
                if _running_here(_read(fd)):  # no flock here: judge by the process
                    holder = _read(fd)
                    os.close(fd)
                    self._refuse(holder)
            # A holder that released the lock meanwhile removed the file we opened.
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        previous = _read(fd)
        holder = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": shlex.join(["scaleprobe", *sys.argv[1:]])
            if os.path.basename(sys.argv[0]) == "scaleprobe"
            else shlex.join([sys.executable, *sys.argv]),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(holder).encode(), 0)
            os.fsync(fd)
        except OSError as exc:
            os.close(fd)
            raise io_error(exc, "lock file", self.path) from None
        self._fd = fd
        if previous:
            return (
                f"took over the lock of {self.store} left by "
                f"{describe_holder(previous)}, which is no longer running"
            )
        return None

    def release(self) -> None:
        """Give the lock up and remove its file."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.remove(self.path)
        os.close(self._fd)
        self._fd = None

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()
