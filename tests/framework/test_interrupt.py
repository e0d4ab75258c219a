"""Signals interrupt a run once, cleanly; worker processes do not get Ctrl-C."""

import logging
import os
import signal
import subprocess
import sys
import threading

import pytest
from distributed import Client, LocalCluster
from scaleprobe.framework._interrupt import (
    Interrupted,
    signals_interrupt,
    terminal_signals_blocked,
)
from scaleprobe.framework._logs import dask_logs_to, store_log, worker_options


def _blocked(pid, tid=None) -> int:
    """The mask of blocked signals of a process (or one of its threads)."""
    where = f"/proc/{pid}" + (f"/task/{tid}" if tid else "")
    with open(f"{where}/status") as f:
        for line in f:
            if line.startswith("SigBlk:"):
                return int(line.split()[1], 16)
    raise AssertionError("no SigBlk line")


def _bit(signum) -> int:
    return 1 << (signum - 1)


def _signal_then_clean_up(signum, cleaned: list) -> None:
    try:
        os.kill(os.getpid(), signum)
        threading.Event().wait(5)  # the handler raises here, in the main thread
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # during the clean-up: ignored
        cleaned.append(True)


@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name
)
def test_each_signal_interrupts_once_and_later_ones_wait_for_the_clean_up(signum):
    cleaned = []
    before = signal.getsignal(signal.SIGINT)
    with signals_interrupt(), pytest.raises(Interrupted) as info:
        _signal_then_clean_up(signum, cleaned)
    assert cleaned == [True]
    assert info.value.signum == signum
    assert info.value.exit_code == 128 + signum
    assert isinstance(info.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGINT) is before  # restored


def test_importing_dask_jobqueue_keeps_the_ctrl_c_handler():
    # dask-jobqueue replaces SIGINT's handler with an immediate exit when imported
    # (the handler Python installs at start, also where the suite itself runs as a
    # background job, which starts its children with SIGINT ignored)
    code = (
        "import signal\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from scaleprobe.framework.jobqueue import slurm_options\n"
        "slurm_options(walltime='01:00:00')\n"
        "import sys\n"
        "assert 'dask_jobqueue' in sys.modules\n"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def _signal_while_starting(reached: list) -> None:
    with terminal_signals_blocked():
        os.kill(os.getpid(), signal.SIGINT)
        threading.Event().wait(0.5)
        reached.append("end of the block")


def test_a_signal_while_processes_start_is_raised_once_they_are_held():
    reached = []
    with signals_interrupt(), pytest.raises(Interrupted) as info:
        _signal_while_starting(reached)
    assert reached == ["end of the block"]
    assert info.value.name == "SIGINT"


def test_worker_processes_started_inside_do_not_get_the_terminal_signals(tmp_path):
    log = tmp_path / "x.logs" / "dask.log"
    with dask_logs_to(log):
        with terminal_signals_blocked():
            cluster = LocalCluster(
                n_workers=1,
                threads_per_worker=1,
                dashboard_address=":0",
                processes=True,
                **worker_options(),
            )
        with cluster, Client(cluster) as client:
            here = os.getpid()
            (pid,) = client.run(os.getpid).values()
            mask = _blocked(pid)
            assert mask & _bit(signal.SIGINT)
            assert mask & _bit(signal.SIGHUP)
            assert not mask & _bit(signal.SIGTERM)  # the nanny stops it with SIGTERM
            assert not _blocked(here, threading.get_native_id()) & _bit(signal.SIGINT)
            # what the worker writes to standard error lands in the log
            client.run(lambda: print("from the worker", file=sys.stderr, flush=True))
            client.run(lambda: logging.getLogger("distributed").warning("w-line"))
    text = log.read_text()
    assert "from the worker" in text
    assert "w-line" in text


LOGGING = """
import logging, sys, threading
import distributed
from scaleprobe.framework._logs import dask_logs_to
with dask_logs_to(sys.argv[1]):
    logging.getLogger("distributed.scheduler").warning("scheduler says hi")
    logging.getLogger("somewhere.else").error("another library")
    thread = threading.Thread(target=lambda: 1 / 0, name="doomed")
    thread.start()
    thread.join()
logging.getLogger("distributed").warning("back on the terminal")
"""


def test_dask_log_records_go_to_the_file_not_the_terminal(tmp_path):
    path = store_log(tmp_path / "r.zarr")
    assert path == str(tmp_path / "r.logs" / "dask.log")
    done = subprocess.run(
        [sys.executable, "-c", LOGGING, path],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert done.stderr.strip().endswith("back on the terminal"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    with open(path) as f:
        text = f.read()
    assert "distributed.scheduler WARNING: scheduler says hi" in text
    assert "somewhere.else ERROR: another library" in text
    assert "exception in thread doomed" in text
    assert "ZeroDivisionError" in text
    assert "back on the terminal" not in text


@pytest.mark.mpi
@pytest.mark.slow
def test_sigusr1_prints_where_a_run_waits_and_the_run_goes_on(tmp_path):
    import time

    import yaml
    from scaleprobe.framework.launch import child_environment
    from scaleprobe.framework.store import ResultStore

    marker = "--sleep 3.0321"
    spec = {
        "name": "stacks",
        "kernel": "commbench.fault",
        "params": {"sleep": 3.0321},
        "sweep": {"nodes": [1], "run": 1},
        "throttle": {"mode": "none"},
        "output": str(tmp_path / "stacks.zarr"),
    }
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    command = [os.path.join(os.path.dirname(sys.executable), "scaleprobe"), "run",
               str(tmp_path / "spec.yaml")]  # fmt: skip
    run = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=child_environment(),
    )  # fmt: skip
    try:
        deadline = time.time() + 120
        while time.time() < deadline:  # the point's launch runs: the run waits for it
            found = subprocess.run(["pgrep", "-f", "--", marker], capture_output=True)
            if found.stdout.split():
                break
            time.sleep(0.05)
        run.send_signal(signal.SIGUSR1)
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 0, err
    assert "most recent call first" in err, err
    assert "run_sweep" in err, err  # the main thread, inside the sweep
    (point,) = ResultStore(spec["output"]).results()
    assert point["status"] == "ok"
