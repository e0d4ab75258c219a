"""The result store: durable per-point files plus one consolidated Dataset.

For an output ``results/pingpong.zarr`` the store keeps

- ``results/pingpong.points/`` — one JSON file per finished point, named by the point's
  key and written atomically (temporary file, then rename). These files are the
  source of truth: a point is done exactly when its file exists, so a sweep killed at
  any moment (even with ``kill -9``) and started again neither loses nor repeats a
  point. ``campaign.json`` there holds the campaign's identity, axes and provenance
  (:mod:`scaleprobe.framework.campaign`). Every point file is checked when read, its
  kernel record validated again (:class:`~scaleprobe.kernels.schema.Record`); a
  damaged one is moved to ``damaged/`` there (never deleted) and its point is
  measured again by the next run.
- ``results/pingpong.logs/`` — the standard error and output of every launch.
- ``results/pingpong.zarr`` (or ``.nc``) — the consolidated Dataset, rebuilt from the
  point files every few points and at the end, swapped in by rename.
- ``results/pingpong.lock`` — while a run uses the store: who.

Per-point files were chosen over writing regions of one Zarr array because a region
write interrupted half-way leaves a chunk that cannot be told apart from a finished
one, while a rename is atomic.

Every file here keeps one promise: a file that is there is complete and belongs to
the campaign, and a failure to write says what happened in one line without
damaging what was already stored.

One run per output at a time
    Two sweeps writing one output would measure every point twice, on the same cores
    at the same time, and the last rename would silently win. The lock file is held
    with ``flock`` for as long as a run uses the store and says who holds it: host,
    process id, start time and command. The kernel releases an ``flock`` when its
    holder dies, ``kill -9`` included, so a lock left by a dead run is taken over by
    the next one (with a note). Where ``flock`` is not supported, a holder on this
    host is alive exactly when its process exists; one on another host is assumed
    alive.

xarray is imported when a Dataset is built or read, not before: checking, locking
and planning a store (``scaleprobe plan``) stays light.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import sys
import tempfile
import time
import warnings
from typing import TYPE_CHECKING

from scaleprobe.kernels.schema import Record

from ._warnings import DamagedPointWarning
from .campaign import identity_changes
from .planning import point_key

if TYPE_CHECKING:
    import xarray as xr

__all__ = [
    "STATUSES",
    "OutputLock",
    "OutputLockedError",
    "ResultStore",
    "StoreError",
    "StoreIOError",
    "archive_name",
    "atomic_write",
    "check_output",
    "describe_holder",
    "io_error",
    "open_consolidated",
    "open_results",
    "point_problem",
    "upgrade_legacy_record",
]

#: Statuses a stored point may have.
STATUSES = ("ok", "failed", "timeout", "invalid")


_FULL = (errno.ENOSPC, errno.EDQUOT)


class StoreError(RuntimeError):
    """The store cannot be used as asked; the message is one line saying why.

    A different campaign at the output, a run already using it, or an output that
    cannot be created: a user's mistake (exit code 2 on the command line).
    """


class StoreIOError(StoreError):
    """Writing the store failed (a full disk, an I/O error); what was stored is intact.

    A failure rather than a mistake (exit code 1 on the command line).
    """


class OutputLockedError(StoreError):
    """Another run holds the output's lock."""


# ------------------------------------------------------------------- writing


def io_error(exc: OSError, what: str, path) -> StoreError:
    """Turn an :class:`OSError` of a store write into a one-line store error.

    Parameters
    ----------
    exc : OSError
        What the write raised.
    what : str
        What was being written, e.g. ``"point file"``.
    path : str or path-like
        Where.

    Returns
    -------
    StoreError
        :class:`StoreIOError` for a full disk or quota and an unexpected I/O error,
        :class:`StoreError` for a path that cannot hold a store (read-only, a regular
        file on the way, no such directory).

    Examples
    --------
    >>> import errno
    >>> error = io_error(OSError(errno.ENOSPC, "No space left on device"), "point file",
    ...                  "/data/r.points/a.json")
    >>> type(error).__name__, str(error).split(";")[0]
    ('StoreIOError', 'no space left on the device of /data/r.points/a.json (writing the point file)')
    """  # noqa: E501
    path = os.fspath(path)
    if exc.errno in _FULL:
        return StoreIOError(
            f"no space left on the device of {path} (writing the {what}); every point "
            "stored before is intact: free some space and run the same command to "
            "resume"
        )
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return StoreError(f"cannot write the {what} {path}: {reason}")
    if exc.errno in (errno.ENOTDIR, errno.EEXIST):
        return StoreError(
            f"cannot create the {what} {path}: a regular file is in the way "
            "(a folder on that path is a file)"
        )
    if exc.errno == errno.ENOENT:
        return StoreError(
            f"cannot create the {what} {path}: its folder cannot be created there "
            f"({reason})"
        )
    return StoreIOError(f"cannot write the {what} {path}: {reason}")


def check_output(path: str, *, probe: bool = False) -> None:
    """Refuse an output that no run could create.

    The nearest existing folder on the way must be a folder, and writable. With
    ``probe``, a folder is created there and removed at once, which also catches
    file systems that refuse new entries whatever the permissions say (``/proc``).

    Raises
    ------
    StoreError
        A regular file is in the way, or the folder is read-only.

    Examples
    --------
    >>> check_output("/etc/passwd/results.zarr")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    scaleprobe.framework.store.StoreError: cannot create ... /etc/passwd is a regular file, not a folder
    """  # noqa: E501
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        raise StoreError(
            f"cannot create the results {path}: {folder} is a regular file, not a "
            "folder"
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(
            f"cannot create the results {path}: {folder} is not writable (read-only "
            "file system or no permission)"
        )
    if probe:
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".scaleprobe-probe-", dir=folder))
        except OSError as exc:
            raise StoreError(
                f"cannot create the results {path}: {folder} takes no new folder "
                f"({exc.strerror or exc})"
            ) from None


def atomic_write(path: str, text: str, what: str = "file") -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename.

    A reader sees the old file or the complete new one, never a part; a failed
    write (a full disk) leaves neither a partial file nor the temporary one.

    Raises
    ------
    StoreError
        One line naming the file (see :func:`io_error`).
    """
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise io_error(exc, what, path) from None


def move_aside(path: str, folder: str) -> str:
    """Move a damaged file into ``folder`` (never deleted); return where it went."""
    os.makedirs(folder, exist_ok=True)
    name = os.path.basename(path)
    target, n = os.path.join(folder, name), 1
    while os.path.exists(target):
        target = os.path.join(folder, f"{name}.{n}")
        n += 1
    os.replace(path, target)
    return target


def _other_live_process(pid_text: str) -> bool:
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return pid != os.getpid()


def remove_leftovers(folder: str, prefix: str) -> list[str]:
    """Remove ``prefix.tmp-PID`` and ``prefix.old-PID`` entries of dead processes.

    A write killed half-way (``kill -9``, a full disk) leaves its temporary file or
    directory behind; the next run on the store, holding its lock, cleans them.

    Parameters
    ----------
    folder : str
        Where to look.
    prefix : str
        The name the entries start with; ``""`` for every entry of ``folder``.

    Returns
    -------
    list of str
        The removed paths.
    """
    removed = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(prefix):
            continue
        _, dot, pid = name.rpartition(".")
        if not dot or not pid.startswith(("tmp-", "old-")):
            continue
        if _other_live_process(pid[4:]):
            continue
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.remove(path)
        removed.append(path)
    return removed


def remove_path(path: str) -> None:
    """Remove a file or a directory tree, if it is there."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.remove(path)


# -------------------------------------------------------------- reading back


def point_problem(path: str, key: str, dims) -> tuple[dict | None, str | None]:
    """Read a point file and say what is wrong with it, if anything.

    Parameters
    ----------
    path : str
        The point file.
    key : str
        The key its name gives.
    dims : iterable of str
        The campaign's sweep keys; the point's coordinates must have exactly these.

    Returns
    -------
    (dict or None, str or None)
        The result and None, or None and the problem in a few words. The result's
        ``record`` is validated again (:meth:`Record.from_dict
        <scaleprobe.kernels.schema.Record.from_dict>`) and given back as
        :meth:`~scaleprobe.kernels.schema.Record.to_dict`; a record that is not one
        is a damaged point.
    """
    try:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
    except UnicodeDecodeError:
        return None, "not text"
    except ValueError as exc:
        return None, f"not valid JSON, truncated or damaged ({exc})"
    if not isinstance(result, dict):
        return None, "not a JSON object"
    coords = result.get("coords")
    if result.get("key") != key or not isinstance(coords, dict):
        return None, f"does not hold point {key}"
    if set(coords) != set(dims):
        return None, (
            f"its coordinates ({', '.join(sorted(coords))}) are not the campaign's "
            f"sweep keys ({', '.join(sorted(dims))})"
        )
    try:
        expected = point_key(coords)
    except TypeError:
        expected = None
    if expected != key:
        return None, "its coordinates do not give its key"
    if result.get("status") not in STATUSES:
        return None, f"unknown status {result.get('status')!r}"
    if result.get("record") is not None:
        try:
            record = Record.from_dict(upgrade_legacy_record(result["record"]))
        except ValueError as exc:  # RecordError, or a malformed link or placement
            return None, f"its record is not a kernel record ({exc})"
        result["record"] = record.to_dict()
    return result, None


def read_campaign(path: str) -> dict:
    """Read a store's ``campaign.json``.

    Raises
    ------
    StoreIOError
        It cannot be read, or is not a campaign description.
    """
    try:
        with open(path, encoding="utf-8") as f:
            campaign = json.load(f)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise StoreIOError(f"cannot read the campaign file {path}: {reason}") from None
    if not isinstance(campaign, dict) or not isinstance(campaign.get("sweep"), dict):
        raise StoreIOError(f"{path} is not a scaleprobe campaign file")
    return campaign


def signature(results: list[dict]) -> str:
    """A digest of which points are stored and when each was measured."""
    text = json.dumps(sorted((r["key"], r.get("finished")) for r in results))
    return hashlib.sha1(text.encode()).hexdigest()


def open_consolidated(path: str):
    """Open a consolidated Dataset; refuse what is not scaleprobe's results.

    Raises
    ------
    StoreError
        ``path`` cannot be read as Zarr or netCDF, or holds a Dataset without the
        ``status`` of each point.
    """
    import xarray as xr

    try:
        if path.endswith(".nc"):
            with xr.open_dataset(path) as ds:
                ds = ds.load()
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # zarr's notes on formats it reads
                # chunks=None: numpy arrays, no dask graph (whose compute would
                # import the distributed scheduler to look for a client)
                with xr.open_zarr(path, consolidated=None, chunks=None) as ds:
                    ds = ds.load()
    except Exception as exc:  # xarray and zarr raise many kinds for foreign files
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StoreError(
            f"{path} is not scaleprobe results (it cannot be read as "
            f"{'netCDF' if path.endswith('.nc') else 'a Zarr store'}: {reason})"
        ) from None
    if "status" not in ds.data_vars:
        raise StoreError(
            f"{path} is not scaleprobe results (a Dataset without the 'status' of "
            "each point); results come from 'scaleprobe run'"
        )
    return ds


# ------------------------------------------------------------------ the lock


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


# ----------------------------------------------------------------- the store


def archive_name(stem: str, started) -> str:
    """Return a free stem for an earlier campaign moved aside.

    ``results/pingpong`` started at 2026-01-02T03:04:05 becomes
    ``results/pingpong.campaign-20260102T030405`` (its ``.points``, ``.logs`` and
    ``.zarr`` keep working together: ``scaleprobe show`` opens it).

    Examples
    --------
    >>> archive_name("/nonexistent/r", "2026-01-02T03:04:05+0000")
    '/nonexistent/r.campaign-20260102T030405'
    """
    digits = re.sub(r"[^0-9T]", "", str(started or ""))[:15] or "unknown"
    base = f"{stem}.campaign-{digits}"
    candidate, n = base, 2
    while any(
        os.path.exists(candidate + ext) for ext in (".points", ".logs", ".zarr", ".nc")
    ):
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def archive_campaign(store, started) -> str:
    """Move a store's campaign aside (see :func:`archive_name`); return a note.

    Parameters
    ----------
    store : ResultStore
        The store whose points, logs and consolidated Dataset move.
    started : str
        The campaign's start time (its attribute ``started``).

    Raises
    ------
    StoreError
        A folder cannot be moved.
    """
    stem = archive_name(store.stem, started)
    ext = store.path[len(store.stem) :]
    for source, target in (
        (store.points_dir, stem + ".points"),
        (store.logs_dir, stem + ".logs"),
        (store.path, stem + ext),
    ):
        if os.path.exists(source):
            try:
                os.replace(source, target)
            except OSError as exc:
                raise io_error(exc, "archive of the earlier campaign", target) from None
    return f"moved the earlier campaign at {store.path} to {stem + ext}"


def _stem(output: str) -> str:
    root, ext = os.path.splitext(os.fspath(output).rstrip("/"))
    return root if ext in (".zarr", ".nc") else os.fspath(output).rstrip("/")


#: Derived values that kernels echoed in a record's link before it was a
#: :class:`~scaleprobe.kernels.schema.LinkConfig`: the throttled rate and the
#: machine node of each emulated node.
LEGACY_LINK_KEYS = ("effective_bandwidth", "placement")

#: What kernels named their ``parameters`` before the schema.
LEGACY_PARAMETER_KEYS = ("params", "settings")


def upgrade_legacy_record(mapping):
    """A kernel record as written before the schema, in the schema's shape.

    Such records named the kernel's parameters ``params`` or ``settings`` (now
    ``parameters``) and echoed two derived values in their link
    (:data:`LEGACY_LINK_KEYS`). Stores written then keep records of that shape.

    Parameters
    ----------
    mapping : object
        A record's JSON object.

    Returns
    -------
    object
        ``mapping`` itself when it has neither, else an upgraded copy.

    Examples
    --------
    >>> upgrade_legacy_record({"metrics": {}, "params": {"scale": 10}})
    {'metrics': {}, 'parameters': {'scale': 10}}
    >>> old = {"metrics": {}, "link": {"mode": "none", "effective_bandwidth": 1.0}}
    >>> Record.from_dict(upgrade_legacy_record(old)).link.mode
    'none'
    """
    if not isinstance(mapping, dict):
        return mapping
    link = mapping.get("link")
    stale_link = isinstance(link, dict) and bool(set(LEGACY_LINK_KEYS) & set(link))
    renamed = [key for key in LEGACY_PARAMETER_KEYS if key in mapping]
    if "parameters" in mapping or len(renamed) > 1:
        renamed = []  # not the older shape: the schema says what is wrong
    if not (stale_link or renamed):
        return mapping
    upgraded = dict(mapping)
    if renamed:
        upgraded["parameters"] = upgraded.pop(renamed[0])
    if stale_link:
        kept = {k: v for k, v in link.items() if k not in LEGACY_LINK_KEYS}
        upgraded["link"] = kept
    return upgraded


class ResultStore:
    """Durable storage of one campaign.

    Parameters
    ----------
    output : str or path-like
        The consolidated Dataset's path; ``.nc`` gives netCDF, anything else Zarr.

    Attributes
    ----------
    path : str
        The consolidated Dataset.
    points_dir, logs_dir : str
        Per-point result files and launch logs.
    lock : OutputLock
        The store's lock (``stem.lock``); a run holds it from start to end.
    """

    def __init__(self, output):
        self.path = os.fspath(output).rstrip("/")
        self.stem = _stem(self.path)
        self.points_dir = self.stem + ".points"
        self.logs_dir = self.stem + ".logs"
        self.damaged_dir = os.path.join(self.points_dir, "damaged")
        self.campaign_file = os.path.join(self.points_dir, "campaign.json")
        self.lock = OutputLock(self.stem + ".lock", self.path)

    def exists(self) -> bool:
        """Return True if a campaign was started at this location."""
        return os.path.exists(self.campaign_file)

    def campaign(self) -> dict:
        """Return the stored campaign description (axes, identity, provenance).

        Raises
        ------
        StoreIOError
            ``campaign.json`` cannot be read or is damaged.
        """
        return read_campaign(self.campaign_file)

    def start(self, campaign: dict, *, new_campaign: bool = False) -> str | None:
        """Create the store, or check that it holds the same campaign.

        Call with the lock held (:meth:`lock`). Temporary files and directories that
        a crashed write left behind are removed first.

        Parameters
        ----------
        campaign : dict
            ``identity`` (what must match to resume: kernel, params, throttle, sweep
            keys), ``sweep`` (axes) and ``attrs`` (provenance). New values on existing
            sweep keys are a campaign that grows, not a new one.
        new_campaign : bool, default=False
            Move an existing campaign aside (``stem.campaign-STARTED.*``) and start
            a new one here.

        Returns
        -------
        str or None
            A note saying where an earlier campaign was moved.

        Raises
        ------
        StoreError
            The location holds a campaign with another identity (the message says
            what changed), or cannot be written.
        """
        if os.path.lexists(self.path) and not self.exists():
            raise StoreError(
                f"{self.path} exists and is not a scaleprobe store (no "
                f"{self.campaign_file}): it would be overwritten; give another output"
            )
        self.clean_leftovers()
        note = None
        if self.exists():
            old = self.campaign()
            changes = identity_changes(old, campaign)
            if new_campaign:
                note = archive_campaign(self, old.get("attrs", {}).get("started"))
            elif changes:
                raise StoreError(
                    f"{self.path} holds another campaign ({'; '.join(changes)}); "
                    "resuming keeps the kernel, params, throttle and sweep keys (new "
                    "values on existing keys are fine): run with --new-campaign to "
                    "move the old results aside, or give another output"
                )
            else:
                # Keep the first start time; take the current axes (they may grow).
                campaign = {
                    **campaign,
                    "attrs": {
                        **campaign["attrs"],
                        "started": old["attrs"].get("started"),
                    },
                }
        for folder, what in (
            (self.points_dir, "results folder"),
            (self.logs_dir, "logs folder"),
        ):
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as exc:
                raise io_error(exc, what, folder) from None
        atomic_write(
            self.campaign_file, json.dumps(campaign, indent=1), "campaign file"
        )
        return note

    def clean_leftovers(self) -> list[str]:
        """Remove temporary files and directories of writes that crashed.

        Returns
        -------
        list of str
            What was removed.
        """
        folder = os.path.dirname(self.path) or "."
        removed = remove_leftovers(folder, os.path.basename(self.path) + ".")
        removed += remove_leftovers(self.points_dir, "")
        return removed

    def _files(self) -> list[str]:
        try:
            names = os.listdir(self.points_dir)
        except OSError:
            return []
        return sorted(
            name[:-5]
            for name in names
            if name.endswith(".json") and name != "campaign.json"
        )

    def done_keys(self) -> set[str]:
        """Return the keys of the points stored (damaged files included)."""
        return set(self._files())

    def results(self, dims=None) -> list[dict]:
        """Load every stored point result, checking each file.

        A file that is not a complete point of this campaign (truncated, damaged,
        another campaign's coordinates) is moved to ``damaged/`` when this process
        holds the lock, and left alone otherwise; either way it is skipped with a
        :class:`DamagedPointWarning` naming it, and its point counts as not measured.

        Parameters
        ----------
        dims : iterable of str, optional
            The sweep keys every point must have; the campaign's by default.

        Returns
        -------
        list of dict
        """
        if dims is None:
            dims = self.campaign()["sweep"]
        out = []
        for key in self._files():
            path = os.path.join(self.points_dir, f"{key}.json")
            result, problem = point_problem(path, key, dims)
            if problem is None:
                out.append(result)
                continue
            if self.lock.held:
                try:
                    where = move_aside(path, self.damaged_dir)
                except OSError as exc:
                    raise io_error(exc, "damaged point file", path) from None
                message = (
                    f"point file {path} is damaged ({problem}); moved to {where}, "
                    "its point will be measured again"
                )
            else:
                message = (
                    f"point file {path} is damaged ({problem}); the next run moves "
                    "it aside and measures its point again"
                )
            warnings.warn(message, DamagedPointWarning, stacklevel=2)
        return out

    def statuses(self) -> dict[str, str]:
        """Return the status of every (valid) stored point, by key."""
        return {r["key"]: r["status"] for r in self.results()}

    def failures(self) -> list[dict]:
        """Every stored point that did not succeed, with its error and its log.

        Returns
        -------
        list of dict
            ``coords``, ``status`` (failed, timeout, invalid), ``error`` (the whole
            text) and ``log`` (the launch log's path, as it can be opened from the
            current directory), ordered by coordinates.
        """
        out = []
        for result in self.results():
            if result["status"] == "ok":
                continue
            log = os.path.join(self.logs_dir, f"{result['key']}.log")
            out.append(
                {
                    "coords": result["coords"],
                    "status": result["status"],
                    "error": result.get("error") or "",
                    "log": _shown_path(log) if os.path.exists(log) else None,
                }
            )
        return sorted(out, key=lambda failure: _coords_order(failure["coords"]))

    def _retire(self, key: str) -> list:
        """The history of a point about to be measured again, old log renamed."""
        path = os.path.join(self.points_dir, f"{key}.json")
        if not os.path.exists(path):
            return []
        old, problem = point_problem(path, key, self.campaign()["sweep"])
        if problem is not None:
            return []
        history = old.pop("history", [])
        log = os.path.join(self.logs_dir, f"{key}.log")
        if os.path.exists(log):
            attempt = os.path.join(self.logs_dir, f"{key}.{len(history) + 1}.log")
            with contextlib.suppress(OSError):
                os.replace(log, attempt)
                old["log"] = os.path.relpath(
                    attempt, os.path.dirname(self.points_dir) or "."
                )
        return [*history, old]

    def write_point(self, result: dict) -> None:
        """Store one point's result and its launch log.

        The log is written first, the result file last and atomically: the point
        counts as done only once its result file exists. A point measured again
        keeps its earlier results in ``history`` (oldest first).

        Raises
        ------
        StoreError
            The disk is full or the store cannot be written; nothing stored before
            is damaged, and this point will be measured again by the next run.
        """
        result = dict(result)
        stdout, stderr = result.pop("stdout", ""), result.pop("stderr", "")
        history = self._retire(result["key"])
        if history:
            result["history"] = history
        log = os.path.join(self.logs_dir, f"{result['key']}.log")
        try:
            with open(log, "w", encoding="utf-8") as f:
                # First line: the shell line that reruns the launch as measured.
                f.write(result.get("replay") or shlex.join(result.get("command", [])))
                f.write(f"\n# point: {json.dumps(result['coords'])}\n")
                f.write(f"# status: {result['status']} {result.get('error', '')}\n")
                f.write(
                    "# ---- stderr ----\n"
                    + (stderr or "")
                    + "\n# ---- stdout ----\n"
                    + (stdout or "")
                )
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(log)
            raise io_error(exc, "launch log", log) from None
        result["log"] = os.path.relpath(log, os.path.dirname(self.points_dir) or ".")
        atomic_write(
            os.path.join(self.points_dir, f"{result['key']}.json"),
            json.dumps(result, default=str),
            "point file",
        )

    def dataset(self) -> xr.Dataset:
        """Assemble the Dataset from the point files (without writing it)."""
        from ._assemble import assemble

        campaign = self.campaign()
        results = self.results(campaign["sweep"])
        ds = assemble(campaign, results)
        ds.attrs["points"] = len(results)
        ds.attrs["points_signature"] = signature(results)
        finished = [r.get("finished") for r in results if r.get("finished")]
        if finished:
            ds.attrs["finished"] = time.strftime(
                "%Y-%m-%dT%H:%M:%S%z", time.localtime(max(finished))
            )
        return ds

    def consolidate(self) -> xr.Dataset:
        """Rebuild the consolidated Dataset from the point files and swap it in.

        Returns
        -------
        xarray.Dataset
            The Dataset that was written.

        Raises
        ------
        StoreError
            The disk is full or the store cannot be written; the previous
            consolidated Dataset and every point file are left as they were.
        """
        ds = self.dataset()
        tmp, old = f"{self.path}.tmp-{os.getpid()}", f"{self.path}.old-{os.getpid()}"
        remove_path(tmp)
        try:
            if self.path.endswith(".nc"):
                ds.to_netcdf(tmp)
            else:
                _write_zarr(ds, tmp)
            if os.path.exists(self.path):
                os.replace(self.path, old)
            os.replace(tmp, self.path)
        except Exception as exc:
            remove_path(tmp)
            cause = _os_error(exc)
            if cause is None:
                raise
            raise io_error(cause, "consolidated Dataset", self.path) from None
        remove_path(old)
        return ds


def _write_zarr(ds: xr.Dataset, path: str) -> None:
    """Write ``ds`` as a consolidated zarr (format 2) directory, one file at a time.

    The Dataset is encoded in memory first and its files written here in order: zarr's
    own writer stores chunks concurrently and, when one write fails (a full disk),
    raises while the others still run, and those recreate the directory after it was
    removed. A campaign's Dataset holds its measurements, a few MB even for a large
    sweep, so the copy in memory costs little.
    """
    encoded: dict = {}  # zarr 2 stores bytes in it, zarr 3 its Buffer objects
    ds.to_zarr(encoded, mode="w", zarr_format=2, consolidated=True)
    os.makedirs(path)
    for key in sorted(encoded):
        value = encoded[key]
        target = os.path.join(path, *key.split("/"))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(value.to_bytes() if hasattr(value, "to_bytes") else value)


def _coords_order(coords: dict) -> tuple:
    """A sort key of a point's coordinates: numbers by value, before strings."""
    return tuple(
        (0, value, "") if isinstance(value, (int, float)) else (1, 0, str(value))
        for value in coords.values()
    )


def _shown_path(path: str) -> str:
    """``path`` relative to the current directory when below it, else absolute."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative


def _os_error(exc: BaseException) -> OSError | None:
    """The OSError behind an exception (zarr and netCDF may wrap it), if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def open_results(path) -> xr.Dataset:
    """Open a campaign's results as an xarray Dataset.

    If the consolidated Dataset is missing or older than the per-point files (a sweep
    killed before its last consolidation), it is rebuilt from them first, so every
    measured point is always visible. While a run holds the store's lock, or where
    the store cannot be written, the Dataset is assembled in memory and nothing is
    written.

    Parameters
    ----------
    path : str or path-like
        The campaign output (``results/name.zarr`` or ``.nc``).

    Returns
    -------
    xarray.Dataset
        The results, loaded into memory.

    Raises
    ------
    FileNotFoundError
        If there are no results at ``path``.
    StoreError
        If ``path`` holds something that is not scaleprobe's results.

    Examples
    --------
    >>> ds = open_results("results/pingpong.zarr")  # doctest: +SKIP
    >>> ds.achieved_bandwidth.sel(bandwidth=50)      # doctest: +SKIP
    """
    store = ResultStore(path)
    if store.exists():
        if store.lock.holder() is not None:
            return store.dataset()
        try:
            store.lock.acquire()
        except StoreError:  # read-only, or a run started meanwhile: only read
            return store.dataset()
        try:
            store.clean_leftovers()
            try:
                stored = (
                    open_consolidated(store.path)
                    if os.path.exists(store.path)
                    else None
                )
            except StoreError:  # damaged: the point files rebuild it
                stored = None
            current = signature(store.results())
            if stored is None or stored.attrs.get("points_signature") != current:
                try:
                    return store.consolidate()
                except StoreIOError:  # a full disk: the points are still readable
                    return store.dataset()
            return stored
        finally:
            store.lock.release()
    if os.path.exists(store.path):
        return open_consolidated(store.path)
    raise FileNotFoundError(f"no scaleprobe results at {store.path!r}")
