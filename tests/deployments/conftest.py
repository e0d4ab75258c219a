"""Shared checks for rendered job scripts, and a private SLURM for the real tests."""

import shutil
import subprocess

import pytest
from _slurm_cluster import SlurmCluster, unavailable


@pytest.fixture
def bash_syntax():
    """Return a function that asserts a script parses with ``bash -n``."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")

    def check(script: str) -> None:
        result = subprocess.run(
            [bash, "-n"], input=script, text=True, capture_output=True, timeout=10
        )
        assert result.returncode == 0, result.stderr

    return check


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A single-node SLURM started for this session (skips where it cannot start)."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    cluster = SlurmCluster(str(tmp_path_factory.mktemp("slurm")), cpus=8)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
