"""Waiting for a launch and killing its process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

__all__ = ["terminate_group", "wait_launch"]


def terminate_group(process: subprocess.Popen, grace: float) -> None:
    """Kill the launch's whole process group: SIGTERM, then SIGKILL after ``grace``.

    Parameters
    ----------
    process : subprocess.Popen
        The launch, leader of its own process group.
    grace : float
        Seconds between SIGTERM and SIGKILL.
    """
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            if sig == signal.SIGKILL:
                return
        except subprocess.TimeoutExpired:
            continue
    # The leader may be gone while ranks it left behind still hold the group.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def wait_launch(process, timeout: float, keep_running, poll: float = 0.5):
    """Wait for a launch; stop early once it is not wanted.

    Parameters
    ----------
    process : subprocess.Popen
        The launch.
    timeout : float
        Seconds it may take.
    keep_running : callable or None
        Polled every ``poll`` seconds; False stops the wait.
    poll : float, default=0.5

    Returns
    -------
    (str, str, bool)
        Standard output and error, and whether the wait stopped early (then the
        launch still runs and the outputs are empty).

    Raises
    ------
    subprocess.TimeoutExpired
        The launch ran out of time.
    """
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        step = left if keep_running is None else min(poll, left)
        try:
            stdout, stderr = process.communicate(timeout=max(step, 0))
            return stdout, stderr, False
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
            if not keep_running():
                return "", "", True
