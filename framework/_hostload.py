"""How busy other work kept the launch's host while a point ran.

Kernels measure their computation as CPU time, which a busy host inflates even when
no rank waits for a core: caches and memory bandwidth are shared (K-means at 16384
points on 2 ranks measured 31 ms beside a test suite, 20.5 ms alone). A
:class:`LoadMeter` reads the host's busy CPU seconds (``/proc/stat``) and the CPU
seconds of the sweep's own processes before and after a launch; the difference per
wall second is ``host_load``: the cores other work kept busy, on average. The
sweep's processes are the tree of :func:`sweep_root`, the furthest ancestor that
runs the same Python in the same session: the command that started the sweep, its
client, scheduler and workers, and through the worker that waits for it, the
launch. Everything else is other work, programs started from the same terminal or
job script included. On a saturated host other work gets only what the launch
leaves: one process spinning beside a 2-rank launch on 2 cores shows as 0.6 to 0.9.
"""

from __future__ import annotations

import os
import time

__all__ = [
    "HOST_LOAD_LIMIT",
    "MIN_SECONDS",
    "LoadMeter",
    "host_busy_seconds",
    "own_cpu_seconds",
    "sweep_root",
]

#: Cores kept busy by other work, on average over a launch, from which its CPU-time
#: measurements are flagged.
HOST_LOAD_LIMIT = 0.25

#: Shortest launch, seconds, whose load is told: busy times count in ticks of 10 ms
#: per core and per process, a few of which are a quarter of a core over 0.15 s.
MIN_SECONDS = 1.0

#: Fields of the ``cpu`` line of ``/proc/stat`` that are busy time (user, nice,
#: system, irq, softirq, steal); idle and iowait are not.
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def host_busy_seconds(path="/proc/stat"):
    """CPU seconds all cores of this host have spent busy since boot.

    Parameters
    ----------
    path : str, default="/proc/stat"

    Returns
    -------
    float or None
        None where the file cannot be read (not Linux).

    Examples
    --------
    >>> host_busy_seconds("/nonexistent") is None
    True
    """
    try:
        with open(path) as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:]]
    busy = sum(ticks[i] for i in _BUSY_FIELDS if i < len(ticks))
    return busy / os.sysconf("SC_CLK_TCK")


def sweep_root(pid=None):
    """The process whose tree holds the sweep that ``pid`` belongs to.

    Walks up from ``pid`` while the parent runs the same Python, in the same
    session, and does not lead it: a worker's parent is its nanny or the client
    that started the cluster, whose parent, the shell or script that ran the sweep,
    runs other programs beside it. Under ``dask-mpi`` the root is the worker (its
    parent is MPI's process manager).

    Parameters
    ----------
    pid : int, default=None
        This process by default.

    Returns
    -------
    psutil.Process

    Examples
    --------
    >>> import os
    >>> root = sweep_root()
    >>> os.getsid(root.pid) == os.getsid(0)
    True
    """
    import psutil

    process = psutil.Process(pid)
    session, program = os.getsid(process.pid), process.exe()
    while True:
        try:
            parent = process.parent()
            if parent is None or parent.pid == session:
                return process
            if os.getsid(parent.pid) != session or parent.exe() != program:
                return process
        except (psutil.Error, OSError):  # gone, or not ours to read
            return process
        process = parent


def own_cpu_seconds(root=None):
    """CPU seconds of the sweep's processes, finished children included.

    The sweep's processes are ``root`` and its descendants: the client, the
    scheduler and the workers of an embedded cluster and the process that waits
    for the launch, whose finished launches count through its waited-for children
    (the launch runs in a session of its own, still a descendant). A process
    counts its own time and its waited-for children's; each process is counted
    once, alive or through the parent that waited for it.

    Parameters
    ----------
    root : psutil.Process, default=None
        :func:`sweep_root` of this process by default.

    Returns
    -------
    float or None
        None where the tree cannot be read.
    """
    import psutil

    try:
        root = sweep_root() if root is None else root
        processes = [root, *root.children(recursive=True)]
    except (psutil.Error, OSError):  # the root is gone: cannot tell
        return None
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except (psutil.Error, OSError):  # gone, or not ours to read
            continue
        total += times.user + times.system + times.children_user
        total += times.children_system
    return total


class LoadMeter:
    """Cores kept busy by other work on this host during one launch.

    Parameters
    ----------
    busy : callable, default=host_busy_seconds
        Host-wide busy CPU seconds (None when unknown).
    own : callable, default=own_cpu_seconds
        CPU seconds of the sweep's own processes, the launch included.
    clock : callable, default=time.monotonic
        Wall clock, seconds.

    Examples
    --------
    >>> readings = iter([(10.0, 1.0, 0.0), (16.0, 4.0, 2.0)])  # busy, own, wall
    >>> now = next(readings)
    >>> meter = LoadMeter(busy=lambda: now[0], own=lambda: now[1],
    ...                   clock=lambda: now[2])
    >>> meter.start()
    >>> now = next(readings)
    >>> meter.stop()  # 6 busy seconds, 3 of them the launch's, over 2 s
    1.5
    """

    def __init__(self, busy=host_busy_seconds, own=own_cpu_seconds, clock=None):
        self.busy = busy
        self.own = own
        self.clock = time.monotonic if clock is None else clock
        self._start = None

    def start(self):
        """Take the readings before the launch."""
        self._start = (self.busy(), self.own(), self.clock())

    def stop(self):
        """Cores other work kept busy since :meth:`start`, on average.

        Returns
        -------
        float or None
            None where the host's busy time or the sweep's is unknown, nothing
            was started, or less than :data:`MIN_SECONDS` passed (too short to
            tell).
        """
        if self._start is None:
            return None
        busy0, own0, wall0 = self._start
        busy1, own1, wall1 = self.busy(), self.own(), self.clock()
        if None in (busy0, busy1, own0, own1) or wall1 - wall0 < MIN_SECONDS:
            return None
        foreign = (busy1 - busy0) - (own1 - own0)
        return max(foreign, 0.0) / (wall1 - wall0)
