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
    rank's own work; oversubscribed ranks still get honest times). The CPU mark is
    reset when a call returns, so CPU burnt polling inside MPI is not charged.
    Communication advances the clock by the link model below.

Link model (:class:`LinkModel`)
    An inter-node message of ``n`` bytes takes ``latency + n / B`` with
    ``B = link_bandwidth * bandwidth / 100``; an intra-node one takes
    ``memory_latency + n / memory_bandwidth``.

Point-to-point
    The sender's modelled arrival time travels with the message (an 8-byte header in
    the same real message, so ``ANY_SOURCE`` works). A send starts when the rank's
    egress queue is free, keeps it busy for ``n / B_rank`` and completes (also
    ``Isend``'s Wait) when the bytes have left; the receive completes at
    ``max(post time, start + n / B_rank + latency)``. Sends are modelled as buffered:
    a sender never waits for the receiver. NIC sharing: one interface per node; with
    ``nic_sharing="fair"`` (default) each of the node's ``ppn`` ranks gets
    ``B_rank = B / ppn`` for point-to-point traffic whether or not its neighbours
    send; ``"exclusive"`` gives every rank ``B``. Receivers' ingress is not
    modelled for point-to-point. Non-blocking transfers proceed while the rank
    computes; ``Wait`` completes at ``max(now, modelled completion)`` and ``Test``
    reports completion only once the rank's clock has reached it.

Critical path
    In emulated mode each rank's clock carries the decomposition of its time into
    computation, inter-node latency, inter-node bandwidth and intra-node seconds
    along the chain of events that determined it (messages carry their sender's
    decomposition; a collective hands every rank that of the latest arrival).
    :meth:`InstrumentedComm.critical_path_since` and :meth:`InstrumentedComm.summary`
    report it (``cp_*_time``, summing to the elapsed time); the latency and
    bandwidth parts scale exactly with the link's latency and inverse bandwidth, so
    a model can re-price the recorded traffic on another network.
    :meth:`InstrumentedComm.collective_calls` counts collective calls by kind.

Collectives
    The real MPI collective moves the data; an extra Allgather (free in virtual time)
    exchanges arrival times and sizes. The call completes on every rank at the
    latest arrival plus the cost of an explicit algorithm schedule, in which each
    step's inter-node bytes are summed per node and direction (so per-node NIC
    contention is charged): dissemination barrier; binomial bcast, reduce, scatter(v),
    gather(v); recursive doubling / Bruck / ring allgather(v) by size; recursive
    doubling (< 2 KiB) or ring allreduce; pairwise-exchange alltoall(v) from the full
    count matrix. See :mod:`scaleprobe.kernels.comm._collectives` for the exact
    schedules. Reduction arithmetic and the per-rank skew inside a collective are not
    modelled (all ranks leave together).

Core slots
    A host-wide token (an ``flock`` on one of ``core_slots`` lock files in
    ``slot_dir``) held only during computation, so no more ranks compute at once than
    there are slots; waiting costs no virtual time. Default ``os.cpu_count()`` in
    emulated mode, off in none mode. A rank that blocks outside the communicator
    (for example by calling ``comm.mpi`` directly) while holding a slot can stall
    the others; they give up waiting after 60 s and count ``slot_timeouts``.

What is approximate
    - computation is charged as CPU time, which co-scheduled ranks inflate for each
      other (shared caches, memory bandwidth): see the fidelity benchmark
      ``tests/benchmarks/bench_fidelity.py``;
    - point-to-point sends are buffered (no rendezvous wait), the receiver's
      interface (incast) is not modelled, and the per-rank share of a node's
      interface is static (``nic_sharing``);
    - collectives ignore pending point-to-point traffic, skew between ranks inside
      the algorithm (all ranks leave together) and reduction arithmetic; one
      latency is charged per algorithm step;
    - ``Test`` only succeeds once the rank's own clock has reached the completion,
      so a tight polling loop without work advances time slowly (use ``Wait``);
    - in none mode the v-variants and ``gather``/``allgather`` add one small real
      Allgather of sizes (for the counters).

Importing this package does not import mpi4py.
"""

from ._args import add_comm_arguments, resolve_config
from ._link import LinkModel
from .instrumented import (
    PATH_LONG_NAMES,
    PATH_RECORD_KEYS,
    SUMMARY_UNITS,
    InstrumentedComm,
    Request,
)

__all__ = [
    "PATH_LONG_NAMES",
    "PATH_RECORD_KEYS",
    "SUMMARY_UNITS",
    "InstrumentedComm",
    "LinkModel",
    "Request",
    "add_comm_arguments",
    "resolve_config",
]
