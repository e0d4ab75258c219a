"""Ranks that wait in a collective while others compute sleep instead of spinning.

With core slots the ranks of a host take turns on its cores; a rank that spun in
MPI while it waited for a rank still computing would take the core that rank needs.
"""

from __future__ import annotations

import json
import sys

import pytest
from scaleprobe.kernels.comm import _cores


class FakeRequest:
    """A request that completes at the ``done``-th test."""

    def __init__(self, done):
        self.done = done
        self.tests = 0

    def Test(self, status=None):  # noqa: N802 - mpi4py naming
        self.tests += 1
        return self.tests >= self.done


def test_idle_wait_tests_and_sleeps_backing_off(monkeypatch):
    sleeps = []
    monkeypatch.setattr(_cores.time, "sleep", sleeps.append)
    request = FakeRequest(done=10)
    _cores.idle_wait(request, longest=1e-3)
    assert request.tests == 10
    assert sleeps == pytest.approx(
        [1e-5, 2e-5, 4e-5, 8e-5, 1.6e-4, 3.2e-4, 6.4e-4, 1e-3, 1e-3]
    )


def test_a_long_wait_sleeps_a_twentieth_of_the_time_waited(monkeypatch):
    now = [0.0]
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(_cores.time, "sleep", sleep)
    monkeypatch.setattr(_cores.time, "perf_counter", lambda: now[0])
    _cores.idle_wait(FakeRequest(done=3000))
    waited = 0.0
    for pause in sleeps:
        # never later than 5 % of the wait (or 1 ms), never more than 50 ms
        assert pause <= max(1e-3, 0.05 * waited) + 1e-12
        assert pause <= 0.05
        waited += pause
    assert sleeps[-1] == pytest.approx(0.05)  # 3000 tests: long enough to reach it
    assert len(sleeps) == 2999


def test_idle_wait_of_a_done_request_does_not_sleep(monkeypatch):
    sleeps = []
    monkeypatch.setattr(_cores.time, "sleep", sleeps.append)
    _cores.idle_wait(FakeRequest(done=1))
    assert sleeps == []


SCRIPT = r"""
import json, time
import numpy as np
from mpi4py import MPI
from scaleprobe.kernels.comm import InstrumentedComm

def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

comm = InstrumentedComm.from_environment(MPI.COMM_WORLD)
r, p = comm.rank, comm.size
BURN = 0.8

def measured(call):
    cpu, wall = time.process_time(), time.perf_counter()
    call()
    return [time.process_time() - cpu, time.perf_counter() - wall]

def allreduce():
    if r == 0:
        burn(BURN)
    comm.Allreduce(np.ones(4), np.empty(4))

out = {}
for name, call in [("allreduce", allreduce),
                   ("summary", lambda: burn(BURN * (r == 0)) or comm.summary())]:
    # a waiting rank waits in the call or for the slot when the call returns
    out[name] = measured(lambda: (comm.sync(), call(), comm.sync()))
table = comm.gather(out, root=0)
if r == 0:
    print("RESULT " + json.dumps(table))
comm.close()
"""


@pytest.mark.mpi
def test_ranks_waiting_for_a_computing_rank_sleep(mpi_run, tmp_path):
    script = tmp_path / "idle.py"
    script.write_text(SCRIPT)
    comm = {"mode": "emulated", "core_slots": 1, "slot_dir": str(tmp_path / "slots")}
    done = mpi_run(3, sys.executable, script, env={"SCALEPROBE_LINK": json.dumps(comm)})
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    table = json.loads(line[len("RESULT ") :])
    for rank in (1, 2):
        for call, (cpu, wall) in table[rank].items():
            # each waited for rank 0's 0.8 s of computation, in the call or for
            # the core slot ...
            assert wall > 0.6, (rank, call, wall)
            # ... sleeping: a spinning wait uses most of a core for as long
            assert cpu < 0.2 * wall, (rank, call, cpu, wall)
