"""The instrumented communicator every kernel talks through."""

from __future__ import annotations

import atexit
import os

import numpy as np

from ._args import MODES, resolve_config
from ._clock import COLLECTIVE_SCALINGS, COUNTER_KEYS, PATH_KEYS, RankClock
from ._collcalls import CollectiveMixin
from ._idle import idle_barrier
from ._link import LinkModel, applied_link
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
        """Wrap ``mpi_comm`` configured by ``SCALEPROBE_COMM`` (mode none if unset).

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

    # -- time and counters --------------------------------------------------------

    def clock(self) -> float:
        """This rank's time since start (virtual in emulated mode, else wall), s."""
        return self._clock.time()

    def sync(self) -> float:
        """Align every rank's clock to the latest one (collective, costs nothing).

        In emulated mode every rank also takes the critical path of the latest rank,
        so that :meth:`critical_path_since` measures from a common origin.

        Returns
        -------
        float
            The common time.
        """
        self._clock.enter()
        latest = None
        try:
            table = self._stamps()
            latest = table[int(np.argmax(table[:, 0]))]
            if not self._clock.emulated:
                return self._clock.wall()
            return float(latest[0])
        finally:
            self._clock.leave(latest if self._clock.emulated else None)

    def _stamps(self):
        """Every rank's stamp ``[time, *path]`` (one real Allgather, no cost)."""
        self._arrive()
        self._resolve()
        mine = self._clock.stamp()
        table = np.empty((self.size, mine.size), dtype=np.float64)
        self.mpi.Allgather(mine, table)
        return table

    def elapsed_since(self, start: float) -> float:
        """Latest clock over ranks minus ``start`` (collective).

        Parameters
        ----------
        start : float
            A time from :meth:`sync`.

        Returns
        -------
        float
        """
        from mpi4py import MPI

        now = self._clock.enter()
        try:
            self._arrive()
            self._resolve()
            now = self._clock.now if self._clock.emulated else now
            return self.mpi.allreduce(now, op=MPI.MAX) - start
        finally:
            self._clock.leave(None)

    def path(self) -> dict:
        """This rank's critical path so far: seconds of each part (local, no MPI).

        Right after :meth:`sync` every rank holds the same path; pass it to
        :meth:`critical_path_since` later.

        Returns
        -------
        dict
            ``{"comp": s, "latency": s, "bandwidth": s, "intra": s}`` (zeros unless
            the mode is emulated).
        """
        self._clock.flush()
        return dict(zip(PATH_KEYS, self._clock.path.tolist(), strict=True))

    def critical_path_since(self, start: dict) -> dict:
        """Critical path of the latest rank since ``start`` (collective, costs nothing).

        Parameters
        ----------
        start : dict
            A :meth:`path` taken right after a :meth:`sync`.

        Returns
        -------
        dict
            ``cp_comp_time``, ``cp_latency_time``, ``cp_bandwidth_time`` and
            ``cp_intra_time`` (seconds, summing to the elapsed virtual time):
            computation, inter-node latency, inter-node bandwidth and intra-node
            parts of the chain of events that determined the elapsed time. Empty
            unless the mode is emulated (nothing is modelled otherwise).

        Examples
        --------
        >>> start = comm.sync(); origin = comm.path()  # doctest: +SKIP
        >>> parts = comm.critical_path_since(origin)  # doctest: +SKIP
        """
        self._clock.enter()
        try:
            table = self._stamps()
        finally:
            self._clock.leave(None)
        if not self._clock.emulated:
            return {}
        latest = table[int(np.argmax(table[:, 0])), 1:]
        return {
            name: float(latest[i] - start.get(key, 0.0))
            for i, (name, key) in enumerate(
                zip(PATH_RECORD_KEYS, PATH_KEYS, strict=True)
            )
        }

    def collective_latency(self) -> dict:
        """Latency this rank's collectives over all ranks charged so far (local).

        Split by how the algorithm's rounds grow with the ranks: ``log2 p``
        (``coll_tree_latency_time``) or ``p`` (``coll_linear_latency_time``). Every
        rank calls the same collectives, which are on the critical path, so a
        difference of two of these is that part of ``cp_latency_time``; a model can
        then extrapolate each part with the shape its algorithm gives. Calls on
        split communicators are in neither.

        Returns
        -------
        dict
            Seconds per key of :data:`COLLECTIVE_RECORD_KEYS`.
        """
        return {
            key: float(self._clock.collective_latency[scaling])
            for key, scaling in zip(
                COLLECTIVE_RECORD_KEYS, COLLECTIVE_SCALINGS, strict=True
            )
        }

    def collective_calls(self) -> dict:
        """Collective calls this rank made, by kind (local, no MPI).

        Returns
        -------
        dict
            ``{kind: (calls, bytes)}`` with ``bytes`` the per-rank payload summed
            over the calls (kinds: ``barrier``, ``bcast``, ``reduce``, ``allreduce``,
            ``scatter``, ``gather``, ``allgather``, ``alltoall`` and the ``v``
            variants).
        """
        return {k: (int(c), float(b)) for k, (c, b) in self._clock.collectives.items()}

    def counters(self) -> dict:
        """Snapshot of this rank's counters (see :data:`COUNTER_KEYS`).

        Returns
        -------
        dict
            ``comp_time``, ``comm_time`` (s), ``bytes_sent``, ``bytes_inter``,
            ``bytes_intra``, ``messages``, ``messages_inter``.
        """
        return self._clock.snapshot()

    def counters_since(self, snapshot: dict) -> dict:
        """Counters accumulated since an earlier :meth:`counters` snapshot.

        Parameters
        ----------
        snapshot : dict
            An earlier snapshot.

        Returns
        -------
        dict
        """
        now = self.counters()
        return {key: now[key] - snapshot.get(key, 0) for key in COUNTER_KEYS}

    def link_record(self) -> dict:
        """The link model this communicator applies, for the ``link`` key of a record.

        Returns
        -------
        dict
            See :func:`~scaleprobe.kernels.comm._link.applied_link`.
        """
        return applied_link(self.mode, self.ppn, self.link, self.network)

    def close(self) -> None:
        """Give back the core slot for good (call before leaving the kernel)."""
        if self._clock.slots is not None:
            self._clock.slots.close()
            self._clock.slots = None
