"""The files of a result store: atomic writes, checked reads, leftovers, full disks.

Everything here keeps one promise of the store: a file that is there is complete and
belongs to the campaign, and a failure to write says what happened in one line
without damaging what was already stored.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import tempfile
import warnings

from scaleprobe.kernels.schema import Record

from .planning import point_key

__all__ = [
    "STATUSES",
    "StoreError",
    "StoreIOError",
    "atomic_write",
    "check_output",
    "io_error",
    "move_aside",
    "open_consolidated",
    "point_problem",
    "read_campaign",
    "remove_leftovers",
    "remove_path",
    "signature",
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
    scaleprobe.framework._storefiles.StoreError: cannot create ... /etc/passwd is a regular file, not a folder
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
            record = Record.from_dict(_upgrade_link_echo(result["record"]))
        except ValueError as exc:  # RecordError, or a malformed link or placement
            return None, f"its record is not a kernel record ({exc})"
        result["record"] = record.to_dict()
    return result, None


#: Derived values that kernels echoed in a record's link before it was a
#: :class:`~scaleprobe.kernels.schema.LinkConfig`: the throttled rate and the
#: machine node of each emulated node.
_LEGACY_LINK_KEYS = ("effective_bandwidth", "placement")


def _upgrade_link_echo(record):
    """A record as stored before the link was typed, without the derived link keys."""
    link = record.get("link") if isinstance(record, dict) else None
    if not isinstance(link, dict) or not set(_LEGACY_LINK_KEYS) & set(link):
        return record
    kept = {k: v for k, v in link.items() if k not in _LEGACY_LINK_KEYS}
    return {**record, "link": kept}


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


def remove_path(path: str) -> None:
    """Remove a file or a directory tree, if it is there."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.remove(path)


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
                with xr.open_zarr(path, consolidated=None) as ds:
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
