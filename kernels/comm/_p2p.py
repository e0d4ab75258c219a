"""Point-to-point calls of :class:`InstrumentedComm` and their request wrapper.

In emulated mode every message travels as one real MPI message of raw bytes: a
56-byte header of seven float64 holding the modelled arrival at the receiver as a
stamp (time, then the critical path that led to it: computation, latency, bandwidth
and intra-node seconds; see :mod:`scaleprobe.kernels.comm._clock`) and the sender's
world rank and sequence number (the transfer's name in the replay log), then the
payload. Matching (``ANY_SOURCE``, tags) is therefore exactly MPI's.

With a shared network (``nic_sharing="flows"``) the times a call returns are
provisional: a rank's own transfers leave its NIC one after the other at the full
bandwidth, as if no other rank used the network. Every send and every wait is logged
(:meth:`RankClock.record`), and the next collective on all ranks replays them with
contention (:mod:`scaleprobe.kernels.comm._replay`) and corrects the clocks.
"""

from __future__ import annotations

import numpy as np

from ._buffers import byte_view
from ._clock import PATH_KEYS, extend
from ._network import rank_bandwidth
from ._replay import SEND, WAIT, WAIT_RECV, WAIT_SEND

__all__ = ["PointToPointMixin", "Request"]

STAMP = 1 + len(PATH_KEYS)
HEADER = 8 * (STAMP + 2)
_LATENCY, _BANDWIDTH, _INTRA = (
    PATH_KEYS.index(k) for k in ("latency", "bandwidth", "intra")
)


def _later(a, b):
    """The later of two stamps (either may be None)."""
    if a is None:
        return b
    if b is None:
        return a
    return b if b[0] > a[0] else a


def _mpi():
    from mpi4py import MPI

    return MPI


def _any(source, tag):
    """Resolve None to ``MPI.ANY_SOURCE`` / ``MPI.ANY_TAG``."""
    mpi = _mpi()
    return (
        mpi.ANY_SOURCE if source is None else source,
        mpi.ANY_TAG if tag is None else tag,
    )


class Request:
    """A pending Isend/Irecv of an :class:`InstrumentedComm`.

    Use :meth:`Wait`, :meth:`Test` or :meth:`InstrumentedComm.Waitall`; never the
    underlying MPI request.

    Parameters
    ----------
    comm : InstrumentedComm
        The communicator that started the transfer.
    real : mpi4py.MPI.Request
        The real request.
    done : numpy.ndarray or None
        Modelled completion of a send, as a stamp (virtual seconds and path).
    staging : numpy.ndarray or None
        Header + payload buffer (kept alive until completion).
    target : numpy.ndarray or None
        For receives: the user's bytes to copy the payload into.
    """

    def __init__(self, comm, real, done=None, staging=None, target=None, key=None):
        self._comm = comm
        self._real = real
        self._done = done
        self._staging = staging
        self._target = target
        self._status = None
        self.completed = False
        # replay name: (WAIT_SEND, own sequence, 0) or (WAIT_RECV, sender, sequence)
        self._key = key

    def _finish(self, status) -> None:
        """Unpack a really completed transfer (no clock handling)."""
        if self.completed:
            return
        self.completed = True
        # release the buffers inside the call, not in the program's time after it
        staging, target, self._staging, self._target = (
            self._staging,
            self._target,
            None,
            None,
        )
        self._real = None
        if target is None or staging is None:
            return
        count = status.Get_count(_mpi().BYTE) - HEADER
        if count < 0:  # from MPI.PROC_NULL: nothing arrived
            status.Set_elements(_mpi().BYTE, 0)
            self._status = status
            return
        header = staging[:HEADER].view(np.float64)
        self._done = header[:STAMP].copy()
        if header[STAMP + 1] >= 0:
            self._key = (WAIT_RECV, float(header[STAMP]), float(header[STAMP + 1]))
        target[:count] = staging[HEADER : HEADER + count]
        status.Set_elements(_mpi().BYTE, count)
        self._status = status

    def _log_wait(self) -> None:
        """Log this transfer as one item of the wait being made (replay)."""
        if self._key is not None:
            self._comm._clock.record(*self._key)

    def _copy_status(self, status) -> None:
        if status is not None and self._status is not None:
            status.Set_source(self._status.Get_source())
            status.Set_tag(self._status.Get_tag())
            status.Set_elements(_mpi().BYTE, self._status.Get_elements(_mpi().BYTE))

    @staticmethod
    def Waitall(requests, statuses=None) -> None:  # noqa: N802 - mpi4py naming
        """Wait for all requests; same as :meth:`InstrumentedComm.Waitall`.

        Parameters
        ----------
        requests : list of Request
            Requests to complete.
        statuses : list of mpi4py.MPI.Status, optional
            Filled in order.
        """
        PointToPointMixin.Waitall(requests, statuses)

    def Wait(self, status=None) -> None:  # noqa: N802 - mpi4py naming
        """Block until the transfer completes; the clock moves to its completion.

        Parameters
        ----------
        status : mpi4py.MPI.Status, optional
            Filled with source, tag and the payload count of a receive.
        """
        clock = self._comm._clock
        clock.enter()
        try:
            if not self.completed:
                real_status = _mpi().Status()
                self._real.Wait(real_status)
                self._status = real_status
                self._finish(real_status)
            self._copy_status(status)
            self._log_wait()
            clock.record(WAIT)
        finally:
            clock.leave(self._done, p2p=True)

    def Test(self, status=None) -> bool:  # noqa: N802 - mpi4py naming
        """Whether the transfer has completed, in the rank's own time.

        In emulated mode a transfer whose modelled completion lies in this rank's
        future is reported as not done, even if the real message has arrived;
        computation between tests moves the clock forward.

        Parameters
        ----------
        status : mpi4py.MPI.Status, optional
            Filled when the result is True.

        Returns
        -------
        bool
        """
        clock = self._comm._clock
        now = clock.enter()
        try:
            if not self.completed:
                real_status = _mpi().Status()
                if self._real.Test(real_status):
                    self._status = real_status
                    self._finish(real_status)
            done = self.completed and (
                not clock.emulated or self._done is None or self._done[0] <= now
            )
            if done:
                self._copy_status(status)
                self._log_wait()
                clock.record(WAIT)
            return done
        finally:
            clock.leave(None)


class PointToPointMixin:
    """Send/Recv/Isend/Irecv/Sendrecv/Waitall of :class:`InstrumentedComm`."""

    def _route(self, dest: int, nbytes: int):
        """Count a message to ``dest``; return the stamps (sender done, arrival)."""
        clock = self._clock
        if dest < 0:  # MPI.PROC_NULL: nothing is sent
            return None, None
        inter = bool(self._nodes[dest] != self.node)
        clock.add_message(nbytes, inter)
        now = clock.now
        if not clock.emulated:
            return None, None
        link = self.link
        here = clock.stamp()
        if inter:
            # provisional with a shared network: the whole NIC, as if alone on it
            bandwidth = (
                link.effective_bandwidth
                if clock.replaying
                else rank_bandwidth(link, self.ppn)
            )
            start = max(now, clock.egress_free)
            finish = start + nbytes / bandwidth
            clock.egress_free = finish
            # Waiting for the egress queue is bandwidth-bound too.
            done = extend(here, finish - now, _BANDWIDTH)
            latency = self.network.latency(self.node, int(self._nodes[dest]))
            return done, extend(done, latency, _LATENCY)
        done = extend(here, nbytes / link.memory_bandwidth, _INTRA)
        return done, extend(done, link.memory_latency, _INTRA)

    def _pack(self, buf, dest):
        """Staged message with its header, the send's done stamp and replay key."""
        payload = byte_view(buf)
        done, arrival = self._route(dest, len(payload))
        if arrival is None:
            return buf, None, None
        clock = self._clock
        sequence, key = -1.0, None
        if clock.replaying:
            sequence = clock.sequence
            clock.sequence += 1
            clock.record(SEND, int(self._world_ranks[dest]), len(payload), sequence)
            key = (WAIT_SEND, sequence, 0.0)
        staging = np.empty(HEADER + len(payload), dtype=np.uint8)
        staging[:HEADER].view(np.float64)[:] = [*arrival, self.world_rank, sequence]
        staging[HEADER:] = payload
        return [staging, _mpi().BYTE], done, key

    def _staging_for(self, buf):
        if not self._clock.emulated:
            return buf, None, None
        target = byte_view(buf)
        staging = np.empty(HEADER + len(target), dtype=np.uint8)
        return [staging, _mpi().BYTE], staging, target

    def Send(self, buf, dest, tag=0) -> None:  # noqa: N802 - mpi4py naming
        """Blocking send; completes (in virtual time) when the bytes left the NIC.

        Parameters
        ----------
        buf : numpy.ndarray or list
            Contiguous buffer, optionally ``[array, MPI datatype]``.
        dest : int
            Destination rank.
        tag : int, default=0
            Message tag.
        """
        clock = self._clock
        clock.enter()
        done = None
        try:
            message, done, key = self._pack(buf, dest)
            self.mpi.Send(message, dest, tag)
            if key is not None:
                clock.record(*key)
                clock.record(WAIT)
        finally:
            clock.leave(done, p2p=True)

    def Recv(self, buf, source=None, tag=None, status=None) -> None:  # noqa: N802
        """Blocking receive; completes at max(post time, modelled arrival).

        Parameters
        ----------
        buf : numpy.ndarray or list
            Contiguous receive buffer.
        source : int, optional
            Source rank; ``MPI.ANY_SOURCE`` when omitted.
        tag : int, optional
            Message tag; ``MPI.ANY_TAG`` when omitted.
        status : mpi4py.MPI.Status, optional
            Filled with the source, tag and payload count.
        """
        self._clock.enter()
        try:
            self.Irecv(buf, source, tag).Wait(status)
        finally:
            self._clock.leave(None)

    def Isend(self, buf, dest, tag=0) -> Request:  # noqa: N802 - mpi4py naming
        """Non-blocking send; the transfer proceeds while the rank computes.

        Parameters
        ----------
        buf : numpy.ndarray or list
            Contiguous buffer; do not modify it before the request completes.
        dest : int
            Destination rank.
        tag : int, default=0
            Message tag.

        Returns
        -------
        Request
        """
        self._clock.enter()
        try:
            message, done, key = self._pack(buf, dest)
            real = self.mpi.Isend(message, dest, tag)
            staging = message[0] if done is not None else None
            return Request(self, real, done=done, staging=staging, key=key)
        finally:
            self._clock.leave(None)

    def Irecv(self, buf, source=None, tag=None) -> Request:  # noqa: N802
        """Non-blocking receive into ``buf``.

        Parameters
        ----------
        buf : numpy.ndarray or list
            Contiguous receive buffer.
        source : int, optional
            Source rank; ``MPI.ANY_SOURCE`` when omitted.
        tag : int, optional
            Message tag; ``MPI.ANY_TAG`` when omitted.

        Returns
        -------
        Request
        """
        self._clock.enter()
        try:
            message, staging, target = self._staging_for(buf)
            source, tag = _any(source, tag)
            real = self.mpi.Irecv(message, source, tag)
            return Request(self, real, staging=staging, target=target)
        finally:
            self._clock.leave(None)

    @staticmethod
    def Waitall(requests, statuses=None) -> None:  # noqa: N802 - mpi4py naming
        """Wait for all requests; the clock moves to the latest completion.

        Parameters
        ----------
        requests : list of Request
            Requests of one communicator (or of communicators sharing a clock).
        statuses : list of mpi4py.MPI.Status, optional
            Filled in order.
        """
        requests = list(requests)
        if not requests:
            return
        clock = requests[0]._comm._clock
        clock.enter()
        latest = None
        try:
            pending = [r for r in requests if not r.completed]
            real_statuses = [_mpi().Status() for _ in pending]
            if pending:
                _mpi().Request.Waitall([r._real for r in pending], real_statuses)
            for request, status in zip(pending, real_statuses, strict=True):
                request._status = status
                request._finish(status)
            for index, request in enumerate(requests):
                if statuses is not None:
                    request._copy_status(statuses[index])
                latest = _later(latest, request._done)
                request._log_wait()
            clock.record(WAIT)
        finally:
            clock.leave(latest, p2p=True)

    def Sendrecv(  # noqa: N802 - mpi4py naming
        self,
        sendbuf,
        dest,
        sendtag=0,
        recvbuf=None,
        source=None,
        recvtag=None,
        status=None,
    ) -> None:
        """Send and receive at once; completes when both parts have.

        Parameters
        ----------
        sendbuf : numpy.ndarray or list
            Buffer to send.
        dest : int
            Destination rank.
        sendtag : int, default=0
            Tag of the sent message.
        recvbuf : numpy.ndarray or list
            Buffer to receive into.
        source : int, optional
            Source rank; ``MPI.ANY_SOURCE`` when omitted.
        recvtag : int, optional
            Tag of the received message; ``MPI.ANY_TAG`` when omitted.
        status : mpi4py.MPI.Status, optional
            Filled for the received message.
        """
        clock = self._clock
        clock.enter()
        latest = None
        try:
            message, sent, key = self._pack(sendbuf, dest)
            incoming, staging, target = self._staging_for(recvbuf)
            real_status = _mpi().Status()
            source, recvtag = _any(source, recvtag)
            self.mpi.Sendrecv(
                message, dest, sendtag, incoming, source, recvtag, real_status
            )
            request = Request(self, None, staging=staging, target=target)
            request._status = real_status
            request._finish(real_status)
            request._copy_status(status)
            if sent is not None:
                latest = _later(sent, request._done)
            if key is not None:
                clock.record(*key)
            request._log_wait()
            clock.record(WAIT)
        finally:
            clock.leave(latest, p2p=True)
