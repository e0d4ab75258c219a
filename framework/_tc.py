"""Commands that shape one end of a ``veth`` pair with an ``htb`` class.

A node's link is shaped on both ends of its ``veth`` pair: the end inside the node's
namespace limits what the node sends, the end on the bridge what it receives, so the
link is full duplex at the shaped rate in each direction, as a NIC is.

Rates are rates of the bytes MPI sends. ``tc`` counts whole frames (Ethernet, IP and
TCP headers included), so the class rate is the payload rate times
:data:`WIRE_FACTOR`. ``htb`` rather than ``tbf``: with segmentation offload a ``veth``
hands the qdisc segments of up to 64 KiB, which ``htb`` charges in full (going into
debt) while a ``tbf`` bucket small enough to pace a 64 KiB message would split them
and run out of CPU above a few hundred Mbit/s. No latency is added: ``netem`` is not
used (the development host's kernel has none), so a link's latency is that of the
``veth`` pair and the TCP stack.
"""

from __future__ import annotations

__all__ = ["MTU", "WIRE_FACTOR", "class_rate", "root_command", "shape_command"]

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
