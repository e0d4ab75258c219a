"""The instrumented, throttled communicator every scaleprobe kernel talks through.

:class:`InstrumentedComm` wraps an mpi4py communicator. It counts the bytes and
messages each rank sends (split intra-node / inter-node, node = world rank // ppn),
separates computation from communication time, and in ``"emulated"`` mode runs the
program for real while keeping time in a per-rank *virtual clock*.

Mode ``"netns"`` (the network itself shaped with namespaces and ``tc``) is timed and
counted like ``"none"``: wall clock, no modelling.

Virtual time
    Computation between communication calls advances a rank's clock by the process
    CPU time it used (launched kernels run one BLAS/OpenMP thread, so this is the
    rank's own work; oversubscribed ranks still get honest times). A rank swept over
    ``threads`` runs its parallel regions on a
    :class:`~scaleprobe.kernels.comm.threads.ThreadTeam`, which charges each its
    longest thread's CPU time instead. The CPU mark is
    reset when a call returns, so CPU burnt polling inside MPI is not charged.
    What a call costs on either side of the CPU readings (its Python frames, the
    reading itself: about a microsecond) is not charged either: every burst is
    reduced by the cost of a call that does nothing, calibrated when the
    communicator starts (:func:`~scaleprobe.kernels.comm._clock.call_overhead`).
    Communication advances the clock by the link model below.

Link model (:class:`~scaleprobe.kernels.schema.LinkConfig`, :func:`transfer_time`)
    An inter-node message of ``n`` bytes alone on the network takes
    ``latency + n / B`` with ``B = link_bandwidth * bandwidth / 100``; an intra-node
    one takes ``memory_latency + n / memory_bandwidth``.

The emulated machine (``topology``, ``allocation``; :class:`Network`)
    The job's ``N`` nodes (node of world rank ``r`` = ``r // ppn``) are placed on a
    machine of ``machine_nodes`` nodes, compactly or at random (seeded), as a batch
    system on a busy machine does; machine nodes hang ``nodes_per_switch`` (18) to
    a leaf switch, leaves ``switches_per_rack`` to a rack. Every node has an
    injection and an ejection link of ``B``; with an ``oversubscription`` above 1
    each leaf has an uplink and a downlink of ``nodes_per_switch * B /
    oversubscription`` (racks likewise with ``rack_oversubscription``), and each
    switch a message crosses beyond the first adds ``hop_latency``. The record's
    ``link`` echoes the machine and the placement, and :meth:`summary` reports the
    allocation's switches ``SW``, racks ``R`` and ``SWR``.

Contention (``nic_sharing="flows"``, the default)
    Concurrent inter-node messages are flows that share every link they cross
    max-min fairly, rates changing whenever a flow starts or ends
    (:mod:`._replay`): a message alone gets the whole NIC, ``k`` messages leaving
    one node at once ``B / k`` each, ``k`` arriving at one node (incast) ``B / k``
    each, and messages crossing an oversubscribed uplink share it. A message
    arrives one latency after its last byte left. Because a rank cannot know in
    real time what the other ranks will send in virtual time, point-to-point
    calls return *provisional* times (each rank's sends leave its NIC one after
    the other at ``B``, as if alone) and log every send and wait; the next
    collective on all ranks replays the logs as a deterministic discrete-event
    simulation (:mod:`._replay`) and sets every clock to its
    exact value. Times read with :meth:`~InstrumentedComm.clock` between two such
    collectives are provisional; :meth:`~InstrumentedComm.mark` and
    :meth:`~InstrumentedComm.marked` give exact times of instants in between.
    Sends are buffered (a sender never waits for its receiver); ``Test`` decides
    on the provisional time. ``nic_sharing="fair"`` keeps the earlier static
    model (each of a node's ranks ``B / ppn`` for its sends, receivers unmodelled,
    no replay) and ``"exclusive"`` gives each rank ``B``.

Point-to-point
    The sender's modelled arrival time travels with the message (a header in the
    same real message, so ``ANY_SOURCE`` works). A send starts when the rank's
    egress queue is free and completes (also ``Isend``'s Wait) when the bytes have
    left; the receive completes at ``max(post time, arrival)``. Non-blocking
    transfers proceed while the rank computes; ``Wait`` completes at
    ``max(now, modelled completion)`` and ``Test`` reports completion only once the
    rank's clock has reached it.

Critical path
    In emulated mode each rank's clock carries the decomposition of its time into
    computation, inter-node latency, inter-node bandwidth and intra-node seconds
    along the chain of events that determined it (messages carry their sender's
    decomposition; a collective hands every rank that of the latest arrival).
    :meth:`InstrumentedComm.critical_path_since` and :meth:`InstrumentedComm.summary`
    report it (``cp_*_time``, summing to the elapsed time); the latency and
    bandwidth parts scale exactly with the link's latency and inverse bandwidth, so
    a model can re-price the recorded traffic on another network. With contention
    the bandwidth part of a message is its whole transfer at the shared rates
    (``n / B`` alone, ``k n / B`` when ``k`` equal messages share a NIC): it still
    scales exactly with ``1 / B``, since every link's capacity is a multiple of
    ``B``.
    :meth:`InstrumentedComm.collective_calls` counts collective calls by kind, and
    :meth:`InstrumentedComm.collective_latency` splits the latency that collectives
    over all ranks charged by how their rounds grow (``log2 p`` or ``p``), so that
    a model can extrapolate each part of the latency with its algorithm's shape.

Collectives
    The real MPI collective moves the data; an extra Allgather (free in virtual time)
    exchanges arrival times and sizes. The call completes on every rank at the
    latest arrival plus the cost of an explicit algorithm schedule, in which each
    step's inter-node bytes are summed per node and direction (so per-node NIC
    contention is charged) and, with oversubscribed uplinks, per switch link:
    dissemination barrier; binomial bcast, reduce, scatter(v),
    gather(v); recursive doubling / Bruck / ring allgather(v) by size; recursive
    doubling (< 2 KiB) or ring allreduce; pairwise-exchange alltoall(v) from the full
    count matrix. See :mod:`scaleprobe.kernels.comm._collectives` for the exact
    schedules. Reduction arithmetic and the per-rank skew inside a collective are not
    modelled (all ranks leave together).

Core slots
    A host-wide token (an ``flock`` on one of ``core_slots`` lock files in
    ``slot_dir``) held only during computation, so no more ranks compute at once than
    there are slots; waiting costs no virtual time. Default ``os.cpu_count()`` in
    emulated mode, off in none mode. Ranks waiting for a slot are served first
    come, first served, across all jobs of the host. With slots on, a rank that
    waits in a collective for the others to arrive sleeps between tests of an MPI
    barrier instead of spinning, so it leaves the cores to the ranks that compute
    (:mod:`scaleprobe.kernels.comm._cores`); point-to-point waits spin in MPI, as a
    large message moves only while both ends test. A rank that blocks
    outside the communicator (for example by calling ``comm.mpi`` directly) while
    holding a slot stalls the others; they give up waiting once no slot has changed
    hands for 60 s, and count ``slot_timeouts``.

What is approximate
    - computation is charged as CPU time, which co-scheduled ranks inflate for each
      other (shared caches, memory bandwidth): see the fidelity benchmark
      ``tests/benchmarks/bench_fidelity.py``;
    - point-to-point sends are buffered (no rendezvous wait); the fluid model has
      no packets, routing choices or congestion control (flows share max-min
      fairly, as SimGrid's flow model does); flows still in flight at a
      collective are finished without the next epoch's flows; collectives on a
      sub-communicator and ``Test`` see provisional times;
    - collectives ignore pending point-to-point traffic, skew between ranks inside
      the algorithm (all ranks leave together) and reduction arithmetic; one
      latency is charged per algorithm step;
    - ``Test`` only succeeds once the rank's own clock has reached the completion,
      so a tight polling loop without work advances time slowly (use ``Wait``);
    - in none mode the v-variants and ``gather``/``allgather`` add one small real
      Allgather of sizes (for the counters).

Importing this package does not import mpi4py.
"""

from scaleprobe.kernels.schema import Allocation, LinkConfig, Topology

from ._args import add_comm_arguments, resolve_config
from ._network import Network, inter_time, intra_time, rank_bandwidth, transfer_time
from ._timing import SUMMARY_LONG_NAMES
from .instrumented import InstrumentedComm, Request

__all__ = [
    "SUMMARY_LONG_NAMES",
    "Allocation",
    "InstrumentedComm",
    "LinkConfig",
    "Network",
    "Request",
    "Topology",
    "add_comm_arguments",
    "inter_time",
    "intra_time",
    "rank_bandwidth",
    "resolve_config",
    "transfer_time",
]
