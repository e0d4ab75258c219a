"""Join an existing Dask cluster within a bounded time, or say plainly why not."""

from __future__ import annotations

import json
import os
import time

__all__ = [
    "ClusterError",
    "ClusterSizeError",
    "check_workers",
    "connect",
    "scheduler_address",
]


class ClusterError(RuntimeError):
    """The cluster could not be started or reached; the message says which and why."""


class ClusterSizeError(ClusterError, ValueError):
    """The MPI job is too small to hold a ``dask-mpi`` cluster (a user mistake)."""


def check_workers(workers) -> int:
    """Return ``workers`` as a positive int, or raise a one-line error.

    Examples
    --------
    >>> check_workers(2)
    2
    >>> check_workers(0)  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    ...
    scaleprobe.framework.settings.SettingsError: workers must be ... got 0
    """
    from .settings import SettingsError

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SettingsError(
            f"workers must be a whole number of at least 1, got {workers!r}"
        )
    return workers


def connect_timeout(value=None) -> float:
    """Seconds to wait for a cluster (setting ``scaleprobe.cluster.connect-timeout``).

    Parameters
    ----------
    value : float, optional
        Explicit seconds; the setting when None.

    Returns
    -------
    float
    """
    from . import config
    from .settings import SettingsError

    value = config.resolve(value, "cluster.connect-timeout")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise SettingsError(
            "setting 'scaleprobe.cluster.connect-timeout': a positive number of "
            f"seconds, got {value!r}"
        )
    return float(value)


def scheduler_address(path, timeout, *, clock=time.monotonic, sleep=time.sleep):
    """Read the scheduler address from a scheduler file, waiting for it to appear.

    Parameters
    ----------
    path : str or path-like
        Scheduler file written by ``dask scheduler --scheduler-file``.
    timeout : float
        Seconds to wait for the file to exist and hold an address.
    clock, sleep : callable
        Time source and sleeper (injected in tests).

    Returns
    -------
    str
        The address, e.g. ``"tcp://127.0.0.1:8786"``.

    Raises
    ------
    ClusterError
        The file did not appear, or held no address, within ``timeout``.
    """
    deadline = clock() + timeout
    problem = "does not exist"
    while True:
        try:
            with open(path) as f:
                address = json.load(f)["address"]
            if isinstance(address, str) and address:
                return address
            problem = "holds no scheduler address"
        except FileNotFoundError:
            problem = "does not exist"
        except IsADirectoryError:
            problem = "is a directory, not a scheduler file"
        except (ValueError, KeyError, TypeError):
            problem = "holds no scheduler address (not a Dask scheduler file?)"
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        if clock() >= deadline:
            raise ClusterError(
                f"scheduler file {os.fspath(path)} {problem} after waiting "
                f"{timeout:g} s (start the scheduler with 'dask scheduler "
                f"--scheduler-file {os.fspath(path)}', or raise "
                "scaleprobe.cluster.connect-timeout)"
            )
        sleep(min(0.1, max(deadline - clock(), 0)))


def connect(address, timeout):
    """Return a client of the scheduler at ``address`` that has a worker.

    Parameters
    ----------
    address : str
        Scheduler address.
    timeout : float
        Seconds to wait for the connection, and then again for a first worker.

    Returns
    -------
    distributed.Client

    Raises
    ------
    ClusterError
        No scheduler answered, or it has no worker, within ``timeout``.
    """
    from distributed import Client

    try:
        client = Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(
            f"no Dask scheduler answered at {address} within {timeout:g} s "
            f"({_first_line(exc)}); check the address, or raise "
            "scaleprobe.cluster.connect-timeout"
        ) from None
    except ValueError as exc:  # e.g. an unknown protocol
        client = None
        problem = _first_line(exc)
    else:
        problem = None
    if client is None:
        raise ClusterError(f"cannot connect to {address!r}: {problem}")
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError):
        client.close()
        raise ClusterError(
            f"the Dask cluster at {address} has no worker after {timeout:g} s; "
            "start one ('dask worker ADDRESS') or raise "
            "scaleprobe.cluster.connect-timeout"
        ) from None
    return client


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
