"""Other work on the launch's host is measured per point, and a busy host is named."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scaleprobe.framework import OversubscriptionWarning
from scaleprobe.framework._execute import warn_host_load
from scaleprobe.framework._hostload import (
    HOST_LOAD_LIMIT,
    LoadMeter,
    host_busy_seconds,
    own_cpu_seconds,
)
from scaleprobe.framework.launch import _GUARD, child_environment, launch_point
from scaleprobe.framework.planning import plan
from scaleprobe.framework.spec import load_spec
from test_slot_timeouts import _results as _slot_results

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass"


def test_busy_time_is_read_from_the_cpu_line(tmp_path):
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  100 20 30 5000 70 4 6 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    ticks = 100 + 20 + 30 + 4 + 6 + 10  # idle and iowait are not busy
    assert host_busy_seconds(str(stat)) == pytest.approx(
        ticks / os.sysconf("SC_CLK_TCK")
    )
    stat.write_text("intr 1 2 3\n")
    assert host_busy_seconds(str(stat)) is None
    assert host_busy_seconds(str(tmp_path / "missing")) is None


def test_the_launch_s_own_cpu_is_not_other_work():
    readings = iter([(100.0, 5.0, 10.0), (106.0, 9.0, 14.0)])
    now = next(readings)
    meter = LoadMeter(busy=lambda: now[0], own=lambda: now[1], clock=lambda: now[2])
    assert meter.stop() is None  # never started
    meter.start()
    now = next(readings)
    # 6 busy seconds in 4 s, 4 of them the launch's: half a core of other work
    assert meter.stop() == pytest.approx(0.5)


def test_a_launch_under_a_second_is_too_short_to_tell():
    readings = iter([(100.0, 5.0, 10.0), (100.5, 5.0, 10.9)])
    now = next(readings)
    meter = LoadMeter(busy=lambda: now[0], own=lambda: now[1], clock=lambda: now[2])
    meter.start()
    now = next(readings)
    assert meter.stop() is None


def test_a_host_that_cannot_tell_gives_none_and_a_busy_launch_no_negative():
    clock = iter([0.0, 1.0, 0.0, 1.0])
    blind = LoadMeter(busy=lambda: None, own=lambda: 0.0, clock=lambda: next(clock))
    blind.start()
    assert blind.stop() is None
    busy, own = iter([10.0, 11.0]), iter([0.0, 1.2])  # rounding: own > host's busy
    meter = LoadMeter(
        busy=lambda: next(busy), own=lambda: next(own), clock=lambda: next(clock)
    )
    meter.start()
    assert meter.stop() == 0.0


@pytest.mark.skipif(host_busy_seconds() is None, reason="no /proc/stat on this host")
def test_busy_time_grows_with_the_work_of_a_child():
    before_host, before_own = host_busy_seconds(), own_cpu_seconds()
    subprocess.run([sys.executable, "-c", BURN.format(0.3)], check=True)
    assert own_cpu_seconds() - before_own >= 0.25
    assert host_busy_seconds() - before_host >= 0.25


# A session of its own, led by a process that runs a shell script (as a terminal or
# a batch job runs one): the script starts a burning program and, beside it, the
# sweep, which measures its own CPU.
_LEADER = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
_SCRIPT = '"$1" -c "$2" & sibling=$!; "$1" -c "$3" "$4"; kill $sibling; wait'

_SWEEP = """
import os, subprocess, sys
from scaleprobe.framework._hostload import own_cpu_seconds, sweep_root
print(sweep_root().pid == os.getpid())
before = own_cpu_seconds()
subprocess.run([sys.executable, "-c", sys.argv[1].format(0.5)], check=True)
print(own_cpu_seconds() - before)
"""


def test_a_program_of_the_same_session_beside_the_sweep_is_other_work():
    # the sweep's own CPU is its child's 0.5 s, not the sibling's: its root is the
    # sweep itself, not the script (another program) nor the session's leader
    script = ["bash", "-c", _SCRIPT, "bash", sys.executable, BURN.format(5.0)]
    done = subprocess.run(
        [sys.executable, "-c", _LEADER, *script, _SWEEP, BURN],
        start_new_session=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[0] == "True", done.stdout  # the sweep's root is the sweep itself
    # the sibling burned for the whole measurement (on a second core, or sharing
    # the first): counting it, as a whole-session count did, reads 0.75 s or more
    assert 0.45 <= float(lines[1]) < 0.7, done.stdout


@pytest.mark.mpi
def test_the_ranks_cpu_reaches_the_sweep_through_the_guard_and_mpiexec(mpiexec):
    # Ranks are grandchildren of the guard: their CPU time counts as the launch's
    # only if every process between waits for its children.
    before = own_cpu_seconds()
    command = [mpiexec, "-n", "2", sys.executable, "-c", BURN.format(0.4)]
    done = subprocess.run(
        [sys.executable, "-S", _GUARD, str(os.getpid()), *command],
        env=child_environment(threads=1),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert own_cpu_seconds() - before >= 2 * 0.35


# Starts a Python program in a session of its own, prints its pid and leaves it.
_ORPHAN = """
import subprocess, sys
code = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid)
"""


@pytest.mark.mpi
@pytest.mark.skipif(host_busy_seconds() is None, reason="no /proc/stat on this host")
def test_a_launch_beside_a_spinning_process_reports_it():
    spec = load_spec(
        {
            "name": "busy",
            "kernel": "commbench.fault",
            "params": {"behaviour": "ok", "sleep": 1.5},
            "sweep": {"nodes": [2], "ppn": [1], "bandwidth": [100]},
            "throttle": {"mode": "emulated", "core_slots": 0},
            "timeout": 60,
        }
    )
    point = plan(spec)[0]
    quiet = launch_point(spec, point)
    assert quiet["status"] == "ok", quiet["error"]
    assert quiet["host_load"] >= 0
    # other work: a process spinning for the whole launch, not of the sweep (its
    # parent left it: no process of this test's tree)
    started = subprocess.run(
        [sys.executable, "-c", _ORPHAN, "while True: pass"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    spinner = int(started.stdout)
    try:
        busy = launch_point(spec, point)
    finally:
        os.kill(spinner, signal.SIGKILL)
    assert busy["status"] == "ok", busy["error"]
    # the sleeping ranks leave it most of a core (0.6 to 1 seen on 2 cores)
    assert busy["host_load"] > HOST_LOAD_LIMIT


def _results(load, status=None):
    return _slot_results(load, status, name="host_load")


def test_points_measured_on_a_busy_host_are_named():
    with pytest.warns(OversubscriptionWarning) as caught:
        # the failed point's 3.0 is not this sweep's measurement
        warn_host_load(
            _results(
                [[0.01, 0.2], [1.7, 0.03], [3.0, 0.6]],
                status=[["ok", "ok"], ["ok", "ok"], ["failed", "ok"]],
            )
        )
    message = str(caught[0].message)
    assert message.startswith("2 of 5 point(s) ran while other work kept their host")
    assert "above 0.25 core(s)" in message
    assert "up to 1.70" in message
    assert "first: nodes=16, run=0" in message


def test_points_too_short_to_tell_are_counted_apart():
    # six ok points, three of them shorter than MIN_SECONDS: no load to judge
    with pytest.warns(OversubscriptionWarning) as caught:
        warn_host_load(_results([[np.nan, np.nan], [np.nan, 0.1], [0.9, 0.2]]))
    assert str(caught[0].message).startswith(
        "1 of the 3 point(s) long enough to tell (launches of 1 s or more; 3 ok "
        "point(s) were shorter) ran while other work kept their host busy"
    )


def test_a_quiet_host_failed_points_and_old_results_warn_nothing():
    status = [["ok", "ok"], ["failed", "ok"], ["ok", "ok"]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_host_load(_results(np.full((3, 2), 0.05)))
        warn_host_load(_results([[0, 0], [2.0, 0], [0, 0]], status=status))
        warn_host_load(_results(np.full((3, 2), np.nan)))
        warn_host_load(_results(np.zeros((3, 2))).drop_vars("host_load"))
