"""Hardware parameters of a compute region: FiM's clock F, utilisation U, total cycles
TC and stall cycles SC.

FiM-Cal (Bhimani et al. 2019, Section 2.1.1) reads four numbers with ``perf stat``: the
clock rate ``F``, the utilisation per process ``U``, the total cycles ``TC`` and the
stall cycles ``SC``. :class:`HardwareCounters` counts a region of this process with the
kernel's ``perf_event_open`` (cycles, front- and back-end stalls, task clock) where the
machine exposes them, and always measures CPU and wall time; :func:`parse_perf_stat`
reads what ``perf stat`` printed (``-x,`` or the human layout) into the same event
names; :func:`hardware_parameters` turns either into ``F, U, TC, SC``.

What comes from where
    ``U`` is CPU time over wall time of the region (``task-clock`` when counted).
    With a cycle counter, ``TC`` is the counted cycles and ``F = TC / CPU seconds``
    (the clock the process actually ran at). Without one (a virtual machine without
    a PMU: ``perf_event_open`` of cycles fails with ``ENOENT``), ``F`` is the nominal
    clock of the host (``cpufreq`` or ``/proc/cpuinfo``) and ``TC = CPU seconds x
    F``; both are *estimated* and listed so in ``estimated``. ``SC`` is the larger of
    the front- and back-end stall counts (a lower bound of the cycles in which either
    end stalled); it cannot be estimated and is NaN without counters.

This module imports only the standard library.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import math
import os
import platform
import re
import struct
import time

__all__ = [
    "COUNTED_EVENTS",
    "HardwareCounters",
    "data_caches",
    "hardware_parameters",
    "last_level_cache",
    "nominal_frequency",
    "parse_perf_stat",
]

#: Events counted where the kernel offers them: name -> (perf type, config).
COUNTED_EVENTS = {
    "cycles": (0, 0),  # PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES
    "stalled-cycles-frontend": (0, 7),
    "stalled-cycles-backend": (0, 8),
    "task-clock": (1, 1),  # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK (ns)
}

_SYSCALL = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331, "riscv64": 241}
_IOC_ENABLE, _IOC_DISABLE, _IOC_RESET = 0x2400, 0x2401, 0x2403
_DISABLED, _EXCLUDE_KERNEL, _EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6


class _Attr(ctypes.Structure):
    """``struct perf_event_attr``, first version (64 bytes)."""

    _fields_ = [
        ("type", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("config", ctypes.c_uint64),
        ("sample_period", ctypes.c_uint64),
        ("sample_type", ctypes.c_uint64),
        ("read_format", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
        ("wakeup_events", ctypes.c_uint32),
        ("bp_type", ctypes.c_uint32),
        ("config1", ctypes.c_uint64),
    ]


def _open_event(kind: int, config: int) -> int:
    """File descriptor of one counter of this process, or -errno."""
    number = _SYSCALL.get(platform.machine())
    if number is None:
        return -errno.ENOSYS
    libc = ctypes.CDLL(None, use_errno=True)
    for flags in (_DISABLED | _EXCLUDE_HV, _DISABLED | _EXCLUDE_HV | _EXCLUDE_KERNEL):
        attr = _Attr(type=kind, size=ctypes.sizeof(_Attr), config=config, flags=flags)
        fd = libc.syscall(number, ctypes.byref(attr), 0, -1, -1, 0)
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code not in (errno.EACCES, errno.EPERM):
            return -code
    return -code


class HardwareCounters:
    """Count one process's compute regions: counters where available, CPU and wall.

    Regions are added up: call :meth:`start` and :meth:`stop` around each one.

    Parameters
    ----------
    counters : bool, default=True
        Try ``perf_event_open``; False measures CPU and wall time only.

    Attributes
    ----------
    unavailable : dict
        Events that could not be opened, with the reason (e.g. ``"ENOENT"``).

    Examples
    --------
    >>> region = HardwareCounters(counters=False)
    >>> region.start(); _ = sum(range(10000)); region.stop()
    >>> sorted(region.events())
    ['cpu_time', 'wall_time']
    """

    def __init__(self, *, counters: bool = True):
        self._fds = {}
        self.unavailable = {}
        if counters:
            for name, (kind, config) in COUNTED_EVENTS.items():
                fd = _open_event(kind, config)
                if fd >= 0:
                    self._fds[name] = fd
                else:
                    self.unavailable[name] = errno.errorcode.get(-fd, str(-fd))
        for fd in self._fds.values():
            fcntl.ioctl(fd, _IOC_RESET, 0)
        self._cpu = self._wall = 0.0
        self._marks = None

    def start(self) -> None:
        """Begin a region."""
        for fd in self._fds.values():
            fcntl.ioctl(fd, _IOC_ENABLE, 0)
        self._marks = (time.process_time(), time.perf_counter())

    def stop(self) -> None:
        """End the region begun by :meth:`start`."""
        if self._marks is None:
            raise RuntimeError("HardwareCounters.stop() without start()")
        cpu, wall = self._marks
        self._cpu += time.process_time() - cpu
        self._wall += time.perf_counter() - wall
        for fd in self._fds.values():
            fcntl.ioctl(fd, _IOC_DISABLE, 0)
        self._marks = None

    def events(self) -> dict:
        """Totals over the regions so far.

        Returns
        -------
        dict
            ``cpu_time`` and ``wall_time`` (s) and every counted event (``cycles``,
            ``stalled-cycles-*`` as counts, ``task-clock`` in seconds).
        """
        found = {"cpu_time": self._cpu, "wall_time": self._wall}
        for name, fd in self._fds.items():
            (value,) = struct.unpack("Q", os.read(fd, 8))
            found[name] = value * 1e-9 if name == "task-clock" else float(value)
        return found

    def close(self) -> None:
        """Close the counters."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds = {}


_NUMBER = r"[-+]?[0-9][0-9,]*\.?[0-9]*(?:[eE][-+]?[0-9]+)?"
_HUMAN = re.compile(
    rf"^\s*(?P<value>{_NUMBER}|<not supported>|<not counted>)\s+"
    r"(?:(?P<unit>msec|usec|nsec|sec)\s+)?(?P<event>[A-Za-z][\w\-:/=,.]*)"
)
_SECONDS = re.compile(
    rf"^\s*(?P<value>{_NUMBER})\s+seconds\s+(?P<what>time elapsed|user|sys)"
)
_EVENT = re.compile(r"[A-Za-z][\w\-:/=.]*")
_PER_SECOND = {
    "msec": 1e3,
    "usec": 1e6,
    "nsec": 1e9,
    "sec": 1.0,
    "ns": 1e9,
    "ms": 1e3,
}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def parse_perf_stat(text: str) -> dict:
    """Read the counts ``perf stat`` printed.

    Both layouts are read: ``perf stat -x,`` (value, unit, event, ...) and the human
    table. Events ``perf`` marked ``<not supported>`` or ``<not counted>`` are left
    out. Times (``task-clock``) are converted to seconds; ``seconds time elapsed``,
    ``seconds user`` and ``seconds sys`` become ``wall_time``, ``user_time`` and
    ``sys_time``.

    Parameters
    ----------
    text : str
        What ``perf stat`` wrote (its standard error, or the ``-o`` file).

    Returns
    -------
    dict
        Event name to value.

    Examples
    --------
    >>> parse_perf_stat("1200.5,msec,task-clock,1200500000,100.00,0.98,CPUs utilized\\n"
    ...                 "3001250000,,cycles,1200500000,100.00,2.5,GHz\\n"
    ...                 "<not supported>,,stalled-cycles-frontend,0,100.00,,\\n")
    {'task-clock': 1.2005, 'cycles': 3001250000.0}
    """
    found = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) >= 3 and _EVENT.fullmatch(fields[2]):
            value, unit, event = fields[:3]
            if not value.startswith("<"):
                found[event] = float(value) / _PER_SECOND.get(unit, 1.0)
            continue
        seconds = _SECONDS.match(line)
        if seconds:
            key = {"time elapsed": "wall_time", "user": "user_time", "sys": "sys_time"}
            found[key[seconds["what"]]] = _number(seconds["value"])
            continue
        match = _HUMAN.match(line)
        if match and not match["value"].startswith("<"):
            scale = _PER_SECOND.get(match["unit"] or "", 1.0)
            found[match["event"]] = _number(match["value"]) / scale
    return found


def nominal_frequency() -> float:
    """The host's clock rate in Hz from ``cpufreq`` or ``/proc/cpuinfo`` (NaN if
    neither says).

    Returns
    -------
    float
    """
    for path in (
        "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq",
        "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq",
    ):
        try:
            with open(path) as handle:
                return float(handle.read().strip()) * 1e3  # kHz
        except (OSError, ValueError):
            continue
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.lower().startswith("cpu mhz"):
                    return float(line.split(":")[1]) * 1e6
    except (OSError, ValueError, IndexError):
        pass
    return math.nan


_SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def data_caches(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict:
    """Bytes of one CPU's data (or unified) caches by level, from ``sysfs``.

    Parameters
    ----------
    root : str, default="/sys/devices/system/cpu/cpu0/cache"
        The ``index*`` directories of one CPU's caches.

    Returns
    -------
    dict
        ``{level: bytes}`` of one instance of each level, shared or not; empty when
        ``sysfs`` says nothing. Instruction caches are left out.
    """
    found = {}
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return found
    for name in names:
        if not name.startswith("index"):
            continue
        try:
            with open(os.path.join(root, name, "level")) as handle:
                level = int(handle.read())
            with open(os.path.join(root, name, "type")) as handle:
                kind = handle.read().strip()
            with open(os.path.join(root, name, "size")) as handle:
                size = handle.read().strip().upper()
        except (OSError, ValueError):
            continue
        match = re.fullmatch(r"(\d+)\s*([KMG]?)B?", size)
        if kind in ("Data", "Unified") and match:
            found[level] = int(match.group(1)) * _SIZE_UNITS[match.group(2)]
    return found


def last_level_cache(root: str = "/sys/devices/system/cpu/cpu0/cache") -> float:
    """Bytes of the host's last-level data cache, from ``sysfs`` (NaN if unknown).

    Parameters
    ----------
    root : str, default="/sys/devices/system/cpu/cpu0/cache"
        The ``index*`` directories of one CPU's caches.

    Returns
    -------
    float
        Size of the highest-level data or unified cache (one instance of it,
        shared or not).
    """
    found = data_caches(root)
    return float(found[max(found)]) if found else math.nan


def hardware_parameters(events: dict, *, frequency: float | None = None) -> dict:
    """FiM's ``F``, ``U``, ``TC`` and ``SC`` of a region from what was counted.

    Parameters
    ----------
    events : dict
        From :meth:`HardwareCounters.events` or :func:`parse_perf_stat`: ``cycles``,
        ``stalled-cycles-frontend``, ``stalled-cycles-backend``, ``task-clock`` (s),
        ``cpu_time`` (s; or ``user_time + sys_time``), ``wall_time`` (s).
    frequency : float, optional
        Clock rate to assume without a cycle counter; :func:`nominal_frequency` by
        default.

    Returns
    -------
    dict
        ``frequency`` (Hz), ``utilisation``, ``total_cycles``, ``stall_cycles`` (NaN
        when not counted), ``cpu_time``, ``wall_time``, ``counted`` (True when the
        cycles were counted) and ``estimated`` (names of the quantities derived
        rather than counted).

    Examples
    --------
    >>> p = hardware_parameters({"cpu_time": 2.0, "wall_time": 4.0}, frequency=1e9)
    >>> p["utilisation"], p["total_cycles"], p["estimated"]
    (0.5, 2000000000.0, ['frequency', 'total_cycles'])
    """
    cpu = events.get("task-clock")
    if cpu is None:
        cpu = events.get("cpu_time")
    if cpu is None and "user_time" in events:
        cpu = events["user_time"] + events.get("sys_time", 0.0)
    cpu = math.nan if cpu is None else float(cpu)
    wall = float(events.get("wall_time", math.nan))
    utilisation = min(cpu / wall, 1.0) if wall > 0 else math.nan
    estimated = []
    cycles = events.get("cycles")
    if cycles is not None and cycles > 0:
        total = float(cycles)
        clock = total / cpu if cpu > 0 else math.nan
    else:
        clock = nominal_frequency() if frequency is None else float(frequency)
        total = cpu * clock
        estimated = ["frequency", "total_cycles"]
    stalls = [
        events[k]
        for k in ("stalled-cycles-frontend", "stalled-cycles-backend")
        if k in events
    ]
    return {
        "frequency": clock,
        "utilisation": utilisation,
        "total_cycles": total,
        "stall_cycles": float(max(stalls)) if stalls else math.nan,
        "cpu_time": cpu,
        "wall_time": wall,
        "counted": not estimated,
        "estimated": estimated,
    }
