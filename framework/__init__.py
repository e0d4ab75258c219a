"""The sweep dataflow: spec, plan, MPI launches on Dask, and the result store.

Where each part lives:

- :mod:`~scaleprobe.framework.spec`: a campaign spec, parsed by its schema
  (:data:`~scaleprobe.framework.spec.SPEC_SCHEMA`);
  :mod:`~scaleprobe.framework.admissible`: the rules of admissible points;
- :mod:`~scaleprobe.framework.planning`: the points of a sweep in run order;
- :mod:`~scaleprobe.framework.launch`: one point as a child MPI process, its link
  sent as a :class:`~scaleprobe.kernels.schema.LinkConfig` and its output read as a
  :class:`~scaleprobe.kernels.schema.Record` checked against the point;
- :mod:`~scaleprobe.framework.runner`: prepare, describe (``scaleprobe plan``) and
  run a sweep; its Dask side (tasks, launch slots, progress) is
  :mod:`~scaleprobe.framework._execute`;
- :mod:`~scaleprobe.framework.store`: the point files, the lock and the consolidated
  Dataset (built by :mod:`~scaleprobe.framework._assemble`);
  :mod:`~scaleprobe.framework.campaign`: what a campaign is and where it was
  measured;
- :mod:`~scaleprobe.framework.cluster`, :mod:`~scaleprobe.framework.jobqueue`: the
  Dask cluster; :mod:`~scaleprobe.framework.dashboard`: the sweep page;
  :mod:`~scaleprobe.framework.netns`: emulated nodes as network namespaces;
- :mod:`~scaleprobe.framework.settings`, :mod:`~scaleprobe.framework.config`,
  :mod:`~scaleprobe.framework.units`: settings and quantities;
  :mod:`~scaleprobe.framework.cli`: the ``scaleprobe`` command;
  :mod:`~scaleprobe.framework.api`: the calls of :mod:`scaleprobe` for scripts and
  notebooks (run, open, fit, project, report).

Names are imported on first use (:pep:`562`), so importing a light submodule such as
:mod:`scaleprobe.framework.units` does not pull in Dask's distributed scheduler or
xarray.

Examples
--------
>>> from scaleprobe.framework import run_sweep, open_results   # doctest: +SKIP
>>> ds = run_sweep("pingpong.yaml")                             # doctest: +SKIP
"""

import importlib as _importlib

#: Public name -> submodule that defines it.
_EXPORTS = {
    "DamagedPointWarning": "_warnings",
    "FailedPointsWarning": "_warnings",
    "LinkShortfallWarning": "_warnings",
    "OversubscriptionWarning": "_warnings",
    "Point": "planning",
    "ResultStore": "store",
    "RuleError": "admissible",
    "SPEC_SCHEMA": "spec",
    "Spec": "spec",
    "SpecError": "spec",
    "UnitError": "units",
    "LaunchSettings": "settings",
    "SettingsError": "settings",
    "StoreError": "store",
    "SweepWarning": "_warnings",
    "compile_rule": "admissible",
    "describe_plan": "runner",
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
    value = getattr(_importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    # the public names only: not the helpers of this module, nor the submodules
    # that importing a name bound here
    return list(__all__)
