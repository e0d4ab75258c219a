"""NPB LU: the sweeps against a dense triangular solve, the surface integral by
hand, NPB's class S verification values serially and on 1, 2 and 4 real MPI ranks,
and a failed verification."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scaleprobe.kernels.npb import _adi, _lu_sweep, lu
from scaleprobe.kernels.schema import Record

GBIT = 1.25e8


def _field(n, seed=3):
    """A positive-density field near the initial one, with some noise."""
    rng = np.random.default_rng(seed)
    u = _adi.initial_field(n)
    return u * (1.0 + 0.05 * rng.uniform(-1.0, 1.0, size=u.shape))


def _dense_operators(u, constants, omega):
    """``D``, ``D + omega L`` and ``D + omega U`` over the interior points, dense."""
    n = u.shape[0]
    inner = [(k, j, i) for k in range(1, n - 1) for j in range(1, n - 1)
             for i in range(1, n - 1)]  # fmt: skip
    index = {p: a for a, p in enumerate(inner)}
    size = 5 * len(inner)
    diagonal = np.zeros((size, size))
    for p, a in index.items():
        diagonal[5 * a : 5 * a + 5, 5 * a : 5 * a + 5] = _lu_sweep.diagonal_block(
            u[p], constants
        )
    lower, upper = diagonal.copy(), diagonal.copy()
    for p, a in index.items():
        for axis in range(3):
            for sign, target in ((-1, lower), (1, upper)):
                q = list(p)
                q[axis] += sign
                q = tuple(q)
                if q in index:
                    b = index[q]
                    block = _lu_sweep.neighbour_block(u[q], axis, constants, sign)
                    target[5 * a : 5 * a + 5, 5 * b : 5 * b + 5] = omega * block
    return inner, diagonal, lower, upper


def test_sweeps_solve_the_ssor_system():
    # lower then upper sweep = (D + wU)^-1 D (D + wL)^-1 rhs, by a dense solve
    n, omega = 6, lu.OMEGA
    constants = _adi.Constants(n, 0.5)
    u = _field(n)
    rng = np.random.default_rng(5)
    v = np.zeros_like(u)
    v[1:-1, 1:-1, 1:-1] = rng.normal(size=(n - 2, n - 2, n - 2, 5))
    inner, diagonal, lower, upper = _dense_operators(u, constants, omega)
    rhs = np.concatenate([v[p] for p in inner])
    expected = np.linalg.solve(upper, diagonal @ np.linalg.solve(lower, rhs))
    box = _lu_sweep.Box(n, 1, n - 1, 1, n - 1)
    _lu_sweep.lower_sweep(box, u, v, constants, omega)
    _lu_sweep.upper_sweep(box, u, v, constants, omega)
    got = np.concatenate([v[p] for p in inner])
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    # the faces are not touched
    assert not v[0].any()
    assert not v[:, :, -1].any()


def test_boxes_of_rows_give_the_whole_sweep():
    # sweeping row blocks one after another (the pipeline's order) is exact
    n, omega = 7, lu.OMEGA
    constants = _adi.Constants(n, 0.5)
    u = _field(n, seed=9)
    v = np.zeros_like(u)
    v[1:-1, 1:-1, 1:-1] = np.random.default_rng(2).normal(size=(5, 5, 5, 5))
    whole, parts = v.copy(), v.copy()
    _lu_sweep.lower_sweep(_lu_sweep.Box(n, 1, n - 1, 1, n - 1), u, whole, constants,
                          omega)  # fmt: skip
    for a, b in ((1, 3), (3, 4), (4, 6)):
        _lu_sweep.lower_sweep(_lu_sweep.Box(n, 1, n - 1, a, b), u, parts, constants,
                              omega)  # fmt: skip
    np.testing.assert_allclose(parts, whole, rtol=1e-13)


def test_hyperplanes_cover_the_box_in_order():
    box = _lu_sweep.Box(6, 2, 4, 1, 5)
    levels = box.k + box.j + box.i
    assert box.k.size == 2 * 4 * 4
    assert np.all(np.diff(levels) >= 0)
    for p in box.planes:
        assert len(set(levels[p].tolist())) == 1


def test_surface_integral_of_a_linear_pressure():
    # phi = x on a 7-point grid: the corners' mean times a cell's area integrates
    # it exactly. NPB's faces: the k planes (x over [1/6, 5/6], y over [1/6, 4/6]),
    # the j planes (x over [1/6, 5/6], z over [2/6, 5/6]) and the i planes at
    # x = 1/6 and 5/6 (y over [1/6, 4/6], z over [2/6, 5/6]): 1/3 + 1/3 + 1/4
    n = 7
    x = np.arange(n) / (n - 1)
    phi = np.broadcast_to(x[None, None, :], (n, n, n))
    mean_x = 0.5
    k_faces = 2 * mean_x * (4 / 6) * (3 / 6)
    j_faces = 2 * mean_x * (4 / 6) * (3 / 6)
    i_faces = (1 / 6 + 5 / 6) * (3 / 6) * (3 / 6)
    expected = k_faces + j_faces + i_faces
    assert expected == pytest.approx(11 / 12)
    assert lu.surface_integral(phi) == pytest.approx(expected, rel=1e-13)


def test_lu_class_s_matches_npb_values_serially():
    n, niter, dt, residual_ref, error_ref, integral_ref = lu.CLASSES["S"]
    residual, error, integral = lu.run_serial(n, dt, niter)
    np.testing.assert_allclose(residual, residual_ref, rtol=lu.EPSILON)
    np.testing.assert_allclose(error, error_ref, rtol=lu.EPSILON)
    assert integral == pytest.approx(integral_ref, rel=lu.EPSILON)
    metrics, reason = lu._verdict(residual, error, integral, lu.CLASSES["S"])
    assert metrics["verified"] == 1.0
    assert reason == ""
    # one step fewer is another field: NPB's check tells it
    residual, error, integral = lu.run_serial(n, dt, niter - 1)
    metrics, reason = lu._verdict(residual, error, integral, lu.CLASSES["S"])
    assert metrics["verified"] == 0.0
    assert reason.startswith("NPB LU verification failed: residual norms [")


@pytest.fixture
def kernel(mpi_run):
    def run(ranks, problem_class="S"):
        link = {"mode": "emulated", "link_bandwidth": GBIT, "latency": "5 us"}
        done = mpi_run(
            ranks,
            "-m",
            "scaleprobe.kernels.npb.lu",
            "--class",
            problem_class,
            env={"SCALEPROBE_LINK": json.dumps(link)},
        )
        return Record.parse(done.stdout).to_dict()

    return run


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_lu_class_s_verifies_on_ranks(kernel, ranks):
    record = kernel(ranks)
    assert record["status"] == "ok", record["reason"]
    metrics = record["metrics"]
    assert metrics["verified"] == 1.0
    n, niter, _, residual_ref, error_ref, integral_ref = lu.CLASSES["S"]
    for m in range(5):
        assert metrics[f"xcr{m + 1}"] == pytest.approx(residual_ref[m], rel=1e-8)
        assert metrics[f"xce{m + 1}"] == pytest.approx(error_ref[m], rel=1e-8)
    assert metrics["xci"] == pytest.approx(integral_ref, rel=1e-8)
    assert metrics["integral_error"] <= 1e-8
    assert metrics["stages"] == niter
    # two exchanges a step: the z terms back, the update out
    assert metrics["alltoallv_calls"] == 2 * niter
    profile = record["profiles"]["iteration"]
    mine = n // ranks
    assert profile["alltoallv_jobs"][0] == 2 * mine * (n - mine) * n
    assert metrics["working_set"] > 0
    assert metrics["mops"] > 0
    assert record["placement"]["ranks"] == ranks


def test_lu_refuses_more_ranks_than_planes():
    check = lu.KERNEL.checks[0]
    assert check({"class": "S"}, 13, 1) == (
        "NPB LU class S has 12 planes: at most 12 ranks, got 13"
    )
    assert check({"class": "W"}, 33, 4) == ""
