"""The SMPI programs and fat tree of ``bench_commpredictor_smpi.py``, run for real.

The benchmark judges the communication predictor on traces that SimGrid's SMPI makes
from two C programs on a fat tree: these tests compile the programs with ``smpicc``,
run them under ``smpirun`` and check that the stencil program sends exactly the
pattern scaleprobe describes, and that the platform's leaf uplinks are
oversubscribed (a known 4:1).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from _system import missing
from scaleprobe.kernels.stencil.grid import halo_pattern

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
PLATFORM = BENCHMARKS / "smpi_fattree.xml"

pytestmark = pytest.mark.skipif(
    shutil.which("smpicc") is None or shutil.which("smpirun") is None,
    reason=missing(
        "SimGrid's smpicc and smpirun (apt-get install libsimgrid-dev simgrid)"
    ),
)


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("smpi")
    binaries = {}
    for name in ("stencil", "random_pingpong"):
        binaries[name] = folder / name
        subprocess.run(
            [
                "smpicc",
                "-O2",
                str(BENCHMARKS / f"smpi_{name}.c"),
                "-o",
                str(binaries[name]),
            ],
            check=True,
            capture_output=True,
        )
    return folder, binaries


def _run(folder, binary, hosts, arguments, config=()):
    hostfile = folder / "hosts"
    hostfile.write_text("".join(f"node-{h}\n" for h in hosts))
    done = subprocess.run(
        ["smpirun", "-np", str(len(hosts)), "-platform", str(PLATFORM),
         "-hostfile", str(hostfile), "--cfg=smpi/simulate-computation:no",
         "--log=root.thres:critical", *config, str(binary), *map(str, arguments)],
        capture_output=True, text=True, timeout=300, check=False, cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()}


@pytest.mark.parametrize("kernel", ["jacobi3d", "advection3d"])
@pytest.mark.parametrize(("shape", "ranks"), [((20, 16, 12), 12), ((9, 7, 30), 18)])
def test_the_stencil_program_sends_the_described_halo(programs, kernel, shape, ranks):
    """Uneven blocks and grids: messages and bytes equal ``halo_pattern``'s."""
    folder, binaries = programs
    words = _run(folder, binaries["stencil"], range(ranks), [kernel, *shape, 3, 1])
    pattern = halo_pattern(shape, ranks, downstream=kernel == "advection3d")
    assert int(words["messages"][0]) == int(pattern.counts.sum())
    assert int(words["messages"][2]) == int(pattern.sizes.sum())
    assert float(words["exchange_time"][0]) > 0


def test_the_fat_tree_leaf_uplinks_are_oversubscribed_four_to_one(programs, tmp_path):
    """16 pairs exchange 4 MiB inside their leaves, then across two leaves.

    Rank r and rank r + 16 are partners, one rank per host; hosts 0-15 and 16-31 sit
    on two leaves. Inside a leaf every flow has its own host links; across the two
    leaves 16 flows each way share a leaf's 4 uplinks, so the exchange takes about 4
    times as long.
    """
    folder, binaries = programs
    partners = tmp_path / "partners.txt"
    partners.write_text("32 1\n" + "".join(f"{(r + 16) % 32}\n" for r in range(32)))
    placements = {
        "leaf": [*range(0, 8), *range(16, 24), *range(8, 16), *range(24, 32)],
        "across": list(range(32)),
    }
    times = {}
    for where, hosts in placements.items():
        leaves = np.array(hosts) // 16
        crossing = leaves[:16] != leaves[16:]
        assert set(crossing.tolist()) == {where == "across"}
        words = _run(
            folder, binaries["random_pingpong"], hosts, [partners, 1 << 22, 3, 1]
        )
        times[where] = float(words["exchange_time"][0])
    assert 3.0 < times["across"] / times["leaf"] < 5.0, times


IDEAL = [
    "--cfg=smpi/bw-factor:0:1",
    "--cfg=smpi/lat-factor:0:1",
    "--cfg=network/bandwidth-factor:1",
    "--cfg=network/latency-factor:1",
    "--cfg=network/weight-S:0",
    "--cfg=network/crosstraffic:0",
]


@pytest.mark.parametrize("size", [1024, 1 << 20])
def test_aligned_starts_give_the_ideal_link_time(programs, tmp_path, size):
    """Two hosts of one leaf: two links of 1 us and 10 Gbit/s between them.

    With SMPI's corrections off and the exchanges started at one instant, a pair's
    exchange takes latency + bytes / bandwidth (SimGrid adds 22 ns); after a plain
    barrier the later rank's start is added for its partner.
    """
    folder, binaries = programs
    partners = tmp_path / "partners.txt"
    partners.write_text("2 1\n1\n0\n")
    times = {}
    for start in ("aligned", "barrier"):
        words = _run(
            folder,
            binaries["random_pingpong"],
            [0, 1],
            [partners, size, 3, 1, *(["aligned"] if start == "aligned" else [])],
            config=IDEAL,
        )
        times[start] = float(words["exchange_time"][0])
    assert times["aligned"] == pytest.approx(2e-6 + size / 1.25e9, rel=0.01)
    assert times["barrier"] > times["aligned"] + 0.5e-6
