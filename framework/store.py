"""The result store: durable per-point files plus one consolidated Dataset.

For an output ``results/pingpong.zarr`` the store keeps

- ``results/pingpong.points/`` — one JSON file per finished point, named by the point's
  key and written atomically (temporary file, then rename). These files are the
  source of truth: a point is done exactly when its file exists, so a sweep killed at
  any moment (even with ``kill -9``) and started again neither loses nor repeats a
  point. ``campaign.json`` there holds the campaign's identity, axes and provenance.
  Every point file is checked when read; a damaged one is moved to ``damaged/``
  there (never deleted) and its point is measured again by the next run.
- ``results/pingpong.logs/`` — the standard error and output of every launch.
- ``results/pingpong.zarr`` (or ``.nc``) — the consolidated Dataset, rebuilt from the
  point files every few points and at the end, swapped in by rename.
- ``results/pingpong.lock`` — while a run uses the store: who (see :mod:`._lock`).

Per-point files were chosen over writing regions of one Zarr array because a region
write interrupted half-way leaves a chunk that cannot be told apart from a finished
one, while a rename is atomic.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import time
import warnings

import xarray as xr

from ._assemble import assemble
from ._identity import archive_campaign, identity_changes
from ._lock import OutputLock, OutputLockedError
from ._storefiles import (
    StoreError,
    StoreIOError,
    atomic_write,
    io_error,
    move_aside,
    open_consolidated,
    point_problem,
    read_campaign,
    remove_leftovers,
    remove_path,
    signature,
)
from ._warnings import DamagedPointWarning

__all__ = [
    "OutputLockedError",
    "ResultStore",
    "StoreError",
    "StoreIOError",
    "open_results",
]


def _stem(output: str) -> str:
    root, ext = os.path.splitext(os.fspath(output).rstrip("/"))
    return root if ext in (".zarr", ".nc") else os.fspath(output).rstrip("/")


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
                ds.to_zarr(tmp, mode="w", zarr_format=2, consolidated=True)
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
