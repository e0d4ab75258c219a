"""Run a launch so that it dies with the process that started it.

``python -S framework/_guard.py PARENT_PID COMMAND...`` runs ``COMMAND`` in the guard's
own process group and waits for it. A timer signal checks every half second that
``PARENT_PID`` is still the guard's parent; when the sweep that started the launch is
killed (``kill -9`` included), the guard kills its whole group, so no MPI job outlives
its sweep and disturbs the measurements of the resumed one. The guard exits with the
command's exit code (128 + signal number if a signal ended it).

This file is run as a script with ``-S`` (no site import) to start in a few
milliseconds; it imports nothing from scaleprobe.
"""

import os
import signal
import sys


def main() -> int:
    """Run the command under the guard; return its exit code."""
    parent = int(sys.argv[1])
    if os.getppid() != parent:
        return 125

    def check(signum, frame):
        if os.getppid() != parent:
            os.killpg(0, signal.SIGKILL)

    # Only builtin modules and a timer signal: the guard must start in milliseconds.
    signal.signal(signal.SIGALRM, check)
    signal.setitimer(signal.ITIMER_REAL, 0.5, 0.5)
    try:
        child = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
    except OSError as exc:
        print(f"cannot run {sys.argv[2]!r}: {exc.strerror}", file=sys.stderr)
        return 127
    _, status = os.waitpid(child, 0)
    signal.setitimer(signal.ITIMER_REAL, 0)
    return (
        os.waitstatus_to_exitcode(status) % 256
        if os.WIFEXITED(status)
        else (128 + os.WTERMSIG(status))
    )


if __name__ == "__main__":
    sys.exit(main())
