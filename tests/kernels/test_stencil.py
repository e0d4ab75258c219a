"""stencil.jacobi3d, stencil.advection3d: grid, patterns by hand, serial references."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scaleprobe.kernels.comm.pattern import place_nodes
from scaleprobe.kernels.schema import Record
from scaleprobe.kernels.stencil.advection3d import (
    advection_reference,
    advection_step,
    advection_sweep,
)
from scaleprobe.kernels.stencil.grid import (
    block,
    halo_pattern,
    jacobi_reference,
    neighbour,
    process_grid,
)


@pytest.mark.parametrize(
    ("ranks", "dims"),
    [(1, (1, 1, 1)), (4, (2, 2, 1)), (8, (2, 2, 2)), (16, (4, 2, 2)), (6, (3, 2, 1))],
)
def test_process_grid_is_balanced(ranks, dims):
    assert process_grid(ranks) == dims


def test_blocks_tile_the_domain():
    dims, shape = (3, 2, 1), (10, 7, 5)
    covered = np.zeros(shape, dtype=int)
    for rank in range(6):
        (x0, x1), (y0, y1), (z0, z1) = block(rank, dims, shape)
        covered[x0:x1, y0:y1, z0:z1] += 1
    assert np.all(covered == 1)


def test_neighbours_are_mutual_and_stop_at_the_boundary():
    dims = (2, 2, 1)
    assert neighbour(0, dims, (-1, 0, 0)) is None
    assert neighbour(0, dims, (1, 0, 0)) == 2
    assert neighbour(2, dims, (-1, 0, 0)) == 0
    assert neighbour(0, dims, (0, 0, 1)) is None


def test_halo_pattern_by_hand():
    # 4 ranks as 2x2x1 over 8x6x5 doubles: blocks 4x3x5; an x-face is 3*5 points,
    # a y-face 4*5; every rank has one x and one y neighbour.
    m = halo_pattern((8, 6, 5), 4).metrics(ppn=2)
    assert m["M"] == 2
    assert m["S"] == pytest.approx(8 * (15 + 20) / 2)
    # ranks 0,1 on node 0: 0<->2 (x) crosses, 0<->1 (y) stays: half the messages
    assert m["I"] == pytest.approx(0.5)
    assert m["NT"] == pytest.approx(m["PT"] * 2 * 0.5)


def test_reference_keeps_zero_outside():
    field = jacobi_reference((3, 3, 3), 1)
    assert field.shape == (3, 3, 3)
    assert np.all(np.isfinite(field))
    assert field[1, 1, 1] > 0


@pytest.fixture
def run(mpi_run):
    def launch(ranks, args, comm):
        done = mpi_run(
            ranks,
            "-m",
            "scaleprobe.kernels.stencil.jacobi3d",
            *args,
            env={"SCALEPROBE_LINK": json.dumps(comm)},
        )
        return Record.parse(done.stdout).to_dict()["metrics"]

    return launch


EMULATED = {
    "mode": "emulated",
    "link_bandwidth": 1.25e8,
    "latency": 5e-6,
    "core_slots": 0,
}


@pytest.mark.mpi
@pytest.mark.parametrize(("ranks", "ppn"), [(4, 1), (8, 2)])
def test_halos_match_the_serial_reference(run, ranks, ppn):
    metrics = run(
        ranks,
        ["--nx", "11", "--ny", "9", "--nz", "7", "--iterations", "4", "--check"],
        {**EMULATED, "ppn": ppn},
    )
    assert metrics["max_error"] < 1e-12
    expected = halo_pattern((11, 9, 7), ranks).metrics(ppn=ppn)
    assert metrics["NT"] == pytest.approx(expected["NT"])
    assert metrics["exchange_time"] > 0


@pytest.mark.mpi
def test_allocation_changes_switch_counts_not_traffic(run):
    common = [
        "--nx",
        "16",
        "--ny",
        "16",
        "--nz",
        "16",
        "--iterations",
        "2",
        "--nodes-per-switch",
        "2",
        "--machine-nodes",
        "64",
        "--allocation-seed",
        "3",
    ]
    compact = run(8, [*common, "--allocation", "compact"], {**EMULATED, "ppn": 1})
    spread = run(8, [*common, "--allocation", "random"], {**EMULATED, "ppn": 1})
    assert compact["SW"] == 4
    assert spread["SW"] > compact["SW"]
    assert spread["NT"] == compact["NT"]


# --- stencil.advection3d ---------------------------------------------------------


def test_wavefront_pattern_by_hand():
    # 8 ranks as 2x2x2 over 8^3: 4^3 blocks, 4x4 faces of doubles (128 B); only the
    # +x/+y/+z neighbours get one: 12 messages over 8 ranks. With ppn 2 the +z
    # neighbour (rank r+1 of an even r) is on the same node: 4 of 12 stay, I = 2/3.
    m = halo_pattern((8, 8, 8), 8, downstream=True).metrics(ppn=2)
    assert (m["S"], m["M"]) == (128, 1.5)
    assert m["I"] == pytest.approx(2 / 3)
    assert m["NT"] == pytest.approx(128 * 1.5 * 2 * 2 / 3)
    both = halo_pattern((8, 8, 8), 8).metrics(ppn=2)
    assert both["M"] == 2 * m["M"]


def test_advection_sweep_matches_a_point_by_point_loop():
    rng = np.random.default_rng(1)
    field = rng.random((5, 4, 6))
    loop = field.copy()
    for i in range(1, 4):
        for j in range(1, 3):
            for k in range(1, 5):
                upstream = loop[i - 1, j, k] + loop[i, j - 1, k] + loop[i, j, k - 1]
                loop[i, j, k] = (loop[i, j, k] + 0.5 * upstream) / 2.5
    swept = advection_sweep(field.copy(), 0.5)
    assert np.allclose(swept, loop, rtol=0, atol=1e-15)
    assert np.array_equal(swept[0], field[0])  # ghosts are read, never written


def test_explicit_advection_step_matches_a_point_by_point_loop():
    rng = np.random.default_rng(2)
    field = rng.random((5, 4, 6))
    loop = field.copy()
    for i in range(1, 4):
        for j in range(1, 3):
            for k in range(1, 5):
                upstream = field[i - 1, j, k] + field[i, j - 1, k] + field[i, j, k - 1]
                loop[i, j, k] = field[i, j, k] - 0.25 * (3 * field[i, j, k] - upstream)
    stepped = advection_step(field.copy(), 0.25)
    assert np.allclose(stepped, loop, rtol=0, atol=1e-15)
    assert np.array_equal(stepped[0], field[0])  # ghosts are read, never written


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("ranks", "ppn", "allocation", "scheme"),
    [(4, 1, "compact", "sweep"), (8, 2, "random", "explicit")],
)
def test_advection_wavefront_matches_the_serial_computation(
    mpi_run, ranks, ppn, allocation, scheme
):
    shape = (11, 9, 7)
    done = mpi_run(
        ranks,
        "-m",
        "scaleprobe.kernels.stencil.advection3d",
        "--nx",
        11,
        "--ny",
        9,
        "--nz",
        7,
        "--iterations",
        4,
        "--check",
        "--allocation",
        allocation,
        "--machine-nodes",
        64,
        "--nodes-per-switch",
        2,
        "--allocation-seed",
        3,
        "--scheme",
        scheme,
        env={"SCALEPROBE_LINK": json.dumps({**EMULATED, "ppn": ppn})},
    )
    record = Record.parse(done.stdout).to_dict()
    assert (record["link"]["mode"], record["link"]["ppn"]) == ("emulated", ppn)
    metrics = record["metrics"]
    # bit-identical: each point sees the same upstream values in the same order
    assert metrics["max_error"] == 0.0
    # a field worth comparing
    assert np.ptp(advection_reference(shape, 4, scheme)) > 0.1
    expected = halo_pattern(shape, ranks, downstream=True).metrics(
        ppn=ppn,
        placement=place_nodes(
            ranks // ppn, allocation=allocation, machine_nodes=64, seed=3
        ),
        nodes_per_switch=2,
    )
    for name in ("S", "M", "PPN", "N", "I", "NT", "V", "NI", "SW"):
        assert metrics[name] == pytest.approx(expected[name]), name
    assert metrics["SW"] == (2 if allocation == "compact" else 4)
    assert metrics["exchange_time"] > 0
