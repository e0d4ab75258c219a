"""NPB SP: the pentadiagonal solver against a dense solve, NPB's class S verification
norms serially and on 1, 2 and 4 real MPI ranks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scaleprobe.kernels.npb import _adi, sp
from scaleprobe.kernels.schema import Record

GBIT = 1.25e8


def test_pentadiagonal_matches_a_dense_solve():
    rng = np.random.default_rng(11)
    length, lines = 7, 4
    a, b, d, e = (rng.normal(size=(length, lines)) for _ in range(4))
    c = rng.normal(size=(length, lines)) + 10.0
    r = rng.normal(size=(length, lines))
    x = sp.pentadiagonal(a.copy(), b.copy(), c.copy(), d.copy(), e.copy(), r.copy())
    for line in range(lines):
        dense = np.zeros((length, length))
        for i in range(length):
            for offset, diagonal in zip(range(-2, 3), (a, b, c, d, e), strict=True):
                if 0 <= i + offset < length:
                    dense[i, i + offset] = diagonal[i, line]
        np.testing.assert_allclose(
            x[:, line], np.linalg.solve(dense, r[:, line]), rtol=1e-12
        )


def test_sp_class_s_matches_npb_norms_serially():
    n, niter, dt, residual_reference, error_reference = sp.CLASSES["S"]
    residual, error = _adi.run_serial(n, dt, niter, sp.solve_lines)
    np.testing.assert_allclose(residual, residual_reference, rtol=1e-8)
    np.testing.assert_allclose(error, error_reference, rtol=1e-8)


def test_sp_refuses_more_ranks_than_planes():
    check = sp.KERNEL.checks[0]
    assert check({"class": "S"}, 13, 1) == (
        "NPB SP class S has 12 planes: at most 12 ranks, got 13"
    )
    assert check({"class": "W"}, 36, 1) == ""


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_sp_class_s_verifies_on_ranks(mpi_run, ranks):
    link = {"mode": "emulated", "link_bandwidth": GBIT, "latency": "5 us"}
    done = mpi_run(
        ranks,
        "-m",
        "scaleprobe.kernels.npb.sp",
        "--class",
        "S",
        env={"SCALEPROBE_LINK": json.dumps(link)},
    )
    record = Record.parse(done.stdout).to_dict()
    assert record["status"] == "ok", record["reason"]
    metrics = record["metrics"]
    assert metrics["verified"] == 1.0
    n, niter, _, residual_reference, error_reference = sp.CLASSES["S"]
    for m in range(5):
        assert metrics[f"xcr{m + 1}"] == pytest.approx(residual_reference[m], rel=1e-8)
        assert metrics[f"xce{m + 1}"] == pytest.approx(error_reference[m], rel=1e-8)
    assert metrics["stages"] == niter
    assert metrics["alltoallv_calls"] == 3 * niter
    mine = n // ranks
    assert record["profiles"]["iteration"]["alltoallv_jobs"][0] == (
        3 * mine * (n - mine) * n
    )
    assert metrics["working_set"] > 0
