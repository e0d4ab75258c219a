"""What every reader of measurement files shares, without heavy imports: the error
a malformed file raises and the names that mark a process count or a repetition.
"""

from __future__ import annotations

__all__ = [
    "NODE_NAMES",
    "RANK_NAMES",
    "RUN_NAMES",
    "MeasurementFileError",
    "file_error",
]

#: Parameter names read as MPI process (rank) counts, compared case-insensitively.
RANK_NAMES = (
    "ranks",
    "processes",
    "procs",
    "nprocs",
    "nproc",
    "np",
    "p",
    "mpi_ranks",
    "num_ranks",
    "nranks",
    "num_procs",
    "tasks",
    "ntasks",
)
#: Parameter names read as node counts, compared case-insensitively.
NODE_NAMES = ("nodes", "nnodes", "num_nodes", "n_nodes", "node_count")
#: Column names read as the repetition index, compared case-insensitively.
RUN_NAMES = ("run", "repetition", "rep", "repeat")


class MeasurementFileError(ValueError):
    """A measurement file that cannot be read: where, what was wrong, what is allowed.

    A ``ValueError``, so that callers that report bad input keep working.
    """


def file_error(path, what, *, where=None, allowed=None):
    """Build a :class:`MeasurementFileError` naming the file and the place in it.

    Parameters
    ----------
    path : str or path-like
    what : str
        What was wrong.
    where : str, default=None
        The place in the file (a line, a JSON path).
    allowed : str, default=None
        What is allowed there.

    Returns
    -------
    MeasurementFileError

    Examples
    --------
    >>> str(file_error("a.txt", "DATA without values", where="line 3"))
    'a.txt, line 3: DATA without values'
    """
    place = f"{path}, {where}" if where else f"{path}"
    text = f"{place}: {what}"
    if allowed:
        text += f" ({allowed})"
    return MeasurementFileError(text)
