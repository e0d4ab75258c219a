"""Deployment recipes: job scripts that run a scaleprobe sweep on a cluster.

Each backend renders its script as a plain string that a user saves and submits
(the folders ``local/``, ``mpirun/``, ``slurm/``, ``pbs/`` and ``netns/`` next to this
package hold ready-made copies and READMEs):

>>> from scaleprobe.deployments import render_slurm_script
>>> script = render_slurm_script("graph500.yaml", nodes=4, ntasks_per_node=2,
...                              time_limit="30 min", account="proj42")
>>> "#SBATCH -N 4" in script and "#SBATCH -A proj42" in script
True
"""

from .local import render_local_script
from .mpirun import dask_mpi_launch_line, render_mpirun_script
from .pbs import render_pbs_script
from .slurm import render_slurm_script

__all__ = [
    "dask_mpi_launch_line",
    "render_local_script",
    "render_mpirun_script",
    "render_pbs_script",
    "render_slurm_script",
]
