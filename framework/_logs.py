"""Dask's own log lines and tracebacks go to a file beside the store, not the terminal.

A sweep's terminal shows its progress and, at the end, one line; what Dask logs on
the way (a worker restarted, a task cancelled when the run was interrupted, a
connection closed at shutdown) goes to ``<store>.logs/dask.log``, with the time and
the process of each line. Inside :func:`dask_logs_to`:

- this process's log records (Dask's loggers write to standard error; their handlers
  are swapped for the file's) and the tracebacks of its threads go to the file;
- the worker processes of a ``LocalCluster`` started meanwhile
  (:func:`worker_options`) write their standard error, hence their log lines and
  tracebacks, to the same file: :func:`dask_setup` runs in each of them as a Dask
  preload.

``scaleprobe --debug`` leaves everything on the terminal.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time

__all__ = [
    "LOG_NAME",
    "current_log",
    "dask_logs_to",
    "dask_setup",
    "store_log",
    "worker_options",
]

#: The file's name in the store's logs folder.
LOG_NAME = "dask.log"
#: The environment variable that names the file to a worker process.
_WORKER_LOG = "SCALEPROBE_DASK_LOG"
_FORMAT = "%(asctime)s pid %(process)d %(name)s %(levelname)s: %(message)s"
_current: list[str] = []


def current_log() -> str | None:
    """The file Dask's log lines go to in this process, or None.

    Returns
    -------
    str or None
    """
    return _current[-1] if _current else None


def store_log(output) -> str:
    """The Dask log file of the store at ``output``: ``<stem>.logs/dask.log``.

    Parameters
    ----------
    output : str or path-like
        The store's consolidated Dataset (``results/pingpong.zarr``).

    Returns
    -------
    str

    Examples
    --------
    >>> store_log("results/pingpong.zarr")
    'results/pingpong.logs/dask.log'
    """
    from .store import ResultStore

    return os.path.join(ResultStore(output).logs_dir, LOG_NAME)


def _to_stderr(handler: logging.Handler) -> bool:
    stream = getattr(handler, "stream", None)
    return isinstance(handler, logging.StreamHandler) and stream in (
        sys.stderr,
        sys.__stderr__,
    )


def _loggers() -> list[logging.Logger]:
    named = [
        logger
        for logger in logging.Logger.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    return [logging.getLogger(), *named]


@contextlib.contextmanager
def dask_logs_to(path):
    """Send this process's log records and thread tracebacks to ``path``.

    Parameters
    ----------
    path : str or path-like
        The log file; appended to, its folder made if needed. None changes nothing.

    Yields
    ------
    str or None
        The file's path.
    """
    if path is None:
        yield None
        return
    import distributed  # noqa: F401 - installs the handlers swapped here

    path = os.path.abspath(os.fspath(path))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.stream.write(
        f"---- {time.strftime('%Y-%m-%dT%H:%M:%S%z')} pid {os.getpid()}: "
        f"{' '.join(sys.argv)}\n"
    )
    handler.flush()
    swapped = []
    for logger in _loggers():
        olds = [h for h in logger.handlers if _to_stderr(h)]
        for old in olds:
            logger.removeHandler(old)
            swapped.append((logger, old))
        if olds:
            logger.addHandler(handler)
    root = logging.getLogger()
    extra_root = handler not in root.handlers
    if extra_root:  # records of loggers without a handler would reach lastResort
        root.addHandler(handler)
    hook = threading.excepthook
    threading.excepthook = lambda args: logging.getLogger("scaleprobe").error(
        "exception in thread %s",
        getattr(args.thread, "name", "?"),
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )
    _current.append(path)
    try:
        yield path
    finally:
        _current.pop()
        threading.excepthook = hook
        for logger, old in swapped:
            with contextlib.suppress(ValueError):
                logger.removeHandler(handler)
            logger.addHandler(old)
        if extra_root:
            root.removeHandler(handler)
        handler.close()


def worker_options() -> dict:
    """Keyword arguments of a ``LocalCluster`` whose workers log to the current file.

    Returns
    -------
    dict
        ``preload`` (this module) and ``env`` naming the file, or empty outside
        :func:`dask_logs_to`.
    """
    path = current_log()
    if path is None:
        return {}
    return {"preload": [__name__], "env": {_WORKER_LOG: path}}


def dask_setup(worker=None) -> None:
    """Point this worker process's standard error at the run's log file.

    Dask runs it in each worker process as a preload (:func:`worker_options`). Log
    handlers write to standard error, so Dask's log lines and any traceback of the
    process land in the file.

    Parameters
    ----------
    worker : distributed.Worker, optional
        The worker (unused).
    """
    path = os.environ.get(_WORKER_LOG)
    if not path:
        return
    sys.stderr.flush()
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(descriptor, 2)
    os.close(descriptor)
