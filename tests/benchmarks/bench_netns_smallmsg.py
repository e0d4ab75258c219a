"""Small messages on a real TCP path: the third reference beside the emulator and SMPI.

Below 64 KiB the emulated link and SimGrid's SMPI disagree with each other depending
on how SMPI is configured (``bench_smpi.py``): with ideal links SMPI charges a latency
and the bytes at the link's bandwidth, as the emulator does; as shipped, its
calibrated message-size factors price a 1 KiB message at about three times that. This
benchmark measures the same exchange where nothing is modelled: the random
non-blocking ping-pong (``commbench.random_pingpong``, 2 ranks on 2 nodes, 1 and 4
messages each way) between two network namespaces whose links are shaped to 1 Gbit/s
(``framework.netns``: ``htb`` on both ends of each ``veth`` pair, MPICH over TCP).

No latency can be injected (``netem`` is not available), so the path's own latency is
measured and given to the models: the one-way latency ``L`` is the real exchange of
one 8-byte message less the program's own CPU time between calls (the exchange
emulated on free links) and less the 8 bytes at the shaped rate. The exchange is that of
``random_pingpong`` (its own ``_timed_exchanges``), every timed iteration kept: an
iteration lasts until the later of the two ranks is done. A loaded host stretches
some real exchanges by whole scheduling slices, so the times compared are the 10th
percentile of the iterations (``--runs`` runs of ``--iterations``), real and emulated
alike: what a quiet host gives. Per message size: the real exchange, the emulated one
(link of 1 Gbit/s and ``L``), SMPI with ideal links (``L``) and SMPI as shipped
(calibrated factors, ``L``), and each divided by the real one. Whichever model follows
the real path's growth with the message size is the reference to follow below 64 KiB.
Usage (root)::

    python tests/benchmarks/bench_netns_smallmsg.py [--runs 3] [--iterations 50]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scaleprobe.framework.launch import child_environment, resolve_mpiexec
from scaleprobe.framework.netns import (
    MPI_ENVIRONMENT,
    namespace_network,
    netns_unavailable,
)
from scaleprobe.kernels.comm import Topology

sys.path.insert(0, str(Path(__file__).parent))
from bench_smpi import (
    BANDWIDTH,
    SMPI_CALIBRATED,
    SMPI_CONFIG,
    SOURCE,
    smpi_time,
)

SIZES = (8, 128, 1 << 10, 1 << 13, 1 << 16)
MESSAGES = (1, 4)
#: The percentile of the iterations compared: a loaded host stretches some real
#: exchanges by whole scheduling slices (milliseconds), which no model has.
QUANTILE = 10

#: The exchange of ``commbench.random_pingpong`` (the same calls, the same timing),
#: every timed iteration reported: for each, the later of the two ranks.
DRIVER = r"""
import json, sys
from types import SimpleNamespace
import numpy as np
from mpi4py import MPI
from scaleprobe.kernels.comm import InstrumentedComm
from scaleprobe.kernels.commbench.random_pingpong import (
    _timed_exchanges, random_partners)

comm = InstrumentedComm.from_environment(MPI.COMM_WORLD)
messages, size, iterations = map(int, sys.argv[1:4])
partners = random_partners(comm.size, messages, 0)
mine = [(m, p) for m, p in enumerate(partners[comm.rank]) if p >= 0]
args = SimpleNamespace(msg_bytes=size, iterations=iterations, warmup=2)
table = comm.gather(_timed_exchanges(comm, mine, args))
if comm.rank == 0:
    print("TIMES " + json.dumps(np.max(np.array(table), axis=0).tolist()))
comm.close()
"""


def exchange_times(driver, messages, size, iterations, link, network=None):
    """Every iteration's exchange time of 2 ranks on 2 nodes: in the namespaces of
    ``network`` (wall clock) or, without one, on the emulated ``link``."""
    env = child_environment(threads=1)
    env["SCALEPROBE_LINK"] = json.dumps(link)
    command = [resolve_mpiexec()]
    if network is not None:
        env.update(MPI_ENVIRONMENT)
        command = network.mpiexec_command(command[0], 2, 1)
    command += ["-n", "2", sys.executable, str(driver)]
    command += [str(messages), str(size), str(iterations)]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=900, check=False
    )
    line = [x for x in done.stdout.splitlines() if x.startswith("TIMES ")]
    if done.returncode or not line:
        raise RuntimeError(f"exchange failed: {done.stderr[-1500:]}")
    return np.array(json.loads(line[0][len("TIMES ") :]))


def emulated_link(latency, free=False):
    """The emulated link of the comparison (1 Gbit/s, ``latency``; ``free``: no
    latency, no transfer time, so only the program's CPU is left)."""
    return {
        "mode": "emulated",
        "ppn": 1,
        "core_slots": 0,
        "link_bandwidth": 1e18 if free else BANDWIDTH,
        "latency": 0.0 if free else latency,
    }


def measure(driver, runs, iterations):
    """Every time of every (messages, size): real, program CPU, emulated, SMPI."""
    netns = {"mode": "netns", "ppn": 1, "core_slots": 0}
    real = {}
    with namespace_network(2) as network:
        network.shape(2, BANDWIDTH)
        for point in ((m, s) for m in MESSAGES for s in SIZES):
            times = np.concatenate([
                exchange_times(driver, *point, iterations, netns, network)
                for _ in range(runs)
            ])  # fmt: skip
            real[point] = times
            print(f"  netns M={point[0]} S={point[1]:>6}: p10 "
                  f"{1e6 * np.percentile(times, QUANTILE):.1f} us, median "
                  f"{1e6 * np.median(times):.1f} us", flush=True)  # fmt: skip
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        binary = Path(workdir) / "random_pingpong"
        subprocess.run(["smpicc", "-O2", str(SOURCE), "-o", str(binary)],
                       check=True, capture_output=True)  # fmt: skip
        latency = None
        for messages in MESSAGES:  # the path's latency: from one 8-byte message
            cpu = {s: np.percentile(exchange_times(driver, messages, s, iterations,
                                    emulated_link(0.0, free=True)), QUANTILE)
                   for s in SIZES}  # fmt: skip
            if latency is None:
                here = np.percentile(real[messages, 8], QUANTILE)
                latency = max(here - cpu[8] - 8 / BANDWIDTH, 0.0)
            for size in SIZES:
                smpi = (binary, workdir, 2, 1, messages, size, 0, np.arange(2),
                        Topology(), 5)  # fmt: skip
                emulated = exchange_times(driver, messages, size, iterations,
                                          emulated_link(latency))  # fmt: skip
                rows.append({
                    "M": messages, "S": size, "L": latency,
                    "real": float(np.percentile(real[messages, size], QUANTILE)),
                    "real_median": float(np.median(real[messages, size])),
                    "cpu": float(cpu[size]),
                    "emulated": float(np.percentile(emulated, QUANTILE)),
                    "ideal": smpi_time(*smpi, SMPI_CONFIG, latency=latency),
                    "calibrated": smpi_time(*smpi, SMPI_CALIBRATED, latency=latency),
                })  # fmt: skip
    return rows


def report(rows):
    """The table: times in us and each model's time over the real one."""
    print(f"\ntimes in us: the {QUANTILE}th percentile over iterations (real and "
          "emulated alike; SMPI has one time),\nand the real median; ratios to the "
          "real percentile")  # fmt: skip
    print(f"{'M':>2} {'S':>6} {'L':>6} {'real':>8} {'median':>7} {'cpu':>6} "
          f"{'emulated':>9} {'ideal':>8} {'calibr.':>8} {'emu/real':>9} "
          f"{'ideal/real':>10} {'calib/real':>10}")  # fmt: skip
    for r in rows:
        print(f"{r['M']:>2} {r['S']:>6} {1e6 * r['L']:>6.1f} {1e6 * r['real']:>8.1f} "
              f"{1e6 * r['real_median']:>7.1f} {1e6 * r['cpu']:>6.1f} "
              f"{1e6 * r['emulated']:>9.1f} {1e6 * r['ideal']:>8.1f} "
              f"{1e6 * r['calibrated']:>8.1f} {r['emulated'] / r['real']:>9.3f} "
              f"{r['ideal'] / r['real']:>10.3f} "
              f"{r['calibrated'] / r['real']:>10.3f}")  # fmt: skip
    # one 8-byte message sets L: left out of the summary
    small = [r for r in rows if (r["M"], r["S"]) != (1, 8)]
    for key in ("emulated", "ideal", "calibrated"):
        v = np.array([r[key] / r["real"] for r in small])
        within = 100 * np.mean(np.abs(v - 1) <= 0.15)
        print(f"  {key:<10} / real, {len(v)} points: median "
              f"{np.median(v):.3f}, range {v.min():.3f} .. {v.max():.3f}, "
              f"within +-15 %: {within:.0f} %")  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args()
    reason = netns_unavailable()
    if reason:
        raise SystemExit(f"needs network namespaces: {reason}")
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        raise SystemExit(
            "needs SimGrid's smpicc and smpirun: "
            "apt-get install -y libsimgrid-dev simgrid"
        )
    with tempfile.TemporaryDirectory() as folder:
        driver = Path(folder) / "exchange.py"
        driver.write_text(DRIVER)
        rows = measure(driver, args.runs, args.iterations)
    report(rows)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
