"""The per-rank clock and the core-slot token, without MPI."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import pytest
from scaleprobe.kernels.comm._clock import PATH_KEYS, RankClock, call_overhead, extend
from scaleprobe.kernels.comm._cores import _RECORD, CoreSlots


class FakeClock:
    """A clock that moves only when the test says so."""

    def __init__(self):
        self.now = 100.0  # not zero: the rank clock must measure from its own start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _clocks(mode, slots=None):
    cpu, wall = FakeClock(), FakeClock()
    return RankClock(mode, slots, cpu_time=cpu, wall_time=wall), cpu, wall


def test_emulated_clock_charges_cpu_bursts_and_call_completions():
    clock, cpu, wall = _clocks("emulated")
    cpu.advance(0.05)
    wall.advance(7.0)  # a busy host: wall time never enters virtual time
    assert clock.enter() == pytest.approx(0.05)
    cpu.advance(0.05)  # CPU burnt inside a call (polling) is not charged
    clock.leave(extend(clock.stamp(), 1.0, PATH_KEYS.index("latency")))
    counts = clock.snapshot()
    assert counts["comm_time"] == pytest.approx(1.0)
    assert counts["comp_time"] == pytest.approx(0.05)
    assert clock.time() == pytest.approx(1.05)
    clock.enter()
    clock.leave([0.0, 0.0, 0.0, 0.0, 0.0])  # a completion in the past is ignored
    assert clock.time() == pytest.approx(1.05)
    assert clock.wall() == pytest.approx(7.0)


def test_none_clock_is_wall_time_split_by_calls():
    clock, cpu, wall = _clocks("none")
    wall.advance(0.05)
    cpu.advance(3.0)  # CPU time plays no part in wall-clock mode
    clock.enter()
    wall.advance(0.02)
    clock.leave([123.0, 0, 123.0, 0, 0])  # ignored in wall-clock mode
    counts = clock.snapshot()
    assert counts["comp_time"] == pytest.approx(0.05)
    assert counts["comm_time"] == pytest.approx(0.02)
    assert clock.time() == pytest.approx(0.07)


def test_strong_scaling_in_virtual_time_is_the_split_cpu_work():
    """n ranks sharing fixed work finish n times sooner, however busy the host is."""
    work, times = 8.0, {}
    for ranks in (1, 2, 8):
        finish = []
        for _ in range(ranks):
            clock, cpu, wall = _clocks("emulated")
            cpu.advance(work / ranks)
            wall.advance(work)  # co-scheduled ranks wait for the cores
            clock.enter()
            clock.leave(extend(clock.stamp(), 1e-3, PATH_KEYS.index("latency")))
            finish.append(clock.time())
        times[ranks] = max(finish)
    assert times[1] / times[8] == pytest.approx((work + 1e-3) / (1 + 1e-3))
    assert times[2] == pytest.approx(work / 2 + 1e-3)


def test_counters_split_inter_and_intra():
    clock = RankClock("none")
    clock.add_message(100, inter=True)
    clock.add_message(10, inter=False, messages=2)
    clock.add_traffic(
        {"bytes_inter": 5, "bytes_intra": 0, "messages": 1, "messages_inter": 1}
    )
    counts = clock.snapshot()
    assert (counts["bytes_sent"], counts["bytes_inter"], counts["bytes_intra"]) == (
        115,
        105,
        10,
    )
    assert (counts["messages"], counts["messages_inter"]) == (4, 2)


def test_core_slots_exclude_and_time_out(tmp_path):
    first = CoreSlots(1, str(tmp_path))
    second = CoreSlots(1, str(tmp_path), max_wait=0.2)
    first.acquire()
    assert first.held == 0
    second.acquire()  # the only slot is taken: gives up after max_wait
    assert second.held is None
    assert second.timeouts == 1
    assert second.wait_time >= 0.2
    first.release()
    second.acquire()
    assert second.held == 0
    first.close()
    second.close()


@pytest.mark.parametrize(
    ("every", "timeouts"),
    [(0.05, 0), (0.4, 1)],
    ids=["moving queue", "queue slower than max_wait"],
)
def test_a_queue_that_moves_never_times_out(tmp_path, every, timeouts):
    # a waiter behind a long queue: for 1 s, 3 times max_wait, other ranks take the
    # slot in turn before it is the waiter's turn. A hand-over every 0.05 s keeps it
    # waiting; one every 0.4 s leaves 0.3 s without any and it gives up. Time is a
    # fake clock that moves when the waiter sleeps.
    now = [100.0]
    holder = CoreSlots(1, str(tmp_path), clock=lambda: now[0])
    holder.acquire()
    slot = os.open(tmp_path / "slot-0", os.O_RDWR)
    handovers = [0]

    def sleep(seconds):
        now[0] += seconds
        due = min(int((now[0] - 100.0) / every), int(1.0 / every))
        while handovers[0] < due:  # the ranks ahead take the slot, as _try records
            handovers[0] += 1
            record = _RECORD.pack(handovers[0] + 1, 100.0 + every * handovers[0])
            os.pwrite(slot, record, 0)
        if now[0] - 100.0 >= 1.0:
            holder.release()

    waiter = CoreSlots(
        1, str(tmp_path), max_wait=0.3, clock=lambda: now[0], sleep=sleep
    )
    waiter.acquire()
    assert waiter.timeouts == timeouts
    if timeouts:
        assert waiter.held is None
        assert waiter.wait_time == pytest.approx(0.3, abs=2e-3)
    else:
        assert waiter.held == 0
        assert waiter.wait_time == pytest.approx(1.0, abs=2e-3)
    os.close(slot)
    holder.close()
    waiter.close()


def test_a_stalled_queue_gives_up_once_for_everyone(tmp_path):
    # the holder never lets go: the head of the queue gives up after max_wait, and
    # those queued behind it since as long give up at once instead of in turn. The
    # fake clock moves when the head sleeps, once all three waiters are in line.
    holder = CoreSlots(1, str(tmp_path), clock=lambda: 100.0)
    holder.acquire()
    now, lock, callers, in_line = [100.0], threading.Lock(), set(), threading.Event()

    def clock():
        with lock:
            callers.add(threading.get_ident())
            if len(callers) == 3:
                in_line.set()
            return now[0]

    def sleep(seconds):
        assert in_line.wait(10)
        with lock:
            now[0] += seconds

    waiters = [
        CoreSlots(1, str(tmp_path), max_wait=0.5, clock=clock, sleep=sleep)
        for _ in range(3)
    ]
    threads = [threading.Thread(target=w.acquire) for w in waiters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [(w.held, w.timeouts) for w in waiters] == [(None, 1)] * 3
    # 0.5 s for everyone, not 3 x 0.5 s one after another
    assert now[0] - 100.0 == pytest.approx(0.5, abs=2e-3)
    assert [w.wait_time for w in waiters] == pytest.approx([0.5] * 3, abs=2e-3)
    for slots in (holder, *waiters):
        slots.close()


def _churn(slot_dir, turns, stop):
    """A busy rank: computes 1 ms at a time between short calls, until stopped."""
    busy = CoreSlots(1, slot_dir)
    busy.acquire()
    while not stop.is_set():
        turns.value += 1
        end = time.perf_counter() + 1e-3
        while time.perf_counter() < end:
            pass
        busy.release()  # a short call ...
        busy.acquire()  # ... and back to computing
    busy.close()


def test_a_waiting_rank_is_served_before_ranks_that_come_later(tmp_path):
    # a busy rank (another process) that leaves short calls all the time must not
    # take every freed slot from a rank that waits for one: once the waiter is in
    # line, the busy rank computes at most twice more before the waiter's turn
    context = multiprocessing.get_context("fork")
    turns, stop = context.Value("l", 0), context.Event()
    busy = context.Process(target=_churn, args=(str(tmp_path), turns, stop))
    busy.start()
    try:
        while turns.value < 3:  # the busy rank is at work
            time.sleep(1e-3)
        waiter = CoreSlots(1, str(tmp_path), max_wait=20.0)
        before = turns.value
        waiter.acquire()
        assert (waiter.held, waiter.timeouts) == (0, 0)
        assert turns.value - before <= 2
        waiter.close()
    finally:
        stop.set()
        busy.join(10)
        busy.kill()


def test_every_acquisition_counts_up_its_slot(tmp_path):
    slots = CoreSlots(2, str(tmp_path))
    before = slots._handovers()
    slots.acquire()
    slots.release()
    slots.acquire()
    assert slots._handovers() != before
    assert slots._handovers()[0] == 2
    slots.close()


def test_slot_is_released_inside_calls(tmp_path):
    slots = CoreSlots(1, str(tmp_path))
    other = CoreSlots(1, str(tmp_path), max_wait=0.1)
    clock = RankClock("emulated", slots)
    clock.restart()
    assert slots.held == 0
    clock.enter()
    assert slots.held is None
    other.acquire()
    assert other.held == 0
    other.release()
    clock.leave(None)
    assert slots.held == 0
    slots.close()
    other.close()


def test_negative_slot_count_is_rejected():
    with pytest.raises(ValueError, match="core_slots"):
        CoreSlots(-1)


def test_nested_calls_keep_the_inner_completion():
    clock, _, _ = _clocks("emulated")
    outer = clock.enter()
    clock.enter()
    clock.leave(extend(clock.stamp(), 2.0, 1))  # an inner call completes later ...
    clock.leave(None)  # ... and the outer call ends there
    assert clock.snapshot()["comm_time"] == pytest.approx(2.0)
    assert clock.time() == pytest.approx(outer + 2.0)


def test_critical_path_follows_what_the_rank_waited_for():
    """A completion later than the rank's own time brings the waited-for path along."""
    clock, cpu, _ = _clocks("emulated")
    cpu.advance(0.02)
    clock.enter()
    mine = clock.stamp()
    assert mine[0] == pytest.approx(mine[1:].sum())
    # A message whose sender computed 5 s, then 1 s latency and 2 s on the wire.
    sender = extend(extend(extend([0.0] * 5, 5.0, 0), 2.0, 2), 1.0, 1)
    clock.leave(sender)
    assert clock.time() == pytest.approx(8.0)
    assert clock.path.tolist() == [5.0, 1.0, 2.0, 0.0]
    cpu.advance(0.02)  # own computation after the receive joins the path
    assert clock.time() == pytest.approx(clock.path.sum())
    assert clock.path[0] == pytest.approx(5.02)


class TickingClock:
    """A CPU clock that advances a fixed step at every reading."""

    def __init__(self, step: float):
        self.step, self.now = step, 50.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_call_overhead_is_the_cpu_between_two_null_calls():
    # enter reads the clock once and leave once: one step lies between two calls
    assert call_overhead(TickingClock(3e-6), calls=50, batches=3) == pytest.approx(3e-6)
    assert call_overhead(TickingClock(0.0), calls=5, batches=2) == 0.0


def test_overhead_is_taken_from_every_burst_down_to_zero():
    cpu = FakeClock()
    clock = RankClock("emulated", cpu_time=cpu, overhead=1e-6)
    cpu.advance(0.05)  # a real computation: charged less one call's overhead
    clock.enter()
    clock.leave(None)
    assert clock.snapshot()["comp_time"] == pytest.approx(0.05 - 1e-6, abs=1e-12)
    before = clock.time()
    for _ in range(10):  # bursts shorter than the overhead: nothing
        cpu.advance(4e-7)
        clock.enter()
        clock.leave(None)
    assert clock.time() == before
    assert clock.snapshot()["comp_time"] == pytest.approx(0.05 - 1e-6, abs=1e-12)


def test_mark_does_not_charge_its_own_bookkeeping():
    cpu = TickingClock(1e-6)  # every reading is 1 us of CPU
    clock = RankClock("emulated", cpu_time=cpu)
    clock.replaying = True  # a mark also writes a replay row
    clock.restart(acquire=False)
    start = clock.now
    marks = [clock.mark() for _ in range(4)]
    # each mark charges the step since the previous reading, nothing after it
    assert [clock.marks[i] - start for i in marks] == pytest.approx(
        [1e-6, 2e-6, 3e-6, 4e-6]
    )


def test_mark_of_a_real_clock_costs_less_than_a_null_call():
    """A mark's bookkeeping (a replay row, a list entry) is not computation: what a
    mark leaves on a real CPU clock is its call, no more than a call that does
    nothing (both timed alike, here and now: the least of 7 batches of 200)."""
    overhead = call_overhead()
    clock = RankClock("emulated")
    clock.replaying = True
    clock.restart(acquire=False)
    least = float("inf")
    for _ in range(7):
        clock.mark()
        before = clock.counts["comp_time"]
        for _ in range(200):
            clock.mark()
        least = min(least, (clock.counts["comp_time"] - before) / 200)
    assert least <= 1.5 * overhead
