"""The instrumented communicator every kernel talks through."""

from __future__ import annotations

import atexit
import os

import numpy as np
from scaleprobe.kernels.schema import LinkConfig

from ._args import resolve_config
from ._clock import RankClock, call_overhead
from ._collcalls import CollectiveMixin, ObjectCollectiveMixin
from ._cores import CoreSlots, idle_barrier
from ._network import Network
from ._p2p import PointToPointMixin, Request
from ._replay import ResolutionMixin
from ._timing import TimingMixin

__all__ = ["InstrumentedComm", "Request"]


class InstrumentedComm(
    PointToPointMixin,
    CollectiveMixin,
    ObjectCollectiveMixin,
    ResolutionMixin,
    TimingMixin,
):
    """An mpi4py communicator that counts traffic and can throttle it in virtual time.

    Construction is collective (it ends with a barrier that sets time zero).

    Parameters
    ----------
    mpi_comm : mpi4py.MPI.Comm
        The communicator to wrap (usually ``MPI.COMM_WORLD``).
    link : LinkConfig, optional
        The link to apply: its throttle mode (``"none"``: real interconnect,
        wall-clock time; ``"emulated"``: virtual time from CPU time of computation
        plus the link model for communication; ``"netns"``: the network itself is
        shaped, timed and counted like ``"none"``), ranks per node (the node of
        world rank ``r`` is ``r // ppn``), link and memory parameters, core slots
        (host-wide number of ranks allowed to compute at once, see
        :class:`~scaleprobe.kernels.comm._cores.CoreSlots`; 0 disables; None:
        ``os.cpu_count()`` in emulated mode, 0 otherwise) and the emulated machine
        (topology and allocation). Default ``LinkConfig()``: mode none.

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
    link : LinkConfig
        The link applied, its core slots resolved (see :meth:`link_record`).
    network : Network
        Links, routes and placement of the job's nodes on the emulated machine.
    mpi : mpi4py.MPI.Comm
        The wrapped communicator; do not communicate through it directly.

    Examples
    --------
    >>> from mpi4py import MPI  # doctest: +SKIP
    >>> comm = InstrumentedComm(MPI.COMM_WORLD, LinkConfig(mode="emulated"))
    ... # doctest: +SKIP
    >>> t0 = comm.sync()  # doctest: +SKIP
    """

    def __init__(self, mpi_comm, link: LinkConfig | None = None):
        link = LinkConfig() if link is None else link
        if not isinstance(link, LinkConfig):
            raise TypeError(f"link must be a LinkConfig, got {type(link).__name__}")
        core_slots = link.core_slots
        if core_slots is None:
            core_slots = (os.cpu_count() or 1) if link.mode == "emulated" else 0
        world_rank = mpi_comm.Get_rank()
        slots = None
        if core_slots:
            slots = CoreSlots(core_slots, link.slot_dir, first=world_rank)
            atexit.register(slots.close)
        # the calls' own CPU outside their window is not the program's work
        overhead = call_overhead() if link.mode == "emulated" else 0.0
        clock = RankClock(link.mode, slots, overhead=overhead)
        size = mpi_comm.Get_size()
        clock.replaying = link.mode == "emulated" and link.nic_sharing == "flows"
        clock.world_size = size
        network = Network.from_link(link, -(-size // link.ppn))
        link = link.at(core_slots=int(slots.count) if slots is not None else 0)
        self._setup(mpi_comm, link, clock, np.arange(size), network)
        if self._idle:
            idle_barrier(mpi_comm)
        else:
            mpi_comm.Barrier()
        clock.restart()

    def _setup(self, mpi_comm, link, clock, world_ranks, network):
        self.mpi = mpi_comm
        self.link = link
        self.mode = link.mode
        self.ppn = link.ppn
        self.network = network
        self.rank = mpi_comm.Get_rank()
        self.size = mpi_comm.Get_size()
        self._clock = clock
        # ranks that take turns on the cores must not spin while they wait
        self._idle = clock.slots is not None
        self._world_ranks = np.asarray(world_ranks, dtype=np.int64)
        self._nodes = self._world_ranks // self.ppn
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
        return cls(mpi_comm, resolve_config(None, environ))

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
        return cls(mpi_comm, resolve_config(args, environ))

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
        child._setup(new, self.link, self._clock, members, self.network)
        return child

    def _arrive(self) -> None:
        """Wait until every rank has entered this collective call.

        Only when the ranks take turns on the cores (core slots): the wait sleeps
        (:func:`~scaleprobe.kernels.comm._cores.idle_barrier`), so the ranks that
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

    def link_record(self) -> LinkConfig:
        """The link this communicator applies, for the ``link`` of a record.

        Returns
        -------
        LinkConfig
            Throttle mode, ranks per node, link model, the host's core slots (0:
            none) and the emulated machine; the framework compares it with the link
            its point asked for (:meth:`LinkConfig.mismatch
            <scaleprobe.kernels.schema.LinkConfig.mismatch>`).
        """
        return self.link

    def close(self) -> None:
        """Give back the core slot for good (call before leaving the kernel)."""
        if self._clock.slots is not None:
            self._clock.slots.close()
            self._clock.slots = None
