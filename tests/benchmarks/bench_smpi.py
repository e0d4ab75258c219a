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
The C program starts every exchange at one simulated instant (``aligned``: a sleep
to a common time after the barrier), as the emulator aligns its ranks' clocks; after
a plain barrier SMPI's ranks leave up to a latency apart, which a small exchange
would count.

Patterns: 1, 2 and 4 partners; 1, 2, 4 and 8 ranks per node (8 nodes, 4 at 8 per
node); 128 B, 1 KiB, 8 KiB, 64 KiB, 1 MiB and 4 MiB; allocations compact and random
(seeded) on a 64-node machine of 4 nodes per switch, 2 switches per rack, uplinks
oversubscribed 2:1 at both levels (so the placement matters), and the flat default
machine. Printed: both times and their ratio per pattern, and the share of patterns
with messages >= 64 KiB within +-15 % (the target). Below 64 KiB a second table
splits the emulated time: the emulated time includes the ranks' real CPU time
between communication calls (the Python program and the instrumented
communicator), measured on its own by emulating the same run on free links (no
latency, no transfer time); the rest is what the emulated link charged. Beside it:
SMPI ideal (aligned), SMPI after a plain barrier, and SMPI as shipped (its
calibrated message-size factors, flow weighting and cross traffic). Usage::

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


def platform(placement, topology, latency=LATENCY):
    """SimGrid platform XML of the job's nodes on the machine (NICs of ``latency``
    seconds end to end)."""
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
            f'latency="{latency / 2:.9f}s" sharing_policy="SPLITDUPLEX"/>'
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
    binary,
    workdir,
    nodes,
    ppn,
    messages,
    size,
    seed,
    placement,
    topology,
    iterations,
    config=SMPI_CONFIG,
    start="aligned",
    latency=LATENCY,
):
    """SMPI's exchange time of one pattern: ``start`` "aligned" or "barrier"."""
    ranks = nodes * ppn
    partners = random_partners(ranks, messages, seed)
    folder = Path(workdir)
    (folder / "partners.txt").write_text(
        f"{ranks} {messages}\n"
        + "\n".join(" ".join(map(str, row)) for row in partners)
        + "\n"
    )
    (folder / "platform.xml").write_text(platform(placement, topology, latency))
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
            *config,
            str(binary),
            str(folder / "partners.txt"),
            str(size),
            str(iterations),
            "1",
            *(["aligned"] if start == "aligned" else []),
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


def emulated_time(
    nodes,
    ppn,
    messages,
    size,
    seed,
    allocation,
    topology,
    iterations,
    free=False,
    latency=LATENCY,
):
    """The emulated exchange time; ``free``: on links of no latency and no
    transfer time, so what remains is the program's own CPU time between calls."""
    env = child_environment(threads=1)
    env["SCALEPROBE_LINK"] = json.dumps(
        {
            "mode": "emulated",
            "ppn": ppn,
            "link_bandwidth": 1e18 if free else BANDWIDTH,
            "latency": 0.0 if free else latency,
            "memory_bandwidth": 1e18 if free else MEMORY_BANDWIDTH,
            "memory_latency": 0.0 if free else MEMORY_LATENCY,
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


#: SMPI as it is shipped: its calibrated message-size factors, flow weighting and
#: cross traffic left at their defaults (the loopback link as above).
SMPI_CALIBRATED = [
    "--cfg=smpi/simulate-computation:no",
    f"--cfg=network/loopback-bw:{MEMORY_BANDWIDTH:g}",
    f"--cfg=network/loopback-lat:{MEMORY_LATENCY:g}",
    "--log=root.thres:warning",
]
SMALL = 1 << 16  # bytes: the small-message table is below


def measure_pattern(binary, workdir, point, iterations):
    """Every time of one pattern: emulated, SMPI ideal (aligned and barrier), and
    below 64 KiB the emulated program's own CPU and SMPI calibrated."""
    (machine, placement, topology), (nodes, ppn), m, size, seed = point
    if size < SMALL:  # CPU noise weighs more on a short exchange: more of them
        iterations = max(iterations, 20)
    allocation = Allocation(placement, machine_nodes=MACHINE_NODES, seed=seed)
    placed = place_nodes(nodes, allocation)
    pattern = (nodes, ppn, m, size, seed)
    row = {
        "machine": machine,
        "placement": placement,
        "nodes": nodes,
        "ppn": ppn,
        "m": m,
        "size": size,
        "SW": len(np.unique(placed // topology.nodes_per_switch)),
        "emulated": emulated_time(*pattern, allocation, topology, iterations),
    }
    smpi = (binary, workdir, *pattern[:4], seed, placed, topology, iterations)
    row["smpi"] = smpi_time(*smpi)
    if size < SMALL:
        row["barrier"] = smpi_time(*smpi, start="barrier")
        row["calibrated"] = smpi_time(*smpi, config=SMPI_CALIBRATED)
        row["cpu"] = emulated_time(
            *pattern, allocation, Topology(), iterations, free=True
        )
    return row


def print_small(rows):
    """The < 64 KiB table: where the emulated time goes, next to three SMPI times."""
    small = [r for r in rows if r["size"] < SMALL]
    if not small:
        return
    print(
        f"\nmessages < 64 KiB ({len(small)} patterns), times in us: emulated = the "
        "program's own CPU\nbetween calls (emulated on free links) + what the link "
        "charges; SMPI ideal (starts\naligned, as the emulator aligns them), with "
        "barrier starts, and calibrated (defaults)"
    )
    print(
        f"{'machine':>7} {'alloc':>7} {'N':>2} {'ppn':>3} {'M':>1} {'S':>5} "
        f"{'emulated':>9} {'cpu':>7} {'link':>7} {'ideal':>7} {'link/id':>7} "
        f"{'emu/id':>7} {'barrier':>7} {'calibr.':>7}"
    )
    for r in small:
        link = r["emulated"] - r["cpu"]
        print(
            f"{r['machine']:>7} {r['placement']:>7} {r['nodes']:>2} {r['ppn']:>3} "
            f"{r['m']:>1} {r['size']:>5} {1e6 * r['emulated']:>9.1f} "
            f"{1e6 * r['cpu']:>7.1f} {1e6 * link:>7.1f} {1e6 * r['smpi']:>7.1f} "
            f"{link / r['smpi']:>7.3f} {r['emulated'] / r['smpi']:>7.3f} "
            f"{1e6 * r['barrier']:>7.1f} {1e6 * r['calibrated']:>7.1f}"
        )
    ratios = {
        "link (emulated - cpu) / SMPI ideal": [
            (r["emulated"] - r["cpu"]) / r["smpi"] for r in small
        ],
        "emulated / SMPI ideal": [r["emulated"] / r["smpi"] for r in small],
        "emulated / SMPI with barrier": [r["emulated"] / r["barrier"] for r in small],
        "emulated / SMPI calibrated": [r["emulated"] / r["calibrated"] for r in small],
        "cpu / emulated": [r["cpu"] / r["emulated"] for r in small],
    }
    for label, values in ratios.items():
        v = np.array(values)
        within = 100 * np.mean(np.abs(v - 1) <= 0.15)
        print(
            f"  {label:<36} median {np.median(v):.3f}, range {v.min():.3f} .. "
            f"{v.max():.3f}, within +-15 %: {within:.0f} %"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer patterns (a few minutes)"
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
        (1 << 10, 1 << 13, 1 << 16, 1 << 22)
        if args.quick
        else (1 << 7, 1 << 10, 1 << 13, 1 << 16, 1 << 20, 1 << 22)
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
        for seed, point in enumerate(grid):
            r = measure_pattern(binary, workdir, (*point, seed), args.iterations)
            rows.append(r)
            print(
                f"{r['machine']:>7} {r['placement']:>7} N={r['nodes']:<2} "
                f"ppn={r['ppn']} M={r['m']} S={r['size']:>8} SW={r['SW']} "
                f"emulated {r['emulated']:.4e} s  smpi {r['smpi']:.4e} s  "
                f"ratio {r['emulated'] / r['smpi']:.3f}",
                flush=True,
            )
    large = [r for r in rows if r["size"] >= SMALL]
    ratios = np.array([r["emulated"] / r["smpi"] for r in large])
    print(f"\n{len(rows)} patterns, {time.monotonic() - start:.0f} s wall")
    print(
        f"messages >= 64 KiB: {len(large)} patterns, emulated/smpi median "
        f"{np.median(ratios):.3f}, range {ratios.min():.3f} .. {ratios.max():.3f}, "
        f"within +-15 %: {100 * np.mean(np.abs(ratios - 1) <= 0.15):.0f} %"
    )
    print_small(rows)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
