"""The emulated network against SimGrid's SMPI, an independent flow-level simulator.

The same random non-blocking ping-pong (``commbench.random_pingpong``: the same seeded
matchings, barrier, Irecv/Isend/Waitall, third quartile per rank, largest over ranks)
runs twice: as the Python kernel on scaleprobe's emulated network, and as a small C
program (``smpi_random_pingpong.c``, compiled here with ``smpicc``) under ``smpirun``
on a platform file written from the same machine description: one host per job node,
a full-duplex NIC link per host (``SPLITDUPLEX``, half the latency each way), a full-
duplex uplink per leaf switch and per rack, and every route written out (``Full``
routing). SMPI's network model normally corrects bandwidth and latency by
message-size factors, weighs flows by their round-trip time and adds reverse
acknowledgement traffic; all of that is switched off here (``smpi/bw-factor:0:1``,
``smpi/lat-factor:0:1``, ``network/bandwidth-factor:1``, ``network/latency-factor:1``,
``network/weight-S:0``, ``network/crosstraffic:0``) so both sides model the same
ideal links, and computation is not simulated (``smpi/simulate-computation:no``).
The emulated times include the ranks' real Python CPU time between calls (posting
the requests), which is why small messages differ most.

Patterns: 1, 2 and 4 partners; 1, 2, 4 and 8 ranks per node (8 nodes, 4 at 8 per
node); 1 KiB, 64 KiB, 1 MiB and 4 MiB; allocations compact and random (seeded) on a
64-node machine of 4 nodes per switch,
2 switches per rack, uplinks oversubscribed 2:1 at both levels (so the placement
matters), and the flat default machine. Printed: both times and their ratio per
pattern, and the share of patterns with messages >= 64 KiB within +-15 % (the
target). Usage::

    apt-get install -y libsimgrid-dev simgrid    # provides smpicc and smpirun
    python tests/benchmarks/bench_smpi.py [--quick] [--iterations 5]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.kernels.comm import Allocation, Topology
from scaleprobe.kernels.comm.pattern import place_nodes
from scaleprobe.kernels.commbench.random_pingpong import random_partners
from scaleprobe.kernels.schema import Record

SOURCE = Path(__file__).with_name("smpi_random_pingpong.c")
BANDWIDTH, LATENCY = 1.25e8, 5e-6  # 1 Gbit/s, 5 us
MEMORY_BANDWIDTH, MEMORY_LATENCY = 5e9, 5e-7
MACHINE_NODES = 64
OVERSUBSCRIBED = Topology(
    nodes_per_switch=4,
    switches_per_rack=2,
    oversubscription=2.0,
    rack_oversubscription=2.0,
)
SMPI_CONFIG = [
    "--cfg=smpi/simulate-computation:no",
    "--cfg=smpi/bw-factor:0:1",
    "--cfg=smpi/lat-factor:0:1",
    "--cfg=network/bandwidth-factor:1",
    "--cfg=network/latency-factor:1",
    "--cfg=network/weight-S:0",
    "--cfg=network/crosstraffic:0",
    f"--cfg=network/loopback-bw:{MEMORY_BANDWIDTH:g}",
    f"--cfg=network/loopback-lat:{MEMORY_LATENCY:g}",
    "--log=root.thres:warning",
]


def platform(placement, topology):
    """SimGrid platform XML of the job's nodes on the machine."""
    switch = placement // topology.nodes_per_switch
    per_rack = topology.switches_per_rack
    rack = switch // per_rack if per_rack else np.zeros_like(switch)
    leaf = topology.nodes_per_switch * BANDWIDTH / topology.oversubscription
    rack_bw = (per_rack or 1) * leaf / topology.rack_oversubscription
    hop = topology.hop_latency
    lines = [
        '<?xml version="1.0"?>',
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        '<platform version="4.1">',
        '<zone id="machine" routing="Full">',
    ]
    for node in range(len(placement)):
        lines.append(f'<host id="n{node}" speed="1Gf" core="64"/>')
        lines.append(
            f'<link id="nic{node}" bandwidth="{BANDWIDTH:.0f}Bps" '
            f'latency="{LATENCY / 2:.9f}s" sharing_policy="SPLITDUPLEX"/>'
        )
    for s in np.unique(switch):
        lines.append(
            f'<link id="leaf{s}" bandwidth="{leaf:.0f}Bps" '
            f'latency="{hop:.9f}s" sharing_policy="SPLITDUPLEX"/>'
        )
    for k in np.unique(rack):
        lines.append(
            f'<link id="rack{k}" bandwidth="{rack_bw:.0f}Bps" '
            f'latency="{hop:.9f}s" sharing_policy="SPLITDUPLEX"/>'
        )
    for a, b in itertools.permutations(range(len(placement)), 2):
        hops = [f'<link_ctn id="nic{a}" direction="UP"/>']
        if switch[a] != switch[b]:
            hops.append(f'<link_ctn id="leaf{switch[a]}" direction="UP"/>')
            if rack[a] != rack[b]:
                hops += [
                    f'<link_ctn id="rack{rack[a]}" direction="UP"/>',
                    f'<link_ctn id="rack{rack[b]}" direction="DOWN"/>',
                ]
            hops.append(f'<link_ctn id="leaf{switch[b]}" direction="DOWN"/>')
        hops.append(f'<link_ctn id="nic{b}" direction="DOWN"/>')
        lines.append(
            f'<route src="n{a}" dst="n{b}" symmetrical="NO">'
            + "".join(hops)
            + "</route>"
        )
    lines += ["</zone>", "</platform>"]
    return "\n".join(lines) + "\n"


def smpi_time(
    binary, workdir, nodes, ppn, messages, size, seed, placement, topology, iterations
):
    ranks = nodes * ppn
    partners = random_partners(ranks, messages, seed)
    folder = Path(workdir)
    (folder / "partners.txt").write_text(
        f"{ranks} {messages}\n"
        + "\n".join(" ".join(map(str, row)) for row in partners)
        + "\n"
    )
    (folder / "platform.xml").write_text(platform(placement, topology))
    (folder / "hosts").write_text("".join(f"n{r // ppn}\n" for r in range(ranks)))
    done = subprocess.run(
        [
            "smpirun",
            "-np",
            str(ranks),
            "-platform",
            str(folder / "platform.xml"),
            "-hostfile",
            str(folder / "hosts"),
            *SMPI_CONFIG,
            str(binary),
            str(folder / "partners.txt"),
            str(size),
            str(iterations),
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    for line in done.stdout.splitlines():
        if line.startswith("exchange_time "):
            return float(line.split()[1])
    raise RuntimeError(f"smpirun failed: {done.stderr[-1500:]}")


def emulated_time(nodes, ppn, messages, size, seed, allocation, topology, iterations):
    env = child_environment(threads=1)
    env["SCALEPROBE_LINK"] = json.dumps(
        {
            "mode": "emulated",
            "ppn": ppn,
            "link_bandwidth": BANDWIDTH,
            "latency": LATENCY,
            "memory_bandwidth": MEMORY_BANDWIDTH,
            "memory_latency": MEMORY_LATENCY,
            "core_slots": 0,
            "topology": topology.to_dict(),
            "allocation": allocation.to_dict(),
        }
    )
    done = subprocess.run(
        [
            resolve_mpiexec(),
            "-n",
            str(nodes * ppn),
            sys.executable,
            "-m",
            "scaleprobe.kernels.commbench.random_pingpong",
            "--messages",
            str(messages),
            "--msg-bytes",
            str(size),
            "--iterations",
            str(iterations),
            "--warmup",
            "1",
            "--seed",
            str(seed),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    return Record.parse(done.stdout).to_dict()["metrics"]["exchange_time"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer patterns (a minute or two)"
    )
    parser.add_argument("--iterations", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        raise SystemExit(
            "needs SimGrid's smpicc and smpirun: "
            "apt-get install -y libsimgrid-dev simgrid"
        )
    shapes = [(8, 1), (4, 2)] if args.quick else [(8, 1), (8, 2), (8, 4), (4, 8)]
    partner_counts = (1, 4) if args.quick else (1, 2, 4)
    sizes = (
        (1 << 10, 1 << 16, 1 << 22)
        if args.quick
        else (1 << 10, 1 << 16, 1 << 20, 1 << 22)
    )
    machines = [
        ("flat", "compact", Topology()),
        ("oversub", "compact", OVERSUBSCRIBED),
        ("oversub", "random", OVERSUBSCRIBED),
    ]
    start = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        binary = Path(workdir) / "random_pingpong"
        subprocess.run(
            ["smpicc", "-O2", str(SOURCE), "-o", str(binary)],
            check=True,
            capture_output=True,
        )
        grid = itertools.product(machines, shapes, partner_counts, sizes)
        for seed, ((machine, placement, topology), (nodes, ppn), m, size) in enumerate(
            grid
        ):
            allocation = Allocation(placement, machine_nodes=MACHINE_NODES, seed=seed)
            placed = place_nodes(nodes, allocation)
            emulated = emulated_time(
                nodes, ppn, m, size, seed, allocation, topology, args.iterations
            )
            smpi = smpi_time(
                binary,
                workdir,
                nodes,
                ppn,
                m,
                size,
                seed,
                placed,
                topology,
                args.iterations,
            )
            switches = len(np.unique(placed // topology.nodes_per_switch))
            rows.append(
                (machine, placement, nodes, ppn, m, size, switches, emulated, smpi)
            )
            print(
                f"{machine:>7} {placement:>7} N={nodes:<2} ppn={ppn} M={m} "
                f"S={size:>8} SW={switches} emulated {emulated:.4e} s  "
                f"smpi {smpi:.4e} s  ratio {emulated / smpi:.3f}",
                flush=True,
            )
    large = [r for r in rows if r[5] >= 1 << 16]
    ratios = np.array([r[7] / r[8] for r in large])
    print(f"\n{len(rows)} patterns, {time.monotonic() - start:.0f} s wall")
    print(
        f"messages >= 64 KiB: {len(large)} patterns, emulated/smpi median "
        f"{np.median(ratios):.3f}, range {ratios.min():.3f} .. {ratios.max():.3f}, "
        f"within +-15 %: {100 * np.mean(np.abs(ratios - 1) <= 0.15):.0f} %"
    )
    small = np.array([r[7] / r[8] for r in rows if r[5] < 1 << 16])
    if small.size:
        print(
            f"messages < 64 KiB: {small.size} patterns, emulated/smpi median "
            f"{np.median(small):.3f}, range {small.min():.3f} .. {small.max():.3f}"
        )
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
