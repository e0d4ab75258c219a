"""Throttle mode netns: fidelity of the shaped links, and netns next to emulated.

Three tables, every number measured in this one run through ``run_sweep`` (root needed):

1. **Fidelity**: ping-pong between two namespaces over a 1 Gbit/s link (``--link``)
   shaped to 10, 25, 50 and 100 %; achieved bandwidth (``2 * msg_bytes / rtt``,
   median over runs) divided by the shaped rate, per message size. 1.00 is a perfect
   shaper; the small-message row gives the one-way latency of the namespaces' TCP
   path (no latency is injected), and the last column the bandwidth of that path
   itself (a 100 Gbit/s link, which the host cannot fill): what TCP, the veth pairs
   and the bridge cost per byte on this host, the share of a fast link's time that no
   shaper can remove. A second block divides the same bytes by the round trip net of
   the 8-byte one: the rate the shaper let the bytes through, without the host path's
   per-message latency. The host's load average is printed with the table: on a busy
   host the ranks wait for a core.
2. **netns vs emulated**: the same ping-pong and a small Graph500 sweep (same nodes, ppn
   and bandwidths) in both modes; medians of ``time`` (ping-pong: round trip; Graph500:
   BFS time over the searches).
3. **Graph500 reference code under netns** (with ``--reference BINARY``, an MPI build of
   the Graph500 reference BFS made outside this repository, see
   ``deployments/netns/README.md``): harmonic-mean TEPS and mean time per search,
   per node count, scale and bandwidth, parsed from its output (64 searches a run).

Usage::

    sudo python tests/benchmarks/bench_netns.py [--runs 3] [--link '1 Gbit/s']
        [--reference PATH] [--skip 1 2 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from scaleprobe.framework import run_sweep
from scaleprobe.framework.netns import netns_unavailable
from scaleprobe.kernels.units import parse_bandwidth

SIZES = [65536, 262144, 1048576, 4194304]
PERCENTS = [10, 25, 50, 100]


def _sweep(spec: dict, workdir: str):
    spec = {**spec, "output": os.path.join(workdir, spec["name"] + ".zarr")}
    return run_sweep(spec, progress=False)


def _ok(ds) -> None:
    bad = int((ds.status.values != "ok").sum())
    if bad:
        errors = set(map(str, ds.error.values.ravel()))
        raise SystemExit(f"{bad} points failed: {errors}")


def fidelity(workdir: str, runs: int, link: str) -> None:
    rate = parse_bandwidth(link)
    spec = {
        "name": "fidelity",
        "kernel": "commbench.pingpong",
        "params": {"iterations": 20},
        "sweep": {"nodes": [2], "bandwidth": PERCENTS, "msg_bytes": [8, *SIZES],
                  "run": runs},
        "throttle": {"mode": "netns", "link_bandwidth": link},
        "timeout": 300,
    }  # fmt: skip
    ds = _sweep(spec, workdir)
    _ok(ds)
    bw = ds.achieved_bandwidth.squeeze(drop=True).median("run")
    rtt = ds.rtt.squeeze(drop=True).median("run")
    fast = {**spec, "name": "host-path", "sweep": {**spec["sweep"], "bandwidth": [100]},
            "throttle": {"mode": "netns", "link_bandwidth": "100 Gbit/s"}}  # fmt: skip
    host = _sweep(fast, workdir)
    _ok(host)
    host = host.achieved_bandwidth.squeeze(drop=True).median("run")
    print("\n1. Fidelity: achieved / shaped bandwidth, ping-pong between 2 namespaces,")
    print(f"   link {link}, median of {runs} runs x 20 round trips; load average "
          + "/".join(f"{x:.1f}" for x in os.getloadavg()))  # fmt: skip
    print("   message   " + "".join(f"{p:>9d} %" for p in PERCENTS)
          + "   host path MB/s")  # fmt: skip
    for size in SIZES:
        ratios = [float(bw.sel(msg_bytes=size, bandwidth=p)) / (rate * p / 100)
                  for p in PERCENTS]  # fmt: skip
        path = float(host.sel(msg_bytes=size)) / 1e6
        print(f"   {size // 1024:>5d} KiB " + "".join(f"{r:>11.3f}" for r in ratios)
              + f"{path:>18.0f}")  # fmt: skip
    latency = [float(rtt.sel(msg_bytes=8, bandwidth=p)) / 2 * 1e6 for p in PERCENTS]
    print("   one-way latency of 8 B (us): "
          + ", ".join(f"{x:.0f}" for x in latency))  # fmt: skip
    # The shaper acts on bytes; the host path adds a per-message time it cannot
    # remove. Net of the 8 B round trip (Hockney: rtt = 2 L + 2 m / B), the rate the
    # bytes were carried at is what the shaper is responsible for.
    print("   net of the 8 B round trip: 2 m / (rtt(m) - rtt(8 B)) / shaped")
    for size in SIZES:
        ratios = [2 * size / float(rtt.sel(msg_bytes=size, bandwidth=p)
                                   - rtt.sel(msg_bytes=8, bandwidth=p))
                  / (rate * p / 100) for p in PERCENTS]  # fmt: skip
        print(f"   {size // 1024:>5d} KiB " + "".join(f"{r:>11.3f}" for r in ratios))


def side_by_side(workdir: str, runs: int) -> None:
    pingpong = {
        "kernel": "commbench.pingpong",
        "params": {"iterations": 10, "msg_bytes": 1048576},
        "sweep": {"nodes": [2], "bandwidth": [10, 50, 100], "run": runs},
        "timeout": 300,
    }
    graph500 = {
        "kernel": "graph500",
        "params": {"nbfs": 8, "variant": "simple", "scale": 14},
        "sweep": {"nodes": [2, 4], "ppn": [1], "bandwidth": [10, 100], "run": runs},
        "timeout": 600,
    }
    print("\n2. netns vs emulated, same points, medians (s)")
    cases = (("pingpong 1 MiB rtt", pingpong), ("graph500 s14 BFS", graph500))
    for label, base in cases:
        times = {}
        for mode in ("emulated", "netns"):
            throttle = {"mode": mode, "link_bandwidth": "1 Gbit/s"}
            spec = {**base, "name": f"{label.split()[0]}-{mode}", "throttle": throttle}
            ds = _sweep(spec, workdir)
            _ok(ds)
            metric = ds.rtt if "rtt" in ds else ds.time
            other = [d for d in metric.dims if d not in ("nodes", "bandwidth")]
            times[mode] = metric.median(other)
        print(f"   {label:<20s} nodes bandwidth  emulated     netns  netns/emulated")
        for nodes in times["netns"].nodes.values:
            for pct in times["netns"].bandwidth.values:
                e = float(times["emulated"].sel(nodes=nodes, bandwidth=pct))
                n = float(times["netns"].sel(nodes=nodes, bandwidth=pct))
                print(f"   {'':<20s} {nodes:>5d} {pct:>7d} % {e:>9.4f} {n:>9.4f}"
                      f" {n / e:>14.2f}")  # fmt: skip


def reference(workdir: str, runs: int, binary: str) -> None:
    spec = {
        "name": "reference",
        "kernel": "external",
        "params": {"command": "{mpiexec} -n {ranks} {binary} {scale} 16",
                   "parser": "graph500", "binary": os.path.abspath(binary)},
        "sweep": {"nodes": [2, 4], "bandwidth": [10, 100], "scale": [12, 14],
                  "run": runs},
        "throttle": {"mode": "netns", "link_bandwidth": "1 Gbit/s"},
        "timeout": 600,
    }  # fmt: skip
    ds = _sweep(spec, workdir)
    _ok(ds)
    teps = ds.teps.squeeze(drop=True)
    time = ds.time.squeeze(drop=True)
    other = [d for d in teps.dims if d not in ("nodes", "bandwidth", "scale")]
    teps, time = teps.median(other), time.median([d for d in time.dims
                                                  if d in other])  # fmt: skip
    print("\n3. Graph500 reference BFS (external program) under netns, 1 Gbit/s link,")
    print(f"   median of {runs} runs: harmonic-mean TEPS (1e6), mean BFS time (ms)")
    header = "".join(f"  TEPS@{p:>3d}%  time@{p:>3d}%" for p in (10, 100))
    print("   scale nodes" + header)
    for scale in teps.scale.values:
        for nodes in teps.nodes.values:
            cells = ""
            for pct in (10, 100):
                t = float(teps.sel(scale=scale, nodes=nodes, bandwidth=pct)) / 1e6
                s = float(time.sel(scale=scale, nodes=nodes, bandwidth=pct)) * 1e3
                cells += f"  {t:>9.2f}  {s:>9.2f}"
            print(f"   {scale:>5d} {nodes:>5d}" + cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reference", help="Graph500 reference BFS binary")
    parser.add_argument("--link", default="1 Gbit/s", help="link of table 1")
    parser.add_argument("--skip", nargs="*", default=[], choices=["1", "2", "3"])
    args = parser.parse_args()
    reason = netns_unavailable()
    if reason is not None:
        sys.exit(reason)
    with tempfile.TemporaryDirectory(prefix="scaleprobe-bench-netns-") as workdir:
        if "1" not in args.skip:
            fidelity(workdir, args.runs, args.link)
        if "2" not in args.skip:
            side_by_side(workdir, args.runs)
        if args.reference and "3" not in args.skip:
            reference(workdir, args.runs, args.reference)


if __name__ == "__main__":
    main()
