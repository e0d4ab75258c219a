"""A plain-text progress bar for sweeps: points done, failed and remaining."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """Report sweep progress on standard error.

    On a terminal one line is redrawn; otherwise one line is printed per point.

    Parameters
    ----------
    total : int
        Points in the campaign.
    already : int
        Points already stored when this run started.
    enabled : bool
        Print nothing when False.
    """

    def __init__(self, total: int, already: int = 0, enabled: bool = True, stream=None):
        self.total, self.done, self.failed = total, already, 0
        self.new = 0
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        if enabled and already:
            print(
                f"scaleprobe: resuming, {already} of {total} points already stored",
                file=self.stream,
                flush=True,
            )

    def line(self) -> str:
        """Return the current progress line."""
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        rate = (time.monotonic() - self.start) / self.new if self.new else 0.0
        remaining = self.total - self.done
        eta = f", about {rate * remaining:.0f} s left" if self.new and remaining else ""
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} done, "
            f"{self.failed} failed, {remaining} remaining{eta}"
        )

    def update(self, status: str, label: str, error: str = "") -> None:
        """Count one finished point."""
        self.done += 1
        self.new += 1
        self.failed += status != "ok"
        if not self.enabled:
            return
        if self.tty:
            print("\r" + self.line(), end="", file=self.stream, flush=True)
            if status != "ok":
                print(
                    f"\n  {status}: {label}: {error[:200]}",
                    file=self.stream,
                    flush=True,
                )
        else:
            note = f" ({status}: {error[:200]})" if status != "ok" else ""
            print(f"{self.line()} | {label}{note}", file=self.stream, flush=True)

    def close(self) -> None:
        """Finish the bar."""
        if self.enabled and self.tty:
            print(file=self.stream, flush=True)
