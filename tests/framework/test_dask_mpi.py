"""``--dask-mpi`` boots without spinning ranks and never waits for a dead scheduler."""

import os
import sys
import textwrap

import pytest
import yaml

pytestmark = pytest.mark.mpi
SCALEPROBE = os.path.join(os.path.dirname(sys.executable), "scaleprobe")

WAITER = textwrap.dedent(
    """\
    import resource, sys, time
    from mpi4py import MPI
    from scaleprobe.framework.cluster import _encode, _receive_address

    def cpu():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    comm = MPI.COMM_WORLD
    if comm.Get_rank() == 0:
        time.sleep(3)  # a scheduler that takes its time to start
        comm.Ibcast(_encode("tcp://10.1.2.3:8786"), root=0).Wait()
    else:
        before = cpu()
        address = _receive_address(comm)
        # a file per rank: what the ranks print reaches mpiexec's stdout in pieces
        with open(f"{sys.argv[1]}/rank{comm.Get_rank()}.txt", "w") as out:
            out.write(f"{address} {cpu() - before}")
    """
)


def test_ranks_waiting_for_a_slow_scheduler_receive_its_address(tmp_path, mpi_run):
    script = tmp_path / "waiter.py"
    script.write_text(WAITER)
    mpi_run(3, sys.executable, script, tmp_path, timeout=120)
    received = {
        rank: (tmp_path / f"rank{rank}.txt").read_text().split()[0] for rank in (1, 2)
    }
    assert received == {1: "tcp://10.1.2.3:8786", 2: "tcp://10.1.2.3:8786"}
    assert not (tmp_path / "rank0.txt").exists()


def test_a_waiting_rank_sleeps_between_tests_of_the_broadcast(monkeypatch):
    """A blocking broadcast polls and takes a core; the wait tests and sleeps."""
    from scaleprobe.framework import cluster

    calls = []

    class Request:
        def __init__(self, buffer):
            self.buffer = buffer

        def Test(self):  # noqa: N802 - mpi4py's name
            calls.append("test")
            if calls.count("test") < 4:
                return False
            self.buffer[:7] = b"tcp://x"
            return True

    class Comm:
        def Ibcast(self, buffer, root):  # noqa: N802 - mpi4py's name
            assert root == 0
            return Request(buffer)

    monkeypatch.setattr(cluster.time, "sleep", lambda s: calls.append(("sleep", s)))
    assert cluster._receive_address(Comm()) == "tcp://x"
    sleep = ("sleep", cluster.POLL)
    assert calls == ["test", sleep, "test", sleep, "test", sleep, "test"]


@pytest.mark.slow
def test_a_scheduler_that_cannot_start_ends_the_whole_job(tmp_path, mpi_run):
    spec = {
        "name": "no-scheduler",
        "kernel": "commbench.compute",
        "params": {"total_work": 10},
        "sweep": {"nodes": [1]},
        "throttle": {"mode": "none"},
        "output": str(tmp_path / "out.zarr"),
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    # The other ranks used to wait in the broadcast for ever; now the job aborts.
    done = mpi_run(
        3,
        SCALEPROBE,
        "run",
        "--dask-mpi",
        path,
        env={"DASK_SCALEPROBE__CLUSTER__DASK_MPI_INTERFACE": "nosuchif0"},
        timeout=180,
        check=False,
    )
    assert done.returncode != 0
    assert "Dask scheduler of MPI rank 0 could not start" in done.stderr
    assert "'nosuchif0' is not a valid network interface" in done.stderr
    assert not (tmp_path / "out.zarr").exists()
