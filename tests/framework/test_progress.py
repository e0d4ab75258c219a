"""The terminal progress of sweeps and fits: a bar on a terminal, quiet elsewhere,
one line per point that failed, the time left from an injected clock."""

import io

import dask
from scaleprobe.framework._progress import FitProgress, Progress, time_left


class _Terminal(io.StringIO):
    def isatty(self):
        return True


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


ERROR = (
    "exit code 1: Traceback (most recent call last):\n"
    '  File "kernel.py", line 3\n'
    "rank 1: noise\n"
    "ValueError: iterations must be at least 1, got -5"
)


def test_time_left_is_the_pace_of_this_run():
    assert time_left(30.0, 3, 6) == 60.0
    assert time_left(0.0, 0, 6) is None


def test_elsewhere_than_a_terminal_only_failures_and_the_end_are_written():
    stream, clock = io.StringIO(), _Clock()
    progress = Progress(total=4, already=1, stream=stream, clock=clock)
    clock.now += 10
    progress.update("ok", "nodes=1")
    clock.now += 10
    progress.update("failed", "nodes=2", ERROR, log="r.logs/k2.log")
    assert progress.line() == (
        "3/4 points done, 1 failed, 1 remaining, about 10 s left"
    )
    clock.now += 10
    progress.update("ok", "nodes=3")
    progress.close()
    assert stream.getvalue().splitlines() == [
        "scaleprobe: resuming, 1 of 4 points already stored",
        "scaleprobe: failed: nodes=2: exit code 1: ValueError: iterations must be at "
        "least 1, got -5 (log: r.logs/k2.log)",
        "scaleprobe: measured 3 points in 30 s, 1 did not succeed; 4 of 4 stored",
    ]


def test_on_a_terminal_a_bar_counts_points_failures_and_time_left():
    stream, clock = _Terminal(), _Clock()
    progress = Progress(total=10, stream=stream, clock=clock)
    clock.now += 20
    progress.update("ok", "nodes=1")
    clock.now += 20
    progress.update("timeout", "nodes=2", "no result within the timeout of 5 s")
    text = stream.getvalue()
    # the failure is one line above the bar, never the launch's whole stderr
    assert "scaleprobe: timeout: nodes=2: no result within the timeout of 5 s\n" in text
    last = text.split("\r")[-1]
    assert "2/10 points" in last
    assert "1 failed, about 3 min left" in last  # 40 s for 2, 8 to go: 160 s
    progress.close()
    assert "measured 2 points in 40 s, 1 did not succeed; 2 of 10 stored" in (
        stream.getvalue()
    )


def test_a_disabled_progress_prints_nothing():
    stream = _Terminal()
    progress = Progress(total=3, already=1, enabled=False, stream=stream)
    progress.update("failed", "nodes=1", ERROR)
    progress.close()
    assert stream.getvalue() == ""


def test_a_fit_bar_counts_the_tasks_of_the_local_scheduler():
    stream = _Terminal()
    tasks = [dask.delayed(pow)(i, 2) for i in range(7)]
    with FitProgress(stream=stream) as progress:
        assert dask.compute(*tasks, scheduler="threads") == tuple(
            i * i for i in range(7)
        )
    assert progress.done == progress.total >= 7
    assert f"{progress.total}/{progress.total} tasks" in stream.getvalue()
    quiet = io.StringIO()
    with FitProgress(stream=quiet):
        dask.compute(*tasks, scheduler="threads")
    assert quiet.getvalue() == ""
