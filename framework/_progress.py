"""Progress on the terminal: points of a sweep and tasks of a fit, done and left.

On a terminal a bar (tqdm) is redrawn in place: points done of the campaign, how
many failed, and the time left at the pace of this run. A point that does not
succeed gets one line above the bar: its coordinates, the line of its error that
says why and its launch log, never the launch's whole standard error. Where standard
error is not a terminal (a log file, CI) the bar stays quiet; the failed points'
lines and a closing line are still written.
"""

from __future__ import annotations

import contextlib
import sys
import time

__all__ = ["FitProgress", "Progress", "time_left"]


def time_left(elapsed: float, measured: int, remaining: int) -> float | None:
    """Seconds left at the pace so far, or None before anything was measured.

    Parameters
    ----------
    elapsed : float
        Seconds since this run started.
    measured : int
        Points (or tasks) this run finished.
    remaining : int
        Points (or tasks) still to do.

    Returns
    -------
    float or None

    Examples
    --------
    >>> time_left(30.0, 3, 6)
    60.0
    >>> time_left(5.0, 0, 6) is None
    True
    """
    if measured <= 0:
        return None
    return elapsed / measured * remaining


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "time left unknown"
    if seconds < 90:
        return f"about {seconds:.0f} s left"
    return f"about {seconds / 60:.0f} min left"


def _is_tty(stream) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _bar(total, initial, stream, unit, enabled, mininterval=0.1):
    """A tqdm bar on a terminal, or None (not a terminal, or not asked for)."""
    if not (enabled and _is_tty(stream)):
        return None
    from tqdm import tqdm

    return tqdm(
        total=total,
        initial=initial,
        file=stream,
        unit=unit,
        dynamic_ncols=True,
        bar_format="{desc} {bar} {n_fmt}/{total_fmt} {unit}s{postfix}",
        desc="scaleprobe:",
        leave=True,
        mininterval=mininterval,
    )


class Progress:
    """Report a sweep's progress on standard error.

    Parameters
    ----------
    total : int
        Points in the campaign.
    already : int, default=0
        Points already stored when this run started.
    enabled : bool, default=True
        Print nothing when False.
    stream : file, default=sys.stderr
    clock : callable, default=time.monotonic
        Time source (injected in tests).

    Attributes
    ----------
    done, failed, new : int
        Points stored in the campaign, points of this run that did not succeed,
        points this run measured.
    tty : bool
        Whether the bar is drawn (a terminal); elsewhere only failures and the
        closing line are printed.
    """

    def __init__(
        self,
        total: int,
        already: int = 0,
        enabled: bool = True,
        stream=None,
        *,
        clock=time.monotonic,
    ):
        self.total, self.done, self.failed, self.new = total, already, 0, 0
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.clock = clock
        self.start = clock()
        self.tty = _is_tty(self.stream)
        if enabled and already:
            print(
                f"scaleprobe: resuming, {already} of {total} points already stored",
                file=self.stream,
                flush=True,
            )
        # one point is seconds of work: draw every one
        self._bar = _bar(total, already, self.stream, "point", enabled, 0)

    def left(self) -> float | None:
        """Seconds left at this run's pace (None before its first point)."""
        return time_left(self.clock() - self.start, self.new, self.total - self.done)

    def line(self) -> str:
        """Return the state in words: done, failed, remaining and time left."""
        remaining = self.total - self.done
        return (
            f"{self.done}/{self.total} points done, {self.failed} failed, "
            f"{remaining} remaining"
            + (f", {_duration(self.left())}" if remaining else "")
        )

    def update(self, status: str, label: str, error: str = "", log=None) -> None:
        """Count one finished point; a point that did not succeed gets one line.

        Parameters
        ----------
        status : str
            ``ok``, ``failed``, ``timeout`` or ``invalid``.
        label : str
            The point's coordinates in words.
        error : str, default=""
            Its error text (only the line that says why is printed).
        log : str, optional
            Its launch log, which holds the whole output.
        """
        from ._summary import error_line

        self.done += 1
        self.new += 1
        self.failed += status != "ok"
        if not self.enabled:
            return
        if status != "ok":
            where = f" (log: {log})" if log else ""
            message = f"scaleprobe: {status}: {label}: {error_line(error)}{where}"
            if self._bar is not None:
                self._bar.write(message, file=self.stream)
            else:
                print(message, file=self.stream, flush=True)
        if self._bar is not None:
            remaining = self.total - self.done
            left = f", {_duration(self.left())}" if remaining else ""
            self._bar.set_postfix_str(f"{self.failed} failed{left}", refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        """Finish the bar; say what this run measured."""
        if self._bar is not None:
            self._bar.close()
        if self.enabled and self.new:
            elapsed = self.clock() - self.start
            print(
                f"scaleprobe: measured {self.new} points in {elapsed:.0f} s, "
                f"{self.failed} did not succeed; {self.done} of {self.total} stored",
                file=self.stream,
                flush=True,
            )


class FitProgress:
    """A bar over the tasks of a fit computed by Dask's local scheduler.

    Used as a context around :func:`~scaleprobe.models.fit_ensemble` (or a report):
    every cross-validation task that finishes advances it. Tasks sent to a
    distributed cluster are shown by its dashboard instead.

    Parameters
    ----------
    enabled : bool, default=True
    stream : file, default=sys.stderr
    what : str, default="fitting"
        The bar's label.
    """

    def __init__(self, enabled: bool = True, stream=None, what: str = "fitting"):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.what = what
        self.done = 0
        self.total = 0
        self._bar = None

    def _start_state(self, dsk, state):
        self.total += len(state.get("ready", ())) + len(state.get("waiting", {}))
        if self._bar is None:
            self._bar = _bar(self.total, 0, self.stream, "task", self.enabled)
            if self._bar is not None:
                self._bar.set_description_str(f"scaleprobe: {self.what}")
        elif self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def _posttask(self, key, result, dsk, state, worker_id):
        self.done += 1
        if self._bar is not None:
            self._bar.update(1)

    def __enter__(self):
        from dask.callbacks import Callback

        self._stack = contextlib.ExitStack()
        self._stack.enter_context(
            Callback(start_state=self._start_state, posttask=self._posttask)
        )
        return self

    def __exit__(self, *exc):
        self._stack.close()
        if self._bar is not None:
            self._bar.close()
        return False
