"""Shut down a Dask cluster by its scheduler file: workers first, then the scheduler.

The scheduler-file recipes end with ``python -m scaleprobe.deployments.shutdown FILE``.
Retiring the workers before the scheduler closes lets each worker leave on its own
terms; closing the scheduler under them instead makes every worker and the client log
``CommClosedError`` tracebacks into the job log as their connections drop. The
workers stop their heartbeats first and leave one at a time, each still registered
until it has closed: ``distributed`` otherwise logs a traceback in a few per cent of
shutdowns (a heartbeat in flight as a worker closes, or a message to a worker that
is closing), and the job log of a sweep that went well should not hold one.
"""

from __future__ import annotations

import logging
import sys
import time

__all__ = ["shutdown_cluster"]


_HEARTBEAT_SETTLE = 1.0  # seconds for a heartbeat in flight to return


def _stop_heartbeat(dask_worker) -> None:
    """Stop a worker's periodic heartbeat to the scheduler (run on each worker)."""
    callback = getattr(dask_worker, "periodic_callbacks", {}).get("heartbeat")
    if callback is not None:
        callback.stop()


def _worker_addresses(dask_scheduler) -> list[str]:
    """The addresses of the workers the scheduler knows (run on the scheduler)."""
    return list(dask_scheduler.workers)


def shutdown_cluster(scheduler_file: str, *, timeout: float = 30) -> None:
    """Retire every worker of the cluster, then close its scheduler.

    Parameters
    ----------
    scheduler_file : str
        The cluster's scheduler file.
    timeout : float, default=30
        Seconds to wait for the scheduler.
    """
    from distributed import Client

    # The connections this client holds drop as the scheduler closes: not news.
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with Client(scheduler_file=scheduler_file, timeout=timeout) as client:
        try:
            _retire_one_by_one(client, timeout)
        finally:
            # whatever the retirement met, the scheduler must not outlive the job:
            # the recipe waits for the cluster to end
            client.shutdown()


def _retire_one_by_one(client, timeout: float) -> None:
    """Stop the workers' heartbeats, then close the workers one at a time."""
    # A worker closing while its heartbeat is in flight logs the heartbeat's
    # failure as an error: stop the heartbeats and let any in flight return
    # (the scheduler forgets a silent worker only after minutes).
    workers = sorted(client.run(_stop_heartbeat))
    time.sleep(_HEARTBEAT_SETTLE)
    deadline = time.monotonic() + timeout
    for worker in workers:
        # One at a time: the scheduler tells the others of each removal, and a
        # worker closing meanwhile drops that message with a traceback.
        # ``remove=False`` keeps the worker registered until it has closed
        # itself: removed first, it would be told it is unknown and close its
        # stream before its close order is sent.
        client.retire_workers(workers=[worker], close_workers=True, remove=False)
        while worker in client.run_on_scheduler(_worker_addresses):
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)


def main(argv=None) -> int:
    """``python -m scaleprobe.deployments.shutdown SCHEDULER_FILE``."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m scaleprobe.deployments.shutdown SCHEDULER_FILE",
              file=sys.stderr)  # fmt: skip
        return 2
    shutdown_cluster(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
