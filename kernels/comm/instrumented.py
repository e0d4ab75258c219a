"""The instrumented communicator every kernel talks through."""

from __future__ import annotations

import atexit
import os

import numpy as np
from scaleprobe.kernels.schema import LinkConfig

from ._args import MODES, resolve_config
from ._clock import RankClock
from ._collcalls import CollectiveMixin
from ._idle import idle_barrier
from ._link import LinkModel
from ._objects import ObjectCollectiveMixin
from ._p2p import PointToPointMixin, Request
from ._resolve import ResolutionMixin
from ._slots import CoreSlots
from ._summary import (
    COLLECTIVE_RECORD_KEYS,
    PATH_LONG_NAMES,
    PATH_RECORD_KEYS,
    SUMMARY_UNITS,
    SummaryMixin,
)
from ._timing import TimingMixin
from ._topology import Allocation, Network, Topology

__all__ = [
    "COLLECTIVE_RECORD_KEYS",
    "PATH_LONG_NAMES",
    "PATH_RECORD_KEYS",
    "SUMMARY_UNITS",
    "InstrumentedComm",
    "Request",
]


class InstrumentedComm(
    PointToPointMixin,
    CollectiveMixin,
    ObjectCollectiveMixin,
    ResolutionMixin,
    SummaryMixin,
    TimingMixin,
):
    """An mpi4py communicator that counts traffic and can throttle it in virtual time.

    Construction is collective (it ends with a barrier that sets time zero).

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Comm
        The communicator to wrap (usually ``MPI.COMM_WORLD``).
    mode : {"none", "emulated", "netns"}, default="none"
        ``"none"``: real interconnect, wall-clock time. ``"emulated"``: virtual time
        from CPU time of computation plus the link model for communication.
        ``"netns"``: the network itself is shaped (namespaces and ``tc``); timed and
        counted like ``"none"``.
    ppn : int, default=1
        Ranks per emulated node; the node of world rank ``r`` is ``r // ppn``.
    link : LinkModel, optional
        Link and memory parameters; defaults of :class:`LinkModel`.
    core_slots : int, optional
        Host-wide number of ranks allowed to compute at once (see
        :class:`~scaleprobe.kernels.comm._slots.CoreSlots`); 0 disables. Default:
        ``os.cpu_count()`` in emulated mode, 0 in none mode.
    slot_dir : str, optional
        Directory of the slot lock files.
    topology : Topology, optional
        Switches and racks of the emulated machine (default ``Topology()``).
    allocation : Allocation, optional
        Where the job's nodes sit on it (default compact).

    Attributes
    ----------
    rank, size : int
        Rank and size of the wrapped communicator.
    ppn : int
        Ranks per node.
    node : int
        This rank's node (world rank // ppn).
    nodes : int
        Number of distinct nodes spanned by this communicator.
    mode : str
        Throttle mode.
    link : LinkModel
        The link model.
    network : Network
        Links, routes and placement of the job's nodes on the emulated machine.
    mpi : mpi4py.MPI.Comm
        The wrapped communicator; do not communicate through it directly.

    Examples
    --------
    >>> from mpi4py import MPI  # doctest: +SKIP
    >>> comm = InstrumentedComm(MPI.COMM_WORLD, mode="emulated")  # doctest: +SKIP
    >>> t0 = comm.sync()  # doctest: +SKIP
    """

    def __init__(
        self,
        mpi_comm,
        mode="none",
        ppn=1,
        link=None,
        core_slots=None,
        slot_dir=None,
        topology=None,
        allocation=None,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if isinstance(ppn, bool) or not isinstance(ppn, int) or ppn < 1:
            raise ValueError(f"ppn must be a positive integer, got {ppn!r}")
        if core_slots is None:
            core_slots = (os.cpu_count() or 1) if mode == "emulated" else 0
        world_rank = mpi_comm.Get_rank()
        slots = None
        if core_slots:
            slots = CoreSlots(core_slots, slot_dir, first=world_rank)
        if slots is not None:
            atexit.register(slots.close)
        clock = RankClock(mode, slots)
        size = mpi_comm.Get_size()
        link = link or LinkModel()
        clock.replaying = mode == "emulated" and link.nic_sharing == "flows"
        clock.world_size = size
        network = Network(
            -(-size // ppn),
            link.effective_bandwidth,
            link.latency,
            topology or Topology(),
            allocation or Allocation(),
        )
        self._setup(mpi_comm, mode, ppn, link, clock, np.arange(size), network)
        if self._idle:
            idle_barrier(mpi_comm)
        else:
            mpi_comm.Barrier()
        clock.restart()

    def _setup(self, mpi_comm, mode, ppn, link, clock, world_ranks, network):
        self.mpi = mpi_comm
        self.mode = mode
        self.ppn = ppn
        self.link = link
        self.network = network
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        self._clock = clock
        # ranks that take turns on the cores must not spin while they wait
        self._idle = clock.slots is not None
        self._world_ranks = np.asarray(world_ranks, dtype=np.int64)
        self._nodes = self._world_ranks // ppn
        self.world_rank = int(self._world_ranks[self.rank])
        self.node = int(self._nodes[self.rank])
        self.nodes = len(np.unique(self._nodes))
        self._cache = {}

    @classmethod
    def from_environment(cls, mpi_comm, environ=None) -> InstrumentedComm:
        """Wrap ``mpi_comm`` configured by the launch's link (mode none if unset).

        Parameters
        ----------
        mpi_comm : mpi4py.MPI.Comm
            Communicator to wrap.
        environ : mapping, optional
            Environment to read instead of :data:`os.environ`.

        Returns
        -------
        InstrumentedComm
        """
        return cls._from_config(mpi_comm, resolve_config(None, environ))

    @classmethod
    def from_arguments(cls, mpi_comm, args, environ=None) -> InstrumentedComm:
        """Wrap ``mpi_comm``; flags from :func:`add_comm_arguments` override the
        environment.

        Parameters
        ----------
        mpi_comm : mpi4py.MPI.Comm
            Communicator to wrap.
        args : argparse.Namespace
            Parsed command line.
        environ : mapping, optional
            Environment to read instead of :data:`os.environ`.

        Returns
        -------
        InstrumentedComm
        """
        return cls._from_config(mpi_comm, resolve_config(args, environ))

    @classmethod
    def _from_config(cls, mpi_comm, config):
        return cls(
            mpi_comm,
            mode=config["mode"],
            ppn=config["ppn"],
            link=config["link"],
            core_slots=config["core_slots"],
            slot_dir=config["slot_dir"],
            topology=config["topology"],
            allocation=config["allocation"],
        )

    # -- mpi4py look-alikes -----------------------------------------------------

    def Get_rank(self) -> int:  # noqa: N802 - mpi4py naming
        """Rank in this communicator."""
        return self.rank

    def Get_size(self) -> int:  # noqa: N802 - mpi4py naming
        """Number of ranks in this communicator."""
        return self.size

    def Split(self, color=0, key=0) -> InstrumentedComm | None:  # noqa: N802
        """Split into sub-communicators sharing this rank's clock, counters and link.

        Charged like an allgather of two integers on this communicator.

        Parameters
        ----------
        color : int
            Ranks with the same color end up together (``MPI.UNDEFINED``: none).
        key : int, default=0
            Orders ranks within the new communicator.

        Returns
        -------
        InstrumentedComm or None
            None for ``MPI.UNDEFINED``.
        """
        from mpi4py import MPI

        def split():
            return self.mpi.Split(color, key)

        new = self._uniform("allgather", lambda: 8, split)
        if new == MPI.COMM_NULL:
            return None
        self._clock.enter()
        try:
            members = np.array(new.allgather(self.world_rank), dtype=np.int64)
        finally:
            self._clock.leave(None)
        child = object.__new__(type(self))
        child._setup(
            new, self.mode, self.ppn, self.link, self._clock, members, self.network
        )
        return child

    def _arrive(self) -> None:
        """Wait until every rank has entered this collective call.

        Only when the ranks take turns on the cores (core slots): the wait sleeps
        (:func:`~scaleprobe.kernels.comm._idle.idle_barrier`), so the ranks that
        arrive first do not spin on the cores the others still compute on, and the
        real MPI call that follows finds every rank there. Otherwise a no-op.
        """
        if self._idle:
            idle_barrier(self.mpi)

    def Free(self) -> None:  # noqa: N802 - mpi4py naming
        """Free the wrapped communicator (for communicators made by :meth:`Split`)."""
        self.mpi.Free()

    @property
    def core_slots(self) -> int:
        """Ranks of this host that may compute at once (0: no core slots, any)."""
        slots = self._clock.slots
        return 0 if slots is None else int(slots.count)

    def link_record(self) -> dict:
        """The link this communicator applies, for the ``link`` key of a record.

        Returns
        -------
        dict
            :meth:`LinkConfig.to_dict <scaleprobe.kernels.schema.LinkConfig.to_dict>`
            of the link applied: throttle mode, ranks per node, link model, the
            host's core slots and the emulated machine.
        """
        link = self.link
        return LinkConfig(
            mode=self.mode,
            ppn=self.ppn,
            bandwidth=link.bandwidth,
            link_bandwidth=link.link_bandwidth,
            latency=link.latency,
            memory_bandwidth=link.memory_bandwidth,
            memory_latency=link.memory_latency,
            nic_sharing=link.nic_sharing,
            core_slots=self.core_slots,
            topology=self.network.topology.to_config(),
            allocation=self.network.allocation.to_config(),
        ).to_dict()

    def close(self) -> None:
        """Give back the core slot for good (call before leaving the kernel)."""
        if self._clock.slots is not None:
            self._clock.slots.close()
            self._clock.slots = None
