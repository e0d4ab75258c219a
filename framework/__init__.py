"""The sweep dataflow: spec, plan, MPI launches on Dask, and the result store.

Names are imported on first use (:pep:`562`), so importing a light submodule such as
:mod:`scaleprobe.framework.units` does not pull in Dask's distributed scheduler or
xarray.

Examples
--------
>>> from scaleprobe.framework import run_sweep, open_results   # doctest: +SKIP
>>> ds = run_sweep("pingpong.yaml")                             # doctest: +SKIP
"""

from __future__ import annotations

import importlib

#: Public name -> submodule that defines it.
_EXPORTS = {
    "DamagedPointWarning": "_warnings",
    "OversubscriptionWarning": "_warnings",
    "Point": "planning",
    "ResultStore": "store",
    "RuleError": "admissible",
    "Spec": "spec",
    "SpecError": "spec",
    "UnitError": "units",
    "LaunchSettings": "settings",
    "SettingsError": "settings",
    "StoreError": "store",
    "SweepWarning": "_warnings",
    "compile_rule": "admissible",
    "load_spec": "spec",
    "open_results": "store",
    "parse_bandwidth": "units",
    "parse_duration": "units",
    "parse_size": "units",
    "plan": "planning",
    "prepare_sweep": "runner",
    "run_sweep": "runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
