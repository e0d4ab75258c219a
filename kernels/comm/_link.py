"""The link model: what one message costs on the emulated interconnect."""

from __future__ import annotations

from dataclasses import dataclass

from scaleprobe.kernels.schema import LINK_DEFAULTS
from scaleprobe.kernels.units import (
    UnitError,
    parse_bandwidth,
    parse_duration,
)

__all__ = ["LINK_DEFAULTS", "LinkModel"]

_NIC_SHARING = ("flows", "fair", "exclusive")



def _duration(value, key: str) -> float:
    # A latency of exactly zero is a legitimate idealisation; parse_duration wants > 0.
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0
    try:
        return parse_duration(value)
    except UnitError as error:
        raise ValueError(f"comm setting {key!r}: {error}") from None


def _bandwidth(value, key: str) -> float:
    try:
        return parse_bandwidth(value)
    except UnitError as error:
        raise ValueError(f"comm setting {key!r}: {error}") from None


@dataclass(frozen=True)
class LinkModel:
    """Cost of moving bytes between two ranks of the emulated cluster.

    An inter-node message of ``n`` bytes costs ``latency + n / effective_bandwidth``
    with ``effective_bandwidth = link_bandwidth * bandwidth / 100``; an intra-node
    message costs ``memory_latency + n / memory_bandwidth``.

    The defaults are :data:`~scaleprobe.kernels.schema.LINK_DEFAULTS`, the same as the
    framework's
    ``scaleprobe.throttle`` settings.

    Parameters
    ----------
    link_bandwidth : float, default=1.25e8
        Bandwidth of one node's network interface, bytes/s (1.25e8 is 1 Gbit/s).
    bandwidth : float, default=100.0
        Percentage of ``link_bandwidth`` the emulated link delivers (the throttle).
    latency : float, default=5e-6
        Per-message latency between nodes, seconds.
    memory_bandwidth : float, default=5e9
        Bandwidth of a message between two ranks of one node, bytes/s.
    memory_latency : float, default=5e-7
        Per-message latency between two ranks of one node, seconds.
    nic_sharing : {"flows", "fair", "exclusive"}, default="flows"
        How concurrent point-to-point messages share the network: ``"flows"``
        shares every NIC (sending and receiving) and switch link max-min fairly
        between the transfers crossing it at each moment, so a message alone gets
        the whole interface and ``k`` at once ``1/k`` each (see
        :mod:`scaleprobe.kernels.comm._replay`); ``"fair"`` gives each of a node's
        ``ppn`` ranks a fixed ``1/ppn`` of its sending bandwidth whether or not the
        others send (the model before ``"flows"``), ``"exclusive"`` each rank the
        whole interface (an optimistic bound).

    Attributes
    ----------
    effective_bandwidth : float
        ``link_bandwidth * bandwidth / 100``, bytes/s.

    Examples
    --------
    >>> link = LinkModel(link_bandwidth=1.25e8, bandwidth=50.0, latency=0.0)
    >>> link.effective_bandwidth
    62500000.0
    >>> link.inter_time(62_500_000)
    1.0
    """

    link_bandwidth: float = parse_bandwidth(LINK_DEFAULTS["link-bandwidth"])
    bandwidth: float = 100.0
    latency: float = parse_duration(LINK_DEFAULTS["latency"])
    memory_bandwidth: float = parse_bandwidth(LINK_DEFAULTS["memory-bandwidth"])
    memory_latency: float = parse_duration(LINK_DEFAULTS["memory-latency"])
    nic_sharing: str = "flows"

    def __post_init__(self):
        for name in ("link_bandwidth", "memory_bandwidth"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"LinkModel {name} must be positive, got {value!r}")
        if not 0 < self.bandwidth <= 100:
            raise ValueError(
                f"LinkModel bandwidth is a percentage in (0, 100], "
                f"got {self.bandwidth!r}"
            )
        for name in ("latency", "memory_latency"):
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"LinkModel {name} must be >= 0, got {value!r}")
        if self.nic_sharing not in _NIC_SHARING:
            raise ValueError(
                f"LinkModel nic_sharing must be one of {_NIC_SHARING}, "
                f"got {self.nic_sharing!r}"
            )

    @property
    def effective_bandwidth(self) -> float:
        """Inter-node bandwidth after throttling, bytes/s."""
        return self.link_bandwidth * self.bandwidth / 100.0

    def rank_bandwidth(self, ppn: int) -> float:
        """Inter-node bandwidth one rank gets for point-to-point messages.

        Parameters
        ----------
        ppn : int
            Ranks per node sharing the interface.

        Returns
        -------
        float
            ``effective_bandwidth / ppn`` with ``nic_sharing="fair"`` (and with
            ``"flows"``, where it is the share of each rank when all the node's
            ranks send at once: an estimate, the replay charges the real sharing),
            else ``effective_bandwidth``.
        """
        if self.nic_sharing in ("fair", "flows"):
            return self.effective_bandwidth / max(int(ppn), 1)
        return self.effective_bandwidth

    def inter_time(self, nbytes: float, ppn: int = 1) -> float:
        """Time for one inter-node message, latency included.

        Parameters
        ----------
        nbytes : float
            Message size in bytes.
        ppn : int, default=1
            Ranks per node sharing the interface (see :meth:`rank_bandwidth`).

        Returns
        -------
        float
            Seconds.
        """
        return self.latency + nbytes / self.rank_bandwidth(ppn)

    def intra_time(self, nbytes: float) -> float:
        """Time for one intra-node message, latency included.

        Parameters
        ----------
        nbytes : float
            Message size in bytes.

        Returns
        -------
        float
            Seconds.
        """
        return self.memory_latency + nbytes / self.memory_bandwidth

    def transfer_time(self, nbytes: float, inter: bool, ppn: int = 1) -> float:
        """Time for one message, inter-node or intra-node.

        Parameters
        ----------
        nbytes : float
            Message size in bytes.
        inter : bool
            Whether the message crosses nodes.
        ppn : int, default=1
            Ranks per node sharing the interface.

        Returns
        -------
        float
            Seconds.
        """
        return self.inter_time(nbytes, ppn) if inter else self.intra_time(nbytes)

    def to_config(self) -> dict:
        """The model as a JSON-ready dict in SI units (the keys of ``SCALEPROBE_LINK``).

        Returns
        -------
        dict
        """
        return {
            "link_bandwidth": self.link_bandwidth,
            "bandwidth": self.bandwidth,
            "latency": self.latency,
            "memory_bandwidth": self.memory_bandwidth,
            "memory_latency": self.memory_latency,
            "nic_sharing": self.nic_sharing,
        }

    @classmethod
    def from_config(cls, config: dict) -> LinkModel:
        """Build a model from a configuration dict; missing keys take the defaults.

        Parameters
        ----------
        config : dict
            May hold ``link_bandwidth`` (bytes/s or a string such as
            ``"1 Gbit/s"``), ``bandwidth`` (percent), ``latency`` (s or ``"5 us"``),
            ``memory_bandwidth``, ``memory_latency`` and ``nic_sharing``; other keys
            are ignored.

        Returns
        -------
        LinkModel

        Examples
        --------
        >>> link = LinkModel.from_config({"link_bandwidth": "1 Gbit/s", "bandwidth": 5})
        >>> link.effective_bandwidth
        6250000.0
        """
        values = {}
        if config.get("link_bandwidth") is not None:
            values["link_bandwidth"] = _bandwidth(
                config["link_bandwidth"], "link_bandwidth"
            )
        if config.get("memory_bandwidth") is not None:
            values["memory_bandwidth"] = _bandwidth(
                config["memory_bandwidth"], "memory_bandwidth"
            )
        if config.get("bandwidth") is not None:
            percent = config["bandwidth"]
            if isinstance(percent, str):
                percent = percent.strip().rstrip("%")
            try:
                values["bandwidth"] = float(percent)
            except (TypeError, ValueError):
                raise ValueError(
                    f"comm setting 'bandwidth' is a percentage of the link, "
                    f"got {config['bandwidth']!r}"
                ) from None
        for key in ("latency", "memory_latency"):
            if config.get(key) is not None:
                values[key] = _duration(config[key], key)
        if config.get("nic_sharing") is not None:
            values["nic_sharing"] = str(config["nic_sharing"])
        return cls(**values)
