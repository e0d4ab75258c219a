"""The result store: durable per-point files plus one consolidated Dataset.

For an output ``results/pingpong.zarr`` the store keeps

- ``results/pingpong.points/`` — one JSON file per finished point, named by the point's
  key and written atomically (temporary file, then rename). These files are the
  source of truth: a point is done exactly when its file exists, so a sweep killed at
  any moment (even with ``kill -9``) and started again neither loses nor repeats a
  point. ``campaign.json`` there holds the sweep axes and provenance.
- ``results/pingpong.logs/`` — the standard error and output of every launch.
- ``results/pingpong.zarr`` (or ``.nc``) — the consolidated Dataset, rebuilt from the
  point files every few points and at the end, swapped in by rename.

Per-point files were chosen over writing regions of one Zarr array because a region
write interrupted half-way leaves a chunk that cannot be told apart from a finished
one, while a rename is atomic.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import time

import xarray as xr

from ._assemble import assemble

__all__ = ["ResultStore", "StoreError", "open_results"]


class StoreError(RuntimeError):
    """The store cannot be used as asked (a different campaign already lives there)."""


def _atomic_write(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


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
    """

    def __init__(self, output):
        self.path = os.fspath(output).rstrip("/")
        stem = _stem(self.path)
        self.points_dir = stem + ".points"
        self.logs_dir = stem + ".logs"
        self.campaign_file = os.path.join(self.points_dir, "campaign.json")

    def exists(self) -> bool:
        """Return True if a campaign was started at this location."""
        return os.path.exists(self.campaign_file)

    def campaign(self) -> dict:
        """Return the stored campaign description (axes, identity, provenance)."""
        with open(self.campaign_file, encoding="utf-8") as f:
            return json.load(f)

    def start(self, campaign: dict) -> None:
        """Create the store, or check that it holds the same campaign.

        Parameters
        ----------
        campaign : dict
            ``identity`` (what must match to resume: kernel, params, throttle),
            ``sweep`` (axes) and ``attrs`` (provenance).

        Raises
        ------
        StoreError
            If the location holds a campaign with another identity.
        """
        os.makedirs(self.points_dir, exist_ok=True)
        os.makedirs(self.logs_dir, exist_ok=True)
        if self.exists():
            old = self.campaign()
            if old["identity"] != campaign["identity"]:
                changed = sorted(
                    k
                    for k in campaign["identity"]
                    if old["identity"].get(k) != campaign["identity"][k]
                )
                raise StoreError(
                    f"{self.path} holds results of a different campaign ({', '.join(changed)} "
                    "changed); give another output path, or remove the old results"
                )
            # Keep the first start time; take the current axes (they may have grown).
            campaign = {
                **campaign,
                "attrs": {**campaign["attrs"], "started": old["attrs"].get("started")},
            }
        _atomic_write(self.campaign_file, json.dumps(campaign, indent=1))

    def done_keys(self) -> set[str]:
        """Return the keys of the points already stored."""
        if not os.path.isdir(self.points_dir):
            return set()
        return {
            name[:-5]
            for name in os.listdir(self.points_dir)
            if name.endswith(".json") and name != "campaign.json"
        }

    def write_point(self, result: dict) -> None:
        """Store one point's result and its launch log.

        The log is written first, the result file last and atomically: the point
        counts as done only once its result file exists.
        """
        result = dict(result)
        stdout, stderr = result.pop("stdout", ""), result.pop("stderr", "")
        log = os.path.join(self.logs_dir, f"{result['key']}.log")
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
        result["log"] = os.path.relpath(log, os.path.dirname(self.points_dir) or ".")
        _atomic_write(
            os.path.join(self.points_dir, f"{result['key']}.json"),
            json.dumps(result, default=str),
        )

    def results(self) -> list[dict]:
        """Load every stored point result."""
        out = []
        for key in sorted(self.done_keys()):
            with open(
                os.path.join(self.points_dir, f"{key}.json"), encoding="utf-8"
            ) as f:
                out.append(json.load(f))
        return out

    def dataset(self) -> xr.Dataset:
        """Assemble the Dataset from the point files (without writing it)."""
        campaign = self.campaign()
        results = self.results()
        ds = assemble(campaign, results)
        ds.attrs["points"] = len(results)
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
        """
        ds = self.dataset()
        tmp, old = f"{self.path}.tmp-{os.getpid()}", f"{self.path}.old-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        if self.path.endswith(".nc"):
            ds.to_netcdf(tmp)
        else:
            ds.to_zarr(tmp, mode="w", zarr_format=2, consolidated=True)
        if os.path.exists(self.path):
            os.replace(self.path, old)
        os.replace(tmp, self.path)
        if os.path.isdir(old):
            shutil.rmtree(old, ignore_errors=True)
        elif os.path.exists(old):
            os.remove(old)
        return ds


def open_results(path) -> xr.Dataset:
    """Open a campaign's results as an xarray Dataset.

    If the consolidated Dataset is missing or older than the per-point files (a sweep
    killed before its last consolidation), it is rebuilt from them first, so every
    measured point is always visible.

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

    Examples
    --------
    >>> ds = open_results("results/pingpong.zarr")  # doctest: +SKIP
    >>> ds.achieved_bandwidth.sel(bandwidth=50)      # doctest: +SKIP
    """
    store = ResultStore(path)
    if store.exists():
        stored = None
        if os.path.exists(store.path):
            stored = _open(store.path)
        if stored is None or stored.attrs.get("points") != len(store.done_keys()):
            return store.consolidate()
        return stored
    if os.path.exists(store.path):
        return _open(store.path)
    raise FileNotFoundError(f"no scaleprobe results at {store.path!r}")


def _open(path: str) -> xr.Dataset:
    if path.endswith(".nc"):
        with xr.open_dataset(path) as ds:
            return ds.load()
    with xr.open_zarr(path, consolidated=True) as ds:
        return ds.load()
