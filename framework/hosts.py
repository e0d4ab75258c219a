"""The hosts a launch may place ranks on, and the launcher words that place them.

A launcher left to its defaults places ranks as it likes: hydra reads
``$PBS_NODEFILE`` itself and fills each host's slots, so a point of 2 nodes x 1 rank
runs both ranks on the first host. Every launch therefore names its hosts and ranks
per host. They come from, in this order:

1. ``scaleprobe.launch.hostfile`` (a hydra or Open MPI host file);
2. ``$PBS_NODEFILE`` inside a PBS job;
3. the nodes of a SLURM allocation (``$SLURM_JOB_NODELIST``) where the launcher is
   ``mpiexec`` (with ``srun`` SLURM places the ranks: ``--nodes --ntasks-per-node``);

and the point's ``nodes`` are the first hosts of that list. Without any of them the
ranks run on this host. Only the standard library is used.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess

__all__ = [
    "Hosts",
    "hosts_given",
    "launch_hosts",
    "placement_arguments",
    "read_hostfile",
    "this_host",
]


@dataclasses.dataclass(frozen=True)
class Hosts:
    """The hosts a launch may use, in order, and where the list came from.

    Parameters
    ----------
    names : tuple of str
        Host names, each once.
    source : str
        Where they were read, for messages (``$PBS_NODEFILE (/var/spool/...)``).

    Examples
    --------
    >>> Hosts(("n1", "n2", "n3"), "host file hosts.txt").first(2)
    ('n1', 'n2')
    >>> Hosts(("n1",), "host file hosts.txt").first(2)
    Traceback (most recent call last):
    ...
    ValueError: the point asks 2 nodes but host file hosts.txt names 1 host
    """

    names: tuple
    source: str

    def first(self, nodes: int) -> tuple:
        """The first ``nodes`` hosts, or a one-line error when there are fewer.

        Parameters
        ----------
        nodes : int

        Returns
        -------
        tuple of str

        Raises
        ------
        ValueError
            Fewer hosts than ``nodes``.
        """
        if nodes > len(self.names):
            count = len(self.names)
            raise ValueError(
                f"the point asks {nodes} nodes but {self.source} names {count} "
                f"host{'s' if count != 1 else ''}"
            )
        return tuple(self.names[:nodes])


def _unique(names) -> tuple:
    return tuple(dict.fromkeys(name for name in names if name))


def read_hostfile(path: str) -> tuple:
    """The hosts of a host file, each once, in order.

    Understands hydra's ``host[:slots]``, Open MPI's ``host slots=N`` and PBS's
    node file (one line per slot); ``#`` starts a comment.

    Parameters
    ----------
    path : str

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("n1:2\\nn1:2  # again\\nn2 slots=4\\n\\n# n3\\n")
    >>> read_hostfile(f.name)
    ('n1', 'n2')
    """
    names = []
    with open(path, encoding="utf-8") as file:
        for line in file:
            words = line.split("#", 1)[0].split()
            if words:
                names.append(words[0].split(":", 1)[0])
    return _unique(names)


def _slurm_nodes(nodelist: str, environ) -> tuple:
    """Expand a SLURM node list (``sp[0-3]``) with ``scontrol show hostnames``."""
    try:
        out = subprocess.run(
            ["scontrol", "show", "hostnames", nodelist],
            capture_output=True,
            text=True,
            env=dict(environ),
            timeout=30,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return _unique(out.stdout.split()) if out.returncode == 0 else ()


def hosts_given(hostfile: str | None, environ=None) -> bool:
    """Whether a launch by ``mpiexec`` is given hosts (:func:`launch_hosts` would
    read some), without reading them.

    Parameters
    ----------
    hostfile : str or None
        ``scaleprobe.launch.hostfile``.
    environ : mapping, optional
        :data:`os.environ` by default.

    Returns
    -------
    bool

    Examples
    --------
    >>> hosts_given(None, {"PBS_NODEFILE": "/var/spool/pbs/aux/42"})
    True
    >>> hosts_given(None, {"SLURM_JOB_NODELIST": "n[1-4]"})  # not in the job
    False
    """
    environ = os.environ if environ is None else environ
    slurm = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    return bool(
        hostfile
        or environ.get("PBS_NODEFILE")
        or (slurm and environ.get("SLURM_JOB_ID"))
    )


def launch_hosts(hostfile: str | None, environ=None) -> Hosts | None:
    """The hosts a launch by ``mpiexec`` may place ranks on, or None for this host.

    Parameters
    ----------
    hostfile : str or None
        ``scaleprobe.launch.hostfile``.
    environ : mapping, optional
        Where ``$PBS_NODEFILE`` and ``$SLURM_JOB_NODELIST`` are looked up;
        :data:`os.environ` by default.

    Returns
    -------
    Hosts or None

    Raises
    ------
    OSError
        A host file or node file that cannot be read.
    """
    environ = os.environ if environ is None else environ
    if hostfile:
        return Hosts(read_hostfile(hostfile), f"host file {hostfile}")
    nodefile = environ.get("PBS_NODEFILE")
    if nodefile:
        return Hosts(read_hostfile(nodefile), f"$PBS_NODEFILE ({nodefile})")
    nodelist = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    if nodelist and environ.get("SLURM_JOB_ID"):
        names = _slurm_nodes(nodelist, environ)
        if names:
            return Hosts(names, f"the SLURM allocation ({nodelist})")
    return None


def this_host() -> Hosts:
    """This host alone.

    Returns
    -------
    Hosts
    """
    return Hosts((socket.gethostname(),), "this host")


def placement_arguments(family: str, hosts, ppn: int) -> list[str]:
    """The ``mpiexec`` options that start ``ppn`` ranks on each of ``hosts``.

    Parameters
    ----------
    family : str
        The launcher's MPI family: ``openmpi`` gets Open MPI's options, any other
        hydra's (MPICH, Intel MPI, MVAPICH).
    hosts : sequence of str
        The hosts, as many as the point's nodes.
    ppn : int
        Ranks on each.

    Returns
    -------
    list of str

    Examples
    --------
    >>> placement_arguments("mpich", ["n1", "n2"], 2)
    ['-hosts', 'n1:2,n2:2', '-ppn', '2']
    >>> placement_arguments("openmpi", ["n1", "n2"], 2)
    ['-H', 'n1:2,n2:2', '--map-by', 'ppr:2:node']
    """
    listed = ",".join(f"{host}:{int(ppn)}" for host in hosts)
    if family == "openmpi":
        return ["-H", listed, "--map-by", f"ppr:{int(ppn)}:node"]
    return ["-hosts", listed, "-ppn", str(int(ppn))]
