"""NPB BT, SP and LU at a step count of the user's (NPB's ``niter`` of its input
files): real MPI runs of class S on 1 and 2 ranks record the steps run, their
``cell_steps`` and "not verified", with the field the serial solver reaches after
those steps; at the class's own count they verify."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scaleprobe.kernels.npb import _adi, bt, lu, sp
from scaleprobe.kernels.schema import Record

GBIT = 1.25e8
MODULES = {"bt": bt, "sp": sp, "lu": lu}


@pytest.fixture
def kernel(mpi_run):
    def run(name, ranks, *flags):
        link = {"mode": "emulated", "link_bandwidth": GBIT, "latency": "5 us"}
        done = mpi_run(
            ranks,
            "-m",
            f"scaleprobe.kernels.npb.{name}",
            "--class",
            "S",
            *flags,
            env={"SCALEPROBE_LINK": json.dumps(link)},
        )
        return Record.parse(done.stdout).to_dict()

    return run


def _serial(name, steps):
    """The residual and error norms after ``steps`` steps of class S, serially."""
    n, _, dt = MODULES[name].CLASSES["S"][:3]
    if name == "lu":
        return lu.run_serial(n, dt, steps)[:2]
    return _adi.run_serial(n, dt, steps, MODULES[name].solve_lines)


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("name", ["bt", "sp", "lu"])
def test_a_step_count_of_the_users_runs_unverified(kernel, name, ranks):
    record = kernel(name, ranks, "--steps", 3)
    assert record["status"] == "ok", record["reason"]
    assert record["parameters"]["steps"] == 3
    metrics = record["metrics"]
    assert metrics["niter"] == 3
    assert metrics["stages"] == 3
    assert metrics["cell_steps"] == 12**3 * 3
    # NPB's values hold at 60 (BT), 100 (SP), 50 (LU) steps: not verified, not failed
    assert metrics["verified"] is None or math.isnan(metrics["verified"])
    assert not record.get("reason")
    residual, error = _serial(name, 3)
    computed = [metrics[f"xcr{m}"] for m in range(1, 6)]
    np.testing.assert_allclose(computed, residual, rtol=1e-10)
    np.testing.assert_allclose([metrics[f"xce{m}"] for m in range(1, 6)], error, 1e-10)
    if name == "lu":
        assert metrics["integral_error"] is None or math.isnan(
            metrics["integral_error"]
        )


@pytest.mark.mpi
def test_the_classs_own_step_count_given_verifies(kernel):
    niter = bt.CLASSES["S"][1]
    record = kernel("bt", 2, "--steps", niter)
    assert record["status"] == "ok", record["reason"]
    assert record["metrics"]["verified"] == 1.0
    assert record["metrics"]["cell_steps"] == 12**3 * niter


def test_the_steps_parameter_is_an_integer_of_at_least_one():
    steps = {p.name: p for p in bt.KERNEL.parameters}["steps"]
    assert steps.problem(0) == "--steps must be at least 1, got 0 (an integer >= 1)"
    assert _adi.steps_run({"class": "W", "steps": None}, sp.CLASSES) == (400, True)
    assert _adi.steps_run({"class": "W", "steps": 7}, lu.CLASSES) == (7, False)
