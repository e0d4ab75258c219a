"""How fast a namespace network's link really is: a short probe before each launch.

A link shaped to a rate carries less on a busy host: the kernel forwards the frames
of every ``veth`` pair on the cores other work keeps busy. Before a launch in throttle
mode ``netns`` one TCP stream runs from the first node to the second over the shaped
links for about :data:`PROBE_SECONDS`; the payload rate it achieved is stored beside
the rate the links were shaped to (``link_rate``, ``link_shaped_rate``), and a sweep
warns when a point's link fell more than :data:`SHORTFALL` short.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

from ._warnings import LinkShortfallWarning

__all__ = ["PROBE_SECONDS", "SHORTFALL", "probe_link", "warn_link_shortfall"]

#: Seconds of traffic in one probe.
PROBE_SECONDS = 0.25
#: Fraction of the shaped rate a link may fall short before a sweep warns.
SHORTFALL = 0.05
#: Fewest and most bytes a probe sends.
PROBE_BYTES = (512 * 1024, 256 * 1024 * 1024)

_RECEIVER = r"""
import socket, sys, time
s = socket.socket()
s.bind(("0.0.0.0", 0))
s.listen(1)
s.settimeout(30)
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
c.settimeout(30)
skip = int(sys.argv[1]) // 4  # the stream's start: slow start, the bucket's burst
first = last = None
skipped = total = 0
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    now = time.perf_counter()
    total += len(b)
    if first is None and total >= skip:
        first, skipped = now, total
    last = now
c.close()
print(total - skipped, (last or 0) - (first or 0), flush=True)
"""

_SENDER = r"""
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
chunk, sent = bytes(1 << 16), 0
while sent < int(sys.argv[3]):
    c.sendall(chunk)
    sent += len(chunk)
c.shutdown(socket.SHUT_WR)
c.recv(1)
c.close()
"""


def _address(node: int) -> str:
    """The address of node ``node`` in a namespace network."""
    return f"10.87.{node // 250}.{node % 250 + 1}"


def probe_link(network, payload_rate: float, seconds: float = PROBE_SECONDS):
    """Send one TCP stream from node 0 to node 1 and return its payload rate.

    The links must already be shaped (:meth:`NamespaceNetwork.shape`).

    Parameters
    ----------
    network : NamespaceNetwork
        The sweep's network, of at least two nodes.
    payload_rate : float
        The rate the links are shaped to, bytes/s (sizes the probe).
    seconds : float, default=PROBE_SECONDS
        About how long the probe sends.

    Returns
    -------
    float or None
        Bytes/s of payload the stream achieved; None when the network has one node
        or the probe could not run (the launch goes on without it).
    """
    if network.nodes < 2:
        return None
    low, high = PROBE_BYTES
    size = int(min(max(payload_rate * seconds, low), high))
    inside = ["ip", "netns", "exec"]
    try:
        receiver = subprocess.Popen(
            [*inside, network.namespaces[1], sys.executable, "-c", _RECEIVER,
             str(size)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
    except OSError:
        return None
    try:
        port = receiver.stdout.readline().strip()
        subprocess.run(
            [*inside, network.namespaces[0], sys.executable, "-c", _SENDER,
             _address(1), port, str(size)],
            check=True, timeout=60, capture_output=True,
        )  # fmt: skip
        received, elapsed = map(float, receiver.communicate(timeout=60)[0].split())
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    finally:  # a probe that failed leaves no receiver waiting
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
        receiver.stdout.close()
    if receiver.returncode != 0 or elapsed <= 0:
        return None
    return received / elapsed


def warn_link_shortfall(ds, limit: float = SHORTFALL) -> None:
    """Warn when stored points ran over a link slower than it was shaped.

    Parameters
    ----------
    ds : xarray.Dataset
        The campaign's results (``link_rate`` and ``link_shaped_rate``, throttle
        mode ``netns``).
    limit : float, default=SHORTFALL
        Fraction of the shaped rate from which a point is flagged.

    Warns
    -----
    LinkShortfallWarning
        One line: how many successful points fell short and the worst of them.
    """
    if not {"link_rate", "link_shaped_rate"} <= set(ds.data_vars):
        return
    ratio = ds["link_rate"] / ds["link_shaped_rate"]
    if "status" in ds.data_vars:
        ratio = ratio.where(ds["status"] == "ok")
    table = ratio.rename("ratio").to_dataframe()["ratio"].dropna()
    short = table[table < 1 - limit]
    if short.empty:
        return
    worst = short.idxmin()
    worst = worst if isinstance(worst, tuple) else (worst,)
    where = ", ".join(
        f"{dim}={value}" for dim, value in zip(short.index.names, worst, strict=True)
    )
    warnings.warn(
        f"{len(short)} of {len(table)} point(s) ran over a link more than "
        f"{limit:.0%} slower than it was shaped (worst: {short.min():.0%} of the "
        f"rate at {where}; link_rate, link_shaped_rate): the host was too busy to "
        "carry the rate — measure them again on a quieter host, or read them with care",
        LinkShortfallWarning,
        stacklevel=3,
    )
