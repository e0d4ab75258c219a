"""Shared checks for rendered job scripts, and a private SLURM for the real tests."""

import shutil
import subprocess

import pytest
from _slurm_cluster import SlurmCluster, unavailable
from _system import missing
from scaleprobe.framework.jobqueue import _dask_jobqueue

# dask-jobqueue registers its config defaults when first imported: imported here,
# they are in the config every test starts with (tests/conftest.py restores it);
# imported so that the test process keeps its Ctrl-C handler
_dask_jobqueue()

#: The private SLURM: nodes of CPUs each (16 CPUs on a 2-core host: SLURM
#: allocates CPUs it is told of, and the tests' ranks are light).
SLURM_NODES, SLURM_CPUS = 4, 4


@pytest.fixture
def bash_syntax():
    """Return a function that asserts a script parses with ``bash -n``."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip(missing("bash"))

    def check(script: str) -> None:
        result = subprocess.run(
            [bash, "-n"], input=script, text=True, capture_output=True, timeout=10
        )
        assert result.returncode == 0, result.stderr

    return check


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A SLURM of 4 nodes (4 slurmd on this host) of 4 CPUs, started for this session.

    Skips where it cannot start, and says why; under ``CI=true`` that is an error.
    """
    reason = unavailable()
    if reason is not None:
        pytest.skip(missing(reason))
    cluster = SlurmCluster(
        str(tmp_path_factory.mktemp("slurm")), cpus=SLURM_CPUS, nodes=SLURM_NODES
    )
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
