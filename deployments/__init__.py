"""Deployment recipes: job scripts that run a scaleprobe sweep on a cluster.

Each backend renders its script as a plain string that a user saves and submits
(the folders ``local/``, ``mpirun/``, ``slurm/``, ``pbs/`` and ``netns/`` next to this
package hold ready-made copies and READMEs):

>>> from scaleprobe.deployments import render_slurm_script
>>> script = render_slurm_script("graph500.yaml", nodes=4, ppn=2,
...                              walltime="30 min", account="proj42")
>>> "#SBATCH -N 4" in script and "#SBATCH -A proj42" in script
True

Names are imported on first use (:pep:`562`): rendering a script never loads Dask's
scheduler or xarray.
"""

from __future__ import annotations

import importlib

#: Public name -> submodule that defines it.
_EXPORTS = {
    "dask_mpi_launch_line": "mpirun",
    "render_local_script": "local",
    "render_mpirun_script": "mpirun",
    "render_pbs_script": "pbs",
    "render_slurm_script": "slurm",
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
