"""The scripts shipped in deployments/<backend>/ are what the renderers produce."""

from pathlib import Path

import pytest
from scaleprobe.deployments import (
    render_local_script,
    render_mpirun_script,
    render_pbs_script,
    render_slurm_script,
)

ROOT = Path(__file__).resolve().parents[2] / "deployments"
SHIPPED = {
    "local/run.sh": lambda: render_local_script("campaign.yaml"),
    "mpirun/run_dask_mpi.sh": lambda: render_mpirun_script(
        "campaign.yaml", hostfile="hosts.txt"
    ),
    "mpirun/run_scheduler_file.sh": lambda: render_mpirun_script(
        "campaign.yaml", hostfile="hosts.txt", scheduler_file="scheduler.json"
    ),
    "slurm/scaleprobe.sbatch": lambda: render_slurm_script(
        "campaign.yaml", nodes=4, ppn=2, walltime="02:00:00"
    ),
    "slurm/scaleprobe_scheduler_file.sbatch": lambda: render_slurm_script(
        "campaign.yaml",
        nodes=4,
        ppn=2,
        walltime="02:00:00",
        scheduler_file="scheduler.json",
    ),
    "pbs/scaleprobe.pbs": lambda: render_pbs_script(
        "campaign.yaml", nodes=4, ppn=2, walltime="02:00:00"
    ),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_script_matches_renderer(name, bash_syntax):
    path = ROOT / name
    assert path.read_text() == SHIPPED[name](), f"regenerate {name} from its renderer"
    bash_syntax(path.read_text())


@pytest.mark.parametrize("backend", ["local", "mpirun", "slurm", "pbs", "netns"])
def test_every_backend_has_a_readme(backend):
    text = (ROOT / backend / "README.md").read_text()
    assert text.startswith("# ")
