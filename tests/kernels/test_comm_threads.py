"""A rank's thread team: balanced pieces, and its regions charged by critical path."""

from __future__ import annotations

import threading
import time
import types

import numpy as np
import pytest
from scaleprobe.kernels.comm._clock import RankClock
from scaleprobe.kernels.comm.threads import ThreadTeam, balanced_cuts


def test_balanced_cuts_split_the_weight_evenly_in_order():
    assert balanced_cuts([5, 1, 1, 1, 1, 1], 2).tolist() == [0, 1, 6]
    assert balanced_cuts([2, 2, 2, 2], 2).tolist() == [0, 2, 4]
    assert balanced_cuts([1] * 9, 3).tolist() == [0, 3, 6, 9]
    assert balanced_cuts([], 2).tolist() == [0, 0, 0]
    assert balanced_cuts([3, 3], 1).tolist() == [0, 2]


def test_a_team_needs_a_positive_thread_count():
    with pytest.raises(ValueError, match="threads must be an integer >= 1, got 0"):
        ThreadTeam(0)


def _fake_threads(seconds_by_item):
    """A per-thread CPU clock the work advances by hand, and the process's sum."""
    per_thread: dict[int, float] = {}
    process = [0.0]
    barrier = threading.Barrier(len(seconds_by_item), timeout=30)

    def thread_time():
        return per_thread.get(threading.get_ident(), 0.0)

    def work(seconds):
        barrier.wait()  # every item on a thread of its own
        ident = threading.get_ident()
        per_thread[ident] = per_thread.get(ident, 0.0) + seconds
        process[0] += seconds
        return seconds

    return thread_time, work, process


def test_an_emulated_region_is_charged_its_longest_thread_not_the_sum():
    thread_time, work, process = _fake_threads([1.0, 2.0])
    clock = RankClock("emulated", cpu_time=lambda: process[0])
    process[0] += 0.5  # serial computation before the region
    with ThreadTeam(
        2, types.SimpleNamespace(_clock=clock), thread_time=thread_time
    ) as team:
        assert team.map(work, [1.0, 2.0]) == [1.0, 2.0]
        assert team.last_region == 2.0
    process[0] += 0.25  # and after it
    assert clock.time() == 0.5 + 2.0 + 0.25  # the process burnt 3.75 s of CPU
    assert clock.snapshot()["comp_time"] == 2.75


def test_one_thread_runs_inline_and_is_charged_as_any_computation():
    process = [0.0]
    clock = RankClock("emulated", cpu_time=lambda: process[0])

    def work(seconds):
        assert threading.current_thread() is threading.main_thread()
        process[0] += seconds
        return seconds

    with ThreadTeam(1, types.SimpleNamespace(_clock=clock)) as team:
        team.map(work, [1.0, 2.0])
    assert clock.time() == 3.0


def test_a_wall_clock_rank_times_the_region_on_the_wall():
    wall = [10.0]
    clock = RankClock("none", wall_time=lambda: wall[0])
    clock.begin_parallel()
    wall[0] += 1.5
    clock.end_parallel(99.0)  # ignored: the wall clock already counts the region
    assert clock.time() == 1.5


def test_a_real_region_charges_about_half_the_cpu_two_threads_burn():
    clock = RankClock("emulated")
    rng = np.random.default_rng(0)
    arrays = [rng.random(1 << 19) for _ in range(2)]

    def burn(values):
        for _ in range(4):
            np.sort(values, kind="stable")
        return float(values[0])

    comm = types.SimpleNamespace(_clock=clock)
    with ThreadTeam(2, comm) as team:
        before, charged = time.process_time(), clock.snapshot()["comp_time"]
        team.map(burn, arrays)
        burnt = time.process_time() - before
        charged = clock.snapshot()["comp_time"] - charged
    # two equal pieces: the longest thread is about half of the CPU both burnt
    assert 0.3 * burnt < charged < 0.8 * burnt


@pytest.mark.parametrize(("region", "end"), [(2.0, 3.0), (5.0, 5.0)])
def test_a_transfer_during_a_region_overlaps_it(region, end):
    from scaleprobe.kernels.comm._clock import PATH_KEYS, extend

    process = [0.0]
    clock = RankClock("emulated", cpu_time=lambda: process[0])
    clock.begin_parallel()
    process[0] += 2 * region  # the threads burn CPU meanwhile: not charged
    clock.enter()  # the calling thread waits 3 s for a transfer
    clock.leave(extend(clock.stamp(), 3.0, PATH_KEYS.index("bandwidth")))
    clock.end_parallel(region)
    assert clock.time() == end  # the later of the transfer and the region
    assert clock.snapshot()["comp_time"] == region
    assert clock.snapshot()["comm_time"] == 3.0


def test_the_calling_thread_runs_during_while_the_team_works():
    seen = []
    gate = threading.Event()

    def work(item):
        assert gate.wait(30)  # only once the calling thread has run ``during``
        return item

    def during():
        seen.append(threading.current_thread() is threading.main_thread())
        gate.set()

    with ThreadTeam(2) as team:
        assert team.map(work, [1, 2, 3], during=during) == [1, 2, 3]
    assert seen == [True]


def test_a_failed_region_leaves_the_clock_charging_as_before():
    process = [0.0]
    clock = RankClock("emulated", cpu_time=lambda: process[0])

    def fail(item):
        raise ValueError(f"item {item}")

    team = ThreadTeam(2, types.SimpleNamespace(_clock=clock))
    with team, pytest.raises(ValueError, match="item"):
        team.map(fail, [1, 2])
    process[0] += 1.5  # serial computation after the failed region is charged
    assert clock.time() == 1.5
