"""Assemble per-point results into one labelled xarray Dataset."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scaleprobe.kernels.schema import LinkConfig

__all__ = ["assemble"]

DEFAULT_ATTRS = {
    "time": ("s", "completion time"),
    "wall_time": ("s", "wall-clock time of the kernel"),
    "comp_time": ("s", "computation time"),
    "comm_time": ("s", "communication time"),
    "comp_time_max": ("s", "computation time, slowest rank"),
    "comm_time_max": ("s", "communication time, slowest rank"),
    "bytes_sent": ("bytes", "bytes sent by all ranks"),
    "bytes_inter": ("bytes", "bytes sent between nodes"),
    "bytes_intra": ("bytes", "bytes sent within nodes"),
    "messages": ("1", "messages sent by all ranks"),
    "messages_inter": ("1", "messages sent between nodes"),
    "peak_rss": ("bytes", "peak resident memory of the largest rank"),
    "teps": ("edges/s", "traversed edges per second"),
    "launch_time": ("s", "wall time of the whole launch, start-up included"),
    "host_load": ("1", "cores other work kept busy on the launch's host, on average"),
    "link_rate": (
        "bytes/s",
        "payload rate the point's link carried in a probe just before the launch",
    ),
    "link_shaped_rate": ("bytes/s", "payload rate the point's link was shaped to"),
    "returncode": ("1", "exit code of the launch"),
    "status": ("", "point status: ok, failed, timeout, invalid (empty: not run)"),
    "error": ("", "error text of a failed, timed-out or invalid point"),
}


def _link(campaign: dict) -> LinkConfig:
    """The campaign's link at 100 %; stores written before it was typed keep it as
    provenance text (``link_model``), read once here."""
    if "link" in campaign:
        return LinkConfig.from_dict(campaign["link"])
    attrs = campaign.get("attrs", {})
    return LinkConfig.from_attrs(attrs) or LinkConfig(
        mode=attrs.get("throttle_mode", "none")
    )


def _axes(campaign: dict, results: list[dict]) -> dict:
    """The spec's axes, extended by any coordinate a stored point has beyond them.

    An axis as the spec lists it keeps its order; one that stored points extend
    (a campaign ``suggest`` extended, whose spec lists its last counts) is put in
    increasing order when it holds numbers, not in the order they were measured,
    so that it is an index ``sel`` can slice."""
    axes = {k: list(v) for k, v in campaign["sweep"].items()}
    extended = set()
    for result in results:
        for key, value in result["coords"].items():
            if key not in axes:
                axes[key] = [value]
            elif value not in axes[key]:
                axes[key].append(value)
                extended.add(key)
    for key in extended:
        if _kind(axes[key]) == "float" and None not in axes[key]:
            axes[key] = sorted(axes[key])
    return axes


def _kind(values) -> str:
    present = [v for v in values if v is not None]
    if any(isinstance(v, str) for v in present):
        return "str"
    if present and all(isinstance(v, (int, float, bool)) for v in present):
        return "float"
    return "skip" if present else "float"


class _Builder:
    """Collects variables over the sweep dims plus optional trailing dims."""

    def __init__(self, axes: dict):
        self.axes = axes
        self.dims = tuple(axes)
        self.shape = tuple(len(v) for v in axes.values())
        self.lookup = {
            k: {v: i for i, v in enumerate(vals)} for k, vals in axes.items()
        }
        self.entries: dict[str, list] = {}
        self.extra_dims: dict[str, tuple] = {}
        self.sizes: dict[str, int] = {}

    def index(self, coords: dict) -> tuple:
        return tuple(self.lookup[d][coords[d]] for d in self.dims)

    def add(self, name: str, cell: tuple, value, extra: tuple = ()):
        """Record ``value`` of ``name`` at ``cell`` and the (dim, index) ``extra``."""
        if name in self.axes or name in ("ranks", "trial"):
            name = f"{name}_reported"  # a metric must not shadow a coordinate
        dims = tuple(d for d, _ in extra)
        if self.extra_dims.setdefault(name, dims) != dims:
            name = f"{name}_{'_'.join(dims)}"
            self.extra_dims.setdefault(name, dims)
        for dim, i in extra:
            self.sizes[dim] = max(self.sizes.get(dim, 0), i + 1)
        self.entries.setdefault(name, []).append(
            (cell + tuple(i for _, i in extra), value)
        )

    def variables(self) -> dict:
        out = {}
        for name, entries in self.entries.items():
            extra = self.extra_dims[name]
            shape = self.shape + tuple(self.sizes[d] for d in extra)
            kind = _kind(v for _, v in entries)
            if kind == "skip":
                continue
            if kind == "str":
                data = np.full(shape, "", dtype=object)
                for idx, v in entries:
                    data[idx] = "" if v is None else str(v)
                data = data.astype(str)
            else:
                data = np.full(shape, np.nan)
                for idx, v in entries:
                    data[idx] = np.nan if v is None else float(v)
            out[name] = (self.dims + extra, data)
        return out


def _profiles(builder: _Builder, cell, profiles, prefix=()):
    for dim, variables in (profiles or {}).items():
        for var, values in variables.items():
            if isinstance(values, list):
                for i, v in enumerate(values):
                    builder.add(var, cell, v, (*prefix, (dim, i)))


def assemble(campaign: dict, results: list[dict]) -> xr.Dataset:
    """Build the campaign Dataset from the campaign description and point results.

    Parameters
    ----------
    campaign : dict
        ``sweep`` (axis name to list of values), ``attrs`` (provenance).
    results : list of dict
        Stored point results (see :func:`scaleprobe.framework.launch.launch_point`).

    Returns
    -------
    xarray.Dataset
        One dimension per sweep axis (plus ``trial`` and profile dims such as
        ``level``), a ``ranks`` coordinate, and every metric the kernels reported, with
        ``units`` and ``long_name`` attributes. Cells without a point have empty
        ``status`` and NaN metrics. A point metric whose name a trial also uses is
        stored as ``run_<name>``.
    """
    axes = _axes(campaign, results)
    builder = _Builder(axes)
    units, long_names = {}, {}
    trial_keys = set()
    for result in results:
        for trial in (result.get("record") or {}).get("trials") or []:
            trial_keys.update(k for k in trial if k != "profiles")
    for result in results:
        cell = builder.index(result["coords"])
        for key in ("status", "error", "launch_time", "returncode"):
            builder.add(key, cell, result.get(key))
        for key in ("host_load", "link_rate", "link_shaped_rate"):
            if key in result:  # results stored before it was measured lack it
                builder.add(key, cell, result[key])
        record = result.get("record") or {}
        for name, value in (record.get("metrics") or {}).items():
            if isinstance(value, (list, dict)):
                continue
            builder.add(f"run_{name}" if name in trial_keys else name, cell, value)
        for t, trial in enumerate(record.get("trials") or []):
            for name, value in trial.items():
                if name == "profiles":
                    _profiles(builder, cell, value, (("trial", t),))
                elif not isinstance(value, (list, dict)):
                    builder.add(name, cell, value, (("trial", t),))
        _profiles(builder, cell, record.get("profiles"))
        units.update(record.get("units") or {})
        long_names.update(record.get("long_names") or {})
    data_vars = builder.variables()
    coords = dict(axes.items())
    for dim, size in builder.sizes.items():
        coords[dim] = np.arange(size)
    if "nodes" in axes and "ppn" in axes:
        coords["ranks"] = (("nodes", "ppn"), np.outer(axes["nodes"], axes["ppn"]))
    ds = xr.Dataset(
        data_vars=data_vars, coords=coords, attrs=dict(campaign.get("attrs", {}))
    )
    for name, var in ds.data_vars.items():
        base = name[4:] if name.startswith("run_") else name
        unit, long_name = DEFAULT_ATTRS.get(base, ("", base.replace("_", " ")))
        var.attrs["units"] = units.get(base, unit)
        var.attrs["long_name"] = long_names.get(base, long_name)
    ds["bandwidth"].attrs.update(_link(campaign).to_attrs())
    ds["nodes"].attrs.update(units="1", long_name="nodes")
    ds["ppn"].attrs.update(units="1", long_name="ranks per node")
    if "ranks" in ds.coords:
        ds["ranks"].attrs.update(units="1", long_name="MPI ranks")
    return ds
