"""Run a sweep on this machine: an embedded Dask ``LocalCluster`` and local ``mpiexec``.

The simplest deployment: ``scaleprobe run SPEC`` starts the cluster itself and prints
the dashboard link; kernels launch with the ``mpiexec`` of the active environment.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from ._script import activation_lines, positive_int, run_arguments

__all__ = ["render_local_script"]


def render_local_script(
    spec: str,
    *,
    workers: int | None = None,
    output: str | None = None,
    python_env: str | None = None,
    setup: Sequence[str] = (),
    dashboard_address: str | None = None,
) -> str:
    """Render a bash script that runs a sweep on an embedded local Dask cluster.

    Parameters
    ----------
    spec : str
        Path of the campaign YAML file.
    workers : int, optional
        Dask workers of the embedded cluster (``scaleprobe.cluster.workers`` if None).
        Launches are serialized anyway; extra workers serve analysis tasks.
    output : str, optional
        Results path, overriding the spec's ``output``.
    python_env : str, optional
        Virtual environment directory to activate, or ``conda:NAME``.
    setup : sequence of str, default=()
        Shell lines run first (``module load ...``).
    dashboard_address : str, optional
        Dashboard address of the embedded cluster (``":8787"``, ``":0"`` for any free
        port), set through ``DASK_SCALEPROBE__CLUSTER__DASHBOARD_ADDRESS``.

    Returns
    -------
    str
        The script text.

    Examples
    --------
    >>> script = render_local_script("pingpong.yaml", workers=2)
    >>> "scaleprobe run pingpong.yaml --workers 2" in script
    True
    """
    lines = [
        "#!/bin/bash",
        "# scaleprobe sweep on this machine (embedded Dask cluster)",
        "set -euo pipefail",
        "",
        *activation_lines(python_env, setup),
    ]
    if dashboard_address is not None:
        lines.append(
            "export DASK_SCALEPROBE__CLUSTER__DASHBOARD_ADDRESS="
            + shlex.quote(str(dashboard_address))
        )
    command = f"scaleprobe run {run_arguments(spec, output)}"
    if workers is not None:
        command += f" --workers {positive_int('workers', workers)}"
    lines += ["", command, ""]
    return "\n".join(lines)
