"""SIGINT, SIGTERM and SIGHUP end a run the same way: cleanly, in one line.

``scancel``, a job's time limit, ``timeout`` and systemd send SIGTERM; a closed
terminal sends SIGHUP; Ctrl-C sends SIGINT to the terminal's whole foreground process
group. Inside :func:`signals_interrupt` each of them raises :class:`Interrupted` (a
:class:`KeyboardInterrupt`) in the main thread, so every ``with`` block unwinds as it
does for Ctrl-C: launches are killed, the Dask cluster is closed, a namespace
network's namespaces, ``veth`` pairs, bridge and qdiscs are removed and the store's
lock is released. Signals that come while that clean-up runs are ignored: a second
Ctrl-C must not leave half a network behind (``kill -9`` still ends the process; the
next netns run removes what it left).

A command that seems stuck can be asked where it waits: SIGUSR1
(:func:`stacks_on_request`) prints every thread's stack to standard error, and the
command goes on.

Processes started inside :func:`terminal_signals_blocked` (the worker processes of a
``LocalCluster``) do not get the terminal's SIGINT and SIGHUP at all: the signal mask
of the thread that starts them is inherited through ``fork`` and ``exec``. They are
stopped by the run that started them, which closes its cluster; without this, each
worker printed its own ``KeyboardInterrupt`` traceback at every Ctrl-C.
"""

from __future__ import annotations

import contextlib
import faulthandler
import signal
import threading

__all__ = [
    "SIGNALS",
    "STACKS_SIGNAL",
    "Interrupted",
    "signals_interrupt",
    "stacks_on_request",
    "terminal_signals_blocked",
]

#: The signals that interrupt a run.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The signals a terminal sends to every process of its foreground group.
TERMINAL_SIGNALS = (signal.SIGINT, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A run was interrupted by a signal.

    Parameters
    ----------
    signum : int
        The signal.

    Attributes
    ----------
    signum : int
    name : str
        ``"SIGINT"``, ``"SIGTERM"``, ``"SIGHUP"``.
    exit_code : int
        ``128 + signum``, as a shell reports a process a signal ended: 130 for
        SIGINT, 143 for SIGTERM, 129 for SIGHUP.

    Examples
    --------
    >>> error = Interrupted(signal.SIGTERM)
    >>> error.name, error.exit_code
    ('SIGTERM', 143)
    """

    def __init__(self, signum: int):
        self.signum = int(signum)
        self.name = signal.Signals(self.signum).name
        self.exit_code = 128 + self.signum
        super().__init__(self.name)


class _State:
    """What the handler knows: whether a signal came, and whether to hold it back."""

    def __init__(self):
        self.first: int | None = None
        self.holding = 0
        self.held: int | None = None


_state = _State()


def _handler(signum, frame):
    if _state.first is not None:
        return  # the run is already cleaning up after the first signal
    if _state.holding:
        _state.held = signum if _state.held is None else _state.held
        return
    _state.first = signum
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_interrupt():
    """Raise :class:`Interrupted` in the main thread at SIGINT, SIGTERM or SIGHUP.

    Only the first signal raises; later ones are ignored until the block ends, so
    that the clean-up it started runs to its end. The previous handlers are back
    afterwards.

    Outside the main thread, where Python runs no signal handler, it changes
    nothing.

    Yields
    ------
    None
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.getsignal(signum) for signum in SIGNALS}
    _state.first, _state.held = None, None
    for signum in SIGNALS:
        signal.signal(signum, _handler)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _state.first, _state.held = None, None


#: The signal that asks a command for its threads' stacks (None where there is none).
STACKS_SIGNAL = getattr(signal, "SIGUSR1", None)


def stacks_on_request(signum=STACKS_SIGNAL, file=None):
    """Print every thread's stack when the process receives ``signum``.

    ``kill -USR1 PID`` then shows where a command that seems stuck waits (a Dask
    call, a batch system's command, a launch) without ending it.

    Parameters
    ----------
    signum : int, default=STACKS_SIGNAL
        SIGUSR1; None (a platform without it) changes nothing.
    file : file object, default=sys.stderr
        Where the stacks go; it must stay open while the handler is registered.

    Returns
    -------
    bool
        Whether the handler is registered (not where the file has no descriptor,
        as a captured ``sys.stderr``).
    """
    if signum is None or not hasattr(faulthandler, "register"):
        return False
    kwargs = {} if file is None else {"file": file}
    try:
        faulthandler.register(signum, all_threads=True, **kwargs)
    except (AttributeError, OSError, ValueError):  # no file descriptor to write to
        return False
    return True


@contextlib.contextmanager
def terminal_signals_blocked():
    """Start processes that the terminal's SIGINT and SIGHUP do not reach.

    The calling thread blocks both signals for the duration, so that the threads and
    processes it starts inherit the mask. A signal that comes meanwhile is not
    lost: an interrupting one (:func:`signals_interrupt`) is raised when the block
    ends, and a default Ctrl-C is delivered then.

    Yields
    ------
    None
    """
    main = threading.current_thread() is threading.main_thread()
    if not main:  # only the main thread takes signals; nothing to hold back
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, TERMINAL_SIGNALS)
    # multiprocessing's resource tracker, started on first use, unblocks SIGINT in
    # the thread that starts it: start it now (it inherits the mask), block again.
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()
    signal.pthread_sigmask(signal.SIG_BLOCK, TERMINAL_SIGNALS)
    _state.holding += 1
    try:
        yield
    finally:
        _state.holding -= 1
        held, _state.held = _state.held, None
        signal.pthread_sigmask(signal.SIG_SETMASK, old)  # pending ones arrive now
        if held is not None and _state.first is None:
            _state.first = held
            raise Interrupted(held)
