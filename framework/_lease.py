"""A launch lives only as long as the sweep that wants it.

The task that runs a point on a Dask worker may outlive the client that submitted it:
on an external cluster (``--address``, ``--scheduler-file``, ``dask-mpi``) a client
killed with ``kill -9`` leaves its workers running. The scheduler notices at once (the
client's connection closes) and releases the client's tasks; the worker then marks a
running task ``cancelled`` but cannot stop its thread. :func:`task_wanted` lets the
task see that, so the launch it waits on is killed within a poll interval, and a task
that was still waiting for the launch slot does not launch at all.
"""

from __future__ import annotations

__all__ = ["task_wanted"]

#: Worker-side states of a task whose result someone still waits for.
_WANTED = ("executing", "long-running")


def task_wanted():
    """Return a predicate that is true while the calling Dask task is still wanted.

    Call it from inside a task. The predicate reads the worker's own state of the task
    (no message to the scheduler): it turns false when the task is cancelled (its
    client went away, or cancelled it) or the worker is closing.

    Returns
    -------
    callable
        ``wanted() -> bool``; always true outside a Dask worker.
    """
    try:
        from distributed import get_worker

        worker = get_worker()
        key = worker.get_current_task()
    except (ImportError, ValueError):
        return lambda: True
    from distributed.core import Status

    live = (Status.running, Status.paused, Status.closing_gracefully)

    def wanted() -> bool:
        task = worker.state.tasks.get(key)
        return task is not None and task.state in _WANTED and worker.status in live

    return wanted
