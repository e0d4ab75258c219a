"""A point that runs out of time under ``srun``: the step ends, no rank is left.

The launch runs under the guard (``framework/_guard.py``), which leads the process
group and dies at once on SIGTERM; ``srun``, in the same group, needs its grace to
signal the step's tasks and wait for them. Killed at once, it leaves the step to
SLURM, and its ranks run on while the next point starts on the same cores.
"""

import subprocess

import dask
import pytest
from scaleprobe.framework.launch import launch_point
from scaleprobe.framework.launcher import check_launcher
from scaleprobe.framework.planning import plan
from scaleprobe.framework.settings import LaunchSettings
from scaleprobe.framework.spec import load_spec

pytestmark = [pytest.mark.slurm, pytest.mark.mpi]

HANG = "commbench.fault --behaviour hang"


def test_a_point_that_hangs_under_srun_ends_its_step_before_the_next(
    slurm, monkeypatch
):
    monkeypatch.setenv("SLURM_CONF", slurm.conf)
    spec = load_spec(
        {
            "name": "srun-timeout",
            "kernel": "commbench.fault",
            "params": {"behaviour": "hang"},
            "sweep": {"nodes": [2], "ppn": [2]},
            "throttle": {"mode": "none"},
            "timeout": 5,
        }
    )
    with dask.config.set({"scaleprobe.launch.launcher": "srun"}):
        settings = check_launcher(spec, LaunchSettings.from_config())
    result = launch_point(spec, plan(spec)[0], settings=settings)
    assert result["command"][0] == "srun"
    assert result["status"] == "timeout"
    # when the launch returns, the step has ended and none of its ranks runs
    left = subprocess.run(["pgrep", "-f", HANG], capture_output=True, text=True)
    assert left.stdout.strip() == ""
    steps = slurm.run("squeue", "-h", "-s").stdout
    assert steps.strip() == "", steps  # the tests of a session run one at a time
