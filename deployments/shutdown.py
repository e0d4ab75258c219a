"""Shut down a Dask cluster by its scheduler file: workers first, then the scheduler.

The scheduler-file recipes end with ``python -m scaleprobe.deployments.shutdown FILE``.
Retiring the workers before the scheduler closes lets each worker leave on its own
terms; closing the scheduler under them instead makes every worker and the client log
``CommClosedError`` tracebacks into the job log as their connections drop.
"""

from __future__ import annotations

import logging
import sys

__all__ = ["shutdown_cluster"]


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
        client.retire_workers(close_workers=True)
        client.shutdown()


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
