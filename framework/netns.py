"""Emulated nodes as network namespaces on one Linux host, joined by shaped links.

Throttle mode ``netns`` makes every emulated node a network namespace with one
``veth`` pair into a bridge. Each end of a pair is shaped with ``htb`` (below), MPI
is forced onto TCP, and hydra starts the ranks of each node inside its namespace
through a launcher hook that runs ``ip netns exec``. Any MPI program -- scaleprobe's
kernels and external programs alike -- then crosses a link that really is as slow as
the point asks. No latency is added (no ``netem``).

A network belongs to the process that opened it. Before anything is created its
record (owner pid and start time, names) is written to the state directory; a network
whose owner is gone -- killed with ``kill -9``, say -- is removed by the next
:func:`open_network` or :func:`remove_stale`, so namespaces never pile up.

Shaping
    A node's link is shaped on both ends of its ``veth`` pair: the end inside the
    node's namespace limits what the node sends, the end on the bridge what it
    receives, so the link is full duplex at the shaped rate in each direction, as a
    NIC is.

    Rates are rates of the bytes MPI sends. ``tc`` counts whole frames (Ethernet, IP
    and TCP headers included), so the class rate is the payload rate times
    :data:`WIRE_FACTOR`. ``htb`` rather than ``tbf``: with segmentation offload a
    ``veth`` hands the qdisc segments of up to 64 KiB, which ``htb`` charges in full
    (going into debt) while a ``tbf`` bucket small enough to pace a 64 KiB message
    would split them and run out of CPU above a few hundred Mbit/s. No latency is
    added: ``netem`` is not used (the development host's kernel has none), so a
    link's latency is that of the ``veth`` pair and the TCP stack.

Records of the networks
    One JSON file per network, ``<state_dir>/<tag>.json``, holds the owner's pid and
    the start time of that pid (so a recycled pid is not mistaken for the owner) and
    the number of nodes. It is written before the first namespace is created and
    removed after the last one is gone.

Needs Linux, ``ip`` and ``tc`` (iproute2), and root (or ``CAP_NET_ADMIN`` with
``CAP_SYS_ADMIN``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys

from . import config

__all__ = [
    "MTU",
    "WIRE_FACTOR",
    "NamespaceNetwork",
    "NetnsError",
    "class_rate",
    "close_network",
    "namespace_network",
    "netns_unavailable",
    "open_network",
    "remove_stale",
    "root_command",
    "shape_command",
    "shaping_provenance",
]

#: Name of the node's interface inside every namespace.
INTERFACE = "spnic"
#: MPICH (``mpich`` wheel) over TCP through the node's interface; anything else
#: (shared memory, loopback) would bypass the shaped link between namespaces.
MPI_ENVIRONMENT = {
    "MPIR_CVAR_CH4_NETMOD": "ofi",
    "FI_PROVIDER": "tcp",
    "FI_TCP_IFACE": INTERFACE,
}
_CAP_NET_ADMIN, _CAP_SYS_ADMIN = 12, 21

_LAUNCHER = """#!/bin/sh
# hydra's ssh launcher hook: run the proxy command in the namespace named as its host.
[ "$1" = "-x" ] && shift
host=$1
shift
case "$host" in
  {tag}-n*) ;;
  *) echo "not a node of scaleprobe network {tag}: $host" >&2; exit 1 ;;
esac
exec ip netns exec "$host" sh -c "$*"
"""


#: MTU of every ``veth``: that of Ethernet, so TCP sees the segments a cluster NIC sees.
MTU = 1500
#: Bytes on the wire per byte of TCP payload: a 1500-byte frame carries 1448 bytes of
#: payload (20 IP, 20 TCP and 12 timestamp bytes) and 14 bytes of Ethernet header.
WIRE_FACTOR = (MTU + 14) / (MTU - 52)
#: Bucket of the class: two frames, the least that keeps the rate with one flow.
BURST = 2 * (MTU + 14)


def class_rate(payload_rate: float) -> int:
    """Return the ``htb`` rate (bit/s) that passes ``payload_rate`` bytes/s of payload.

    Parameters
    ----------
    payload_rate : float
        Bytes of TCP payload per second.

    Returns
    -------
    int
        Bits per second of whole frames, at least 8.

    Examples
    --------
    >>> class_rate(125e6)  # 1 Gbit/s of payload
    1045580110
    """
    if not payload_rate > 0:
        raise ValueError(
            f"a shaped rate must be positive bytes/s, got {payload_rate!r}"
        )
    return max(8, round(payload_rate * WIRE_FACTOR * 8))


def root_command(device: str, namespace=None) -> list[str]:
    """Return the ``tc`` command that gives ``device`` its ``htb`` root qdisc.

    Run it once, when the device is created; :func:`shape_command` then sets and
    changes the rate.

    Examples
    --------
    >>> " ".join(root_command("spv0", namespace="spn0"))
    'tc -n spn0 qdisc add dev spv0 root handle 1: htb default 1'
    """
    tc = ["tc"] if namespace is None else ["tc", "-n", namespace]
    return [*tc, "qdisc", "add", "dev", device, "root", "handle", "1:", "htb",
            "default", "1"]  # fmt: skip


def shape_command(device: str, payload_rate: float, namespace=None) -> list[str]:
    """Return the ``tc`` command that shapes ``device`` to ``payload_rate``.

    The device needs its root qdisc first (:func:`root_command`); the command sets the
    rate of its one class and changes it when run again.

    Parameters
    ----------
    device : str
        Interface name.
    payload_rate : float
        Bytes of payload per second.
    namespace : str, optional
        Network namespace of the device (``tc -n``); the current one by default.

    Returns
    -------
    list of str
        The argument vector.

    Examples
    --------
    >>> print(" ".join(shape_command("spv0", 12.5e6, namespace="spn0")))
    ... # doctest: +NORMALIZE_WHITESPACE
    tc -n spn0 class replace dev spv0 parent 1: classid 1:1 htb rate 104558011bit
    ceil 104558011bit burst 3028b cburst 3028b quantum 1514
    """
    rate = f"{class_rate(payload_rate)}bit"
    tc = ["tc"] if namespace is None else ["tc", "-n", namespace]
    return [*tc, "class", "replace", "dev", device, "parent", "1:", "classid", "1:1",
            "htb", "rate", rate, "ceil", rate, "burst", f"{BURST}b",
            "cburst", f"{BURST}b", "quantum", str(MTU + 14)]  # fmt: skip


def shaping_provenance() -> dict:
    """Describe how ``netns`` mode shapes links, for a Dataset's attributes.

    Returns
    -------
    dict
        ``netns_shaping`` (qdisc, rate rule, burst, MTU, MPI transport) and
        ``netns_latency`` (that no latency is injected).

    Examples
    --------
    >>> sorted(shaping_provenance())
    ['netns_latency', 'netns_shaping']
    """
    return {
        "netns_shaping": (
            "one network namespace per node, veth pair into a bridge, htb class on "
            f"both ends (each direction) at payload rate x {WIRE_FACTOR:.4f} for "
            f"frame headers, burst {BURST} B, MTU {MTU}; MPI over TCP "
            + " ".join(f"{k}={v}" for k, v in MPI_ENVIRONMENT.items())
        ),
        "netns_latency": (
            "not injected (no tc netem): link latency is that of the veth pair and "
            "the TCP stack, not throttle.latency"
        ),
    }


class NetnsError(RuntimeError):
    """A namespace network cannot be created, shaped or removed."""


def _capabilities() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def netns_unavailable() -> str | None:
    """Say why throttle mode ``netns`` cannot run here, or return None if it can.

    Returns
    -------
    str or None
        A sentence naming what is missing (Linux, root privileges, ``ip``, ``tc``).

    Examples
    --------
    >>> reason = netns_unavailable()
    >>> reason is None or isinstance(reason, str)
    True
    """
    if not sys.platform.startswith("linux"):
        return (
            f"throttle mode 'netns' needs Linux network namespaces, not {sys.platform}"
        )
    caps = _capabilities()
    if os.geteuid() != 0 and not (
        caps >> _CAP_NET_ADMIN & 1 and caps >> _CAP_SYS_ADMIN & 1
    ):
        return (
            "throttle mode 'netns' needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) to "
            f"create network namespaces and qdiscs; running as uid {os.geteuid()}"
        )
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"throttle mode 'netns' needs '{tool}' (Debian package iproute2)"
    return None


def _run(command: list[str], *, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        raise NetnsError(
            f"{' '.join(command)} failed: {result.stderr.strip() or result.returncode}"
        )
    return result


@dataclasses.dataclass(frozen=True)
class NamespaceNetwork:
    """A bridge and ``nodes`` network namespaces, each joined to it by a ``veth`` pair.

    Create one with :func:`open_network` (or :func:`namespace_network`); the object is
    a plain description that pickles, so a Dask task can shape and launch on it.

    Attributes
    ----------
    tag : str
        Prefix of every name the network owns (``sp`` and six hex digits).
    nodes : int
        Namespaces, named ``<tag>-n0`` ... ``<tag>-n<nodes-1>``.
    state_dir : str
        Where the network's record and hydra launcher hook live.
    """

    tag: str
    nodes: int
    state_dir: str

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The namespace of each node, in node order."""
        return tuple(f"{self.tag}-n{i}" for i in range(self.nodes))

    @property
    def bridge(self) -> str:
        """The bridge every node's link plugs into."""
        return f"{self.tag}br"

    def outer(self, node: int) -> str:
        """The bridge-side end of node ``node``'s ``veth`` pair."""
        return f"{self.tag}v{node}"

    @property
    def launcher(self) -> str:
        """Path of the hydra launcher hook (``-launcher-exec``)."""
        return os.path.join(self.state_dir, self.tag, "launcher")

    def shape(self, nodes: int, payload_rate: float) -> None:
        """Shape the links of the first ``nodes`` nodes to ``payload_rate`` bytes/s.

        Both directions of each link are shaped: what a node sends (its end of the
        pair) and what it receives (the bridge's end).

        Parameters
        ----------
        nodes : int
            How many nodes the next launch uses.
        payload_rate : float
            Bytes per second of MPI payload through each node's link.
        """
        if not 1 <= nodes <= self.nodes:
            raise NetnsError(
                f"a launch on {nodes} nodes does not fit network {self.tag} of "
                f"{self.nodes} nodes"
            )
        for node in range(nodes):
            _run(shape_command(self.outer(node), payload_rate))
            _run(shape_command(INTERFACE, payload_rate, self.namespaces[node]))

    def mpiexec_command(self, mpiexec: str, nodes: int, ppn: int) -> list[str]:
        """Return the ``mpiexec`` words that start ``ppn`` ranks in each of ``nodes``.

        ``mpiexec`` itself runs in the first namespace and reaches the others through
        the launcher hook; ``-n RANKS PROGRAM`` follows.

        Examples
        --------
        >>> net = NamespaceNetwork(tag="sp0a1b2c", nodes=4, state_dir="/run/x")
        >>> print(" ".join(net.mpiexec_command("mpiexec", 2, 3)))
        ... # doctest: +NORMALIZE_WHITESPACE
        ip netns exec sp0a1b2c-n0 mpiexec -launcher ssh -launcher-exec
        /run/x/sp0a1b2c/launcher -iface spnic -hosts sp0a1b2c-n0:3,sp0a1b2c-n1:3
        """
        hosts = ",".join(f"{name}:{ppn}" for name in self.namespaces[:nodes])
        return [
            "ip", "netns", "exec", self.namespaces[0], mpiexec,
            "-launcher", "ssh", "-launcher-exec", self.launcher,
            "-iface", INTERFACE, "-hosts", hosts,
        ]  # fmt: skip

    def leftovers(self) -> list[str]:
        """Names of this network's namespaces and links that still exist."""
        names = _run(["ip", "netns", "list"], check=False).stdout.split()
        links = _run(["ip", "-o", "link", "show"], check=False).stdout
        found = [n for n in names if n.startswith(f"{self.tag}-")]
        for line in links.splitlines():
            fields = line.split(":")
            if len(fields) > 1 and fields[1].strip().startswith(self.tag):
                found.append(fields[1].strip().split("@")[0])
        return found


def _state_dir(state_dir) -> str:
    return os.fspath(config.resolve(state_dir, "netns.state-dir"))


def _build(network: NamespaceNetwork) -> None:
    os.makedirs(os.path.dirname(network.launcher), exist_ok=True)
    with open(network.launcher, "w", encoding="ascii") as f:
        f.write(_LAUNCHER.format(tag=network.tag))
    os.chmod(network.launcher, 0o755)
    bridge = network.bridge
    _run(["ip", "link", "add", bridge, "mtu", str(MTU), "type", "bridge"])
    _run(["ip", "link", "set", bridge, "up"])
    for node, namespace in enumerate(network.namespaces):
        outer, inside = network.outer(node), ["ip", "-n", namespace]
        address = f"10.87.{node // 250}.{node % 250 + 1}/16"
        _run(["ip", "netns", "add", namespace])
        _run(["ip", "link", "add", outer, "mtu", str(MTU), "type", "veth",
              "peer", "name", INTERFACE, "netns", namespace])  # fmt: skip
        _run(["ip", "link", "set", outer, "master", bridge, "up"])
        _run([*inside, "addr", "add", address, "dev", INTERFACE])
        _run([*inside, "link", "set", INTERFACE, "up"])
        _run([*inside, "link", "set", "lo", "up"])
        _run(root_command(outer))
        _run(root_command(INTERFACE, namespace))


def open_network(nodes: int, *, state_dir=None) -> NamespaceNetwork:
    """Create a network of ``nodes`` namespaces owned by this process.

    Networks left behind by dead owners are removed first.

    Parameters
    ----------
    nodes : int
        Number of emulated nodes.
    state_dir : str, optional
        Where records live (setting ``scaleprobe.netns.state-dir``).

    Returns
    -------
    NamespaceNetwork
        The network, its links not shaped yet (see :meth:`NamespaceNetwork.shape`).

    Raises
    ------
    NetnsError
        If this host cannot run namespaces or a command fails; whatever was
        created is removed again.
    """
    reason = netns_unavailable()
    if reason is not None:
        raise NetnsError(reason)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or not 1 <= nodes <= 1000:
        raise NetnsError(f"nodes must be an integer in [1, 1000], got {nodes!r}")
    directory = _state_dir(state_dir)
    remove_stale(directory)
    network = NamespaceNetwork(
        tag=f"sp{secrets.token_hex(3)}", nodes=nodes, state_dir=directory
    )
    _write_record(directory, network.tag, nodes)
    try:
        _build(network)
    except BaseException:
        close_network(network)
        raise
    return network


def _kill_inside(namespace: str) -> None:
    pids = _run(["ip", "netns", "pids", namespace], check=False).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def _teardown(tag: str, nodes: int, directory: str) -> None:
    network = NamespaceNetwork(tag=tag, nodes=nodes, state_dir=directory)
    for node, namespace in enumerate(network.namespaces):
        _kill_inside(namespace)
        # Deleting one end removes the pair now; a namespace's links go later.
        _run(["ip", "link", "del", network.outer(node)], check=False)
        _run(["ip", "netns", "del", namespace], check=False)
    _run(["ip", "link", "del", network.bridge], check=False)
    shutil.rmtree(os.path.join(directory, tag), ignore_errors=True)
    _remove_record(directory, tag)


def close_network(network: NamespaceNetwork) -> None:
    """Remove a network: kill what runs inside, delete namespaces, links and bridge.

    Parameters
    ----------
    network : NamespaceNetwork
        A network opened by this process.
    """
    _teardown(network.tag, network.nodes, network.state_dir)


def remove_stale(state_dir=None) -> list[str]:
    """Remove every network whose owning process is gone.

    Parameters
    ----------
    state_dir : str, optional
        Where records live (setting ``scaleprobe.netns.state-dir``).

    Returns
    -------
    list of str
        Tags of the networks removed.
    """
    directory = _state_dir(state_dir)
    removed = []
    with _state_locked(directory):
        for tag, nodes in _orphans(directory):
            _teardown(tag, nodes, directory)
            removed.append(tag)
    return removed


@contextlib.contextmanager
def namespace_network(nodes: int, *, state_dir=None):
    """Open a network for the duration of a ``with`` block.

    Examples
    --------
    >>> with namespace_network(2) as net:              # doctest: +SKIP
    ...     net.shape(2, 12.5e6)
    """
    network = open_network(nodes, state_dir=state_dir)
    try:
        yield network
    finally:
        close_network(network)


# ------------------------------------------------ records of the networks


def _start_time(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot, or None if it is not running."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses; count after it.
    return int(text.rsplit(")", 1)[1].split()[19])


@contextlib.contextmanager
def _state_locked(directory: str):
    """Hold the state directory's lock (one cleaner or creator at a time)."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _write_record(directory: str, tag: str, nodes: int) -> None:
    """Record that this process owns network ``tag`` of ``nodes`` nodes."""
    record = {"pid": os.getpid(), "start": _start_time(os.getpid()), "nodes": nodes}
    with _state_locked(directory):
        path = os.path.join(directory, f"{tag}.json")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(path + ".tmp", path)


def _remove_record(directory: str, tag: str) -> None:
    """Forget network ``tag``."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(directory, f"{tag}.json"))


def _orphans(directory: str) -> list[tuple[str, int]]:
    """``(tag, nodes)`` of every recorded network whose owner is no longer running."""
    found = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                record = json.load(f)
            pid, start, nodes = record["pid"], record["start"], int(record["nodes"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _start_time(pid) != start:
            found.append((name[: -len(".json")], nodes))
    return found
