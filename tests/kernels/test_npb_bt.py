"""NPB BT: the Jacobians and the block solver against independent answers, NPB's
class S verification norms serially and on 1, 2 and 4 real MPI ranks."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scaleprobe.kernels.npb import _adi, bt
from scaleprobe.kernels.schema import Record

GBIT = 1.25e8


def _flux(u, normal):
    """The inviscid flux of ``u`` along the direction of momentum ``normal``."""
    rho = u[0]
    square = 0.5 * (u[1] ** 2 + u[2] ** 2 + u[3] ** 2) / rho
    velocity = u[normal] / rho
    flux = u * velocity
    flux[0] = u[normal]
    flux[normal] += _adi.C2 * (u[4] - square)
    flux[4] = (_adi.C1 * u[4] - _adi.C2 * square) * velocity
    return flux


@pytest.mark.parametrize("normal", [1, 2, 3])
def test_flux_jacobian_is_the_derivative_of_the_flux(normal):
    u = np.array([1.3, 0.4, -0.7, 0.2, 4.1])
    f, _ = bt.jacobians(u, normal)
    step = 1e-6
    numeric = np.column_stack(
        [
            (_flux(u + step * e, normal) - _flux(u - step * e, normal)) / (2 * step)
            for e in np.eye(5)
        ]
    )
    np.testing.assert_allclose(f, numeric, atol=1e-8)


def test_viscous_jacobian_is_the_derivative_of_the_viscous_flux():
    # NPB's viscous terms along x: c3c4 (4/3 du, dv, dw) of the velocities and,
    # for the energy, c3c4 ((4/3 - c1c5) u^2 + (1 - c1c5)(v^2 + w^2)) / 2 + c1345 e
    # / rho differentiated; N is the Jacobian of those with respect to u
    def viscous(u):
        v = u[1:4] / u[0]
        weights = np.array([_adi.CON43, 1.0, 1.0]) * _adi.C3C4
        energy = 0.5 * np.sum((weights - _adi.C1345) * v**2) + _adi.C1345 * u[4] / u[0]
        return np.concatenate([[0.0], weights * v, [energy]])

    u = np.array([1.3, 0.4, -0.7, 0.2, 4.1])
    _, n = bt.jacobians(u, 1)
    step = 1e-6
    numeric = np.column_stack(
        [
            (viscous(u + step * e) - viscous(u - step * e)) / (2 * step)
            for e in np.eye(5)
        ]
    )
    np.testing.assert_allclose(n, numeric, atol=1e-8)


def test_block_thomas_matches_a_dense_solve():
    rng = np.random.default_rng(7)
    length, lines = 6, 3
    lower, upper = (rng.normal(size=(length, lines, 5, 5)) for _ in range(2))
    diagonal = rng.normal(size=(length, lines, 5, 5)) + 12 * np.eye(5)
    rhs = rng.normal(size=(length, lines, 5))
    x = bt.block_thomas(lower, diagonal, upper, rhs)
    for line in range(lines):
        dense = np.zeros((5 * length, 5 * length))
        for i in range(length):
            block = slice(5 * i, 5 * i + 5)
            dense[block, block] = diagonal[i, line]
            if i > 0:
                dense[block, 5 * (i - 1) : 5 * i] = lower[i, line]
            if i < length - 1:
                dense[block, 5 * (i + 1) : 5 * (i + 2)] = upper[i, line]
        expected = np.linalg.solve(dense, rhs[:, line].reshape(-1))
        np.testing.assert_allclose(x[:, line].reshape(-1), expected, rtol=1e-12)


def test_exact_solution_is_a_steady_state_of_the_right_hand_side():
    # the forcing cancels R(u) of the exact solution: a step from it stays there
    n, dt = 12, 0.01
    exact = _adi.exact_field(n)
    solver = _adi.Solver(n, dt, _adi.Slabs(n, 1, 0), _adi._one_rank, bt.solve_lines)
    solver.u_z, solver.u_y = exact.copy(), exact.copy()
    solver.compute_rhs()
    assert np.abs(solver.rhs_z).max() < 1e-12
    assert np.abs(_adi.forcing_field(n, solver.constants)).max() > 1.0


def test_a_slab_builds_its_own_planes_of_the_fields():
    # a rank computes the initial field and the forcing of its planes only; they
    # are the whole grid's planes
    n = 12
    constants = _adi.Constants(n, 0.01)
    whole_forcing = _adi.forcing_field(n, constants)
    whole_field = _adi.initial_field(n)
    for lo, hi in [(0, 3), (3, 6), (9, 12), (5, 6)]:
        np.testing.assert_allclose(
            _adi.forcing_field(n, constants, lo, hi),
            whole_forcing[lo:hi],
            rtol=1e-13,
            atol=1e-13 * np.abs(whole_forcing).max(),
        )
        np.testing.assert_array_equal(
            _adi.initial_field(n, ks=slice(lo, hi)), whole_field[lo:hi]
        )
        np.testing.assert_array_equal(
            _adi.initial_field(n, js=slice(lo, hi)), whole_field[:, lo:hi]
        )


def test_slab_exchange_moves_every_plane_to_its_owner():
    n, size = 7, 3
    grid = np.arange(n**3 * 5, dtype=np.float64).reshape(n, n, n, 5)
    slabs = [_adi.Slabs(n, size, r) for r in range(size)]
    # every rank's send, and the receive it gets: a hand-run Alltoallv
    sends = []
    for s in slabs:
        captured = {}
        s.z_to_y(
            lambda send, receive, c=captured: c.update(send=send),
            grid[s.lo : s.hi],
            np.empty(s.y_shape()),
        )
        sends.append(captured["send"])
    for r, s in enumerate(slabs):
        out = np.empty(s.y_shape())
        pieces = []
        for data, counts in sends:
            start = int(np.sum(counts[:r]))
            pieces.append(data[start : start + counts[r]])
        out.reshape(-1)[:] = np.concatenate(pieces)
        np.testing.assert_array_equal(out, grid[:, s.lo : s.hi])
    assert [s.mine for s in slabs] == [3, 2, 2]


def test_bt_class_s_matches_npb_norms_serially():
    n, niter, dt, residual_reference, error_reference = bt.CLASSES["S"]
    residual, error = _adi.run_serial(n, dt, niter, bt.solve_lines)
    np.testing.assert_allclose(residual, residual_reference, rtol=bt.EPSILON)
    np.testing.assert_allclose(error, error_reference, rtol=bt.EPSILON)
    assert _adi.split_norm_check(residual, residual_reference, bt.EPSILON)[1] == 1.0
    # one step fewer is another field: NPB's check tells it
    residual, error = _adi.run_serial(n, dt, niter - 1, bt.solve_lines)
    assert _adi.split_norm_check(error, error_reference, bt.EPSILON)[1] == 0.0


@pytest.fixture
def kernel(mpi_run):
    def run(ranks, problem_class="S"):
        link = {"mode": "emulated", "link_bandwidth": GBIT, "latency": "5 us"}
        done = mpi_run(
            ranks,
            "-m",
            "scaleprobe.kernels.npb.bt",
            "--class",
            problem_class,
            env={"SCALEPROBE_LINK": json.dumps(link)},
        )
        return Record.parse(done.stdout).to_dict()

    return run


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_bt_class_s_verifies_on_ranks(kernel, ranks):
    record = kernel(ranks)
    assert record["status"] == "ok", record["reason"]
    metrics = record["metrics"]
    assert metrics["verified"] == 1.0
    n, niter, _, residual_reference, error_reference = bt.CLASSES["S"]
    for m in range(5):
        assert metrics[f"xcr{m + 1}"] == pytest.approx(residual_reference[m], rel=1e-8)
        assert metrics[f"xce{m + 1}"] == pytest.approx(error_reference[m], rel=1e-8)
    assert metrics["residual_error"] <= 1e-8
    assert metrics["stages"] == niter
    # three exchanges a step; a rank sends the others' share of its slab
    assert metrics["alltoallv_calls"] == 3 * niter
    profile = record["profiles"]["iteration"]
    mine = n // ranks
    assert profile["alltoallv_jobs"][0] == 3 * mine * (n - mine) * n
    assert metrics["working_set"] > 0
    assert metrics["mops"] > 0
    assert record["placement"]["ranks"] == ranks


def test_bt_refuses_more_ranks_than_planes():
    check = bt.KERNEL.checks[0]
    assert check({"class": "S"}, 13, 1) == (
        "NPB BT class S has 12 planes: at most 12 ranks, got 13"
    )
    assert check({"class": "S"}, 12, 1) == ""
    assert check({"class": "W"}, 24, 4) == ""
