"""Which MPI a program links, and which MPI an ``mpiexec`` belongs to.

A program runs as one job only under the launcher of its own MPI: an Open MPI binary
started by MPICH's ``mpiexec`` does not fail, it runs every rank as a job of one
(``MPI_COMM_WORLD`` of size 1) and measures the wrong thing. MPIs fall into two
families whose launchers and libraries work together:

- ``mpich``: MPICH and the MPIs built on its ABI (Intel MPI, MVAPICH, Cray MPICH;
  ``libmpi.so.12``, ``libmpich.so``), started by a hydra ``mpiexec``;
- ``openmpi``: Open MPI (``libmpi.so.40``, ``libmpi.so.20``), started by its own
  ``mpiexec`` (ORTE, PRRTE).

:func:`binary_mpi` reads which MPI library an executable needs (``ldd``),
:func:`python_mpi` asks the mpi4py of a Python interpreter (in a child process, with
the launch's environment: ``MPI4PY_LIBMPI`` may point the mpi4py wheel at a site
MPI), :func:`launcher_mpi` reads ``mpiexec --version`` and :func:`launchers_beside`
lists the launchers installed with a library. Only the standard library is used.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import subprocess
import sys

__all__ = [
    "FAMILIES",
    "MpiImplementation",
    "binary_mpi",
    "family_name",
    "is_wheel_mpich",
    "launcher_mpi",
    "launchers_beside",
    "library_mpi",
    "python_mpi",
]

#: The families of MPI whose launchers and libraries work together.
FAMILIES = ("mpich", "openmpi")
_NAMES = {"mpich": "MPICH", "openmpi": "Open MPI"}
#: The MPI library itself, not its Fortran or C++ bindings.
_LIBRARY = re.compile(r"^lib(?:mpi|mpich|mpi_cray|mpi_ibm)\.so(?:\.\d+)*$")
_LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(.*?)\s*(?:\(0x[0-9a-f]+\))?$")
_OPENMPI_LAUNCHER = re.compile(r"\((?:OpenRTE|Open MPI|PRRTE)\)\s+(\S+)")
_HYDRA_VERSION = re.compile(r"^\s*Version:\s*(\S+)", re.MULTILINE)
_TIMEOUT = 20.0


def family_name(family: str) -> str:
    """The name people call a family by: ``MPICH``, ``Open MPI``.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`, or anything else (returned as it is).

    Returns
    -------
    str

    Examples
    --------
    >>> family_name("openmpi")
    'Open MPI'
    """
    return _NAMES.get(family, family)


@dataclasses.dataclass(frozen=True)
class MpiImplementation:
    """One MPI: its family and how it was recognised.

    Parameters
    ----------
    family : {"mpich", "openmpi"}
        The family (see the module).
    name : str
        What it calls itself, e.g. ``MPICH 5.0.2`` or ``Open MPI v4.1.4``.
    library : str, default=""
        Path (or file name, where it is not found) of the MPI library; empty for a
        launcher.

    Examples
    --------
    >>> MpiImplementation("openmpi", "Open MPI", "/usr/lib/libmpi.so.40").describe()
    'Open MPI (/usr/lib/libmpi.so.40)'
    """

    family: str
    name: str
    library: str = ""

    def describe(self) -> str:
        """One phrase: the name, and the library where there is one.

        Returns
        -------
        str
        """
        return f"{self.name} ({self.library})" if self.library else self.name


@functools.lru_cache(maxsize=1)
def _wheel_libraries() -> frozenset:
    from importlib import metadata

    try:
        files = metadata.distribution("mpich").files or ()
    except metadata.PackageNotFoundError:
        return frozenset()
    found = set()
    for file in files:
        if _LIBRARY.match(os.path.basename(str(file))):
            found.add(os.path.realpath(file.locate()))
    return frozenset(found)


def is_wheel_mpich(library: str) -> bool:
    """Whether an MPI library is the ``mpich`` wheel's (the one mpi4py loads here).

    That MPICH reaches SLURM's ``pmi2`` plugin through PMI-1 alone (its PMI-2 client
    is not built), and over UCX by default: :func:`~scaleprobe.framework.launch.
    launch_environment` picks its transport for ``srun`` launches by this.

    Parameters
    ----------
    library : str
        Path of an MPI library, e.g. :attr:`MpiImplementation.library`.

    Returns
    -------
    bool
        False for an empty path, another library, or where no ``mpich`` wheel is
        installed.

    Examples
    --------
    >>> is_wheel_mpich("/usr/lib/x86_64-linux-gnu/libmpi.so.40")
    False
    """
    if not library:
        return False
    return os.path.realpath(library) in _wheel_libraries()


def _family_of_soname(soname: str) -> str:
    if soname.startswith("libmpi.so.40") or soname.startswith("libmpi.so.20"):
        return "openmpi"
    return "mpich"  # libmpi.so.12 (the MPICH ABI), libmpich.so, libmpi_cray.so


def library_mpi(path: str) -> MpiImplementation:
    """Recognise an MPI library file by what it holds.

    Open MPI's library defines ``ompi_mpi_comm_world``, MPICH's (and those of its
    ABI) ``MPIR_Err_create_code``; a library that cannot be read is recognised by
    its file name (``libmpi.so.40`` is Open MPI, ``libmpi.so.12`` the MPICH ABI).

    Parameters
    ----------
    path : str
        The library, e.g. ``/usr/lib/x86_64-linux-gnu/libmpi.so.40``.

    Returns
    -------
    MpiImplementation
    """
    family = None
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        data = b""
    if b"ompi_mpi_comm_world" in data:
        family = "openmpi"
    elif b"MPIR_Err_create_code" in data:
        family = "mpich"
    if family is None:
        family = _family_of_soname(os.path.basename(path))
    return MpiImplementation(family, family_name(family), path)


def binary_mpi(program: str, env: dict | None = None) -> MpiImplementation | None:
    """The MPI a compiled program links, from ``ldd``; None if it links none.

    Parameters
    ----------
    program : str
        Path of the executable.
    env : dict, optional
        The environment it will run in (``LD_LIBRARY_PATH`` decides which library
        a name resolves to); this process's by default.

    Returns
    -------
    MpiImplementation or None
        None also where ``ldd`` is missing or the file is not a dynamic executable.
    """
    ldd = shutil.which("ldd", path=(env or os.environ).get("PATH"))
    if ldd is None:
        return None
    try:
        out = subprocess.run(
            [ldd, program],
            capture_output=True,
            text=True,
            env=env,
            timeout=_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.stdout.splitlines():
        match = _LDD_LINE.match(line)
        if match is None or not _LIBRARY.match(match.group(1)):
            continue
        soname, target = match.groups()
        if target.startswith("/"):
            return library_mpi(os.path.realpath(target))
        family = _family_of_soname(soname)  # "not found": known by its name only
        return MpiImplementation(family, family_name(family), soname)
    return None


#: Run by :func:`python_mpi` in the program's interpreter: which MPI its mpi4py
#: loads, without starting MPI.
_PROBE = """\
import json, os, re
try:
    import mpi4py
    mpi4py.rc.initialize = False
    mpi4py.rc.finalize = False
    from mpi4py import MPI
    version = MPI.Get_library_version()
except Exception as error:
    print(json.dumps({"error": type(error).__name__ + ": " + str(error)}))
    raise SystemExit(0)
core = re.compile(r"^lib(?:mpi|mpich|mpi_cray|mpi_ibm)\\.so(?:\\.\\d+)*$")
libraries = []
if os.path.exists("/proc/self/maps"):
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if core.match(os.path.basename(path)) and path not in libraries:
                libraries.append(path)
print(json.dumps({"version": version, "libraries": libraries}))
"""


def _family_of_version(text: str) -> str | None:
    if "Open MPI" in text:
        return "openmpi"
    if any(name in text for name in ("MPICH", "Intel(R) MPI", "MVAPICH", "CRAY MPICH")):
        return "mpich"
    return None


@functools.lru_cache(maxsize=32)
def _probe(python: str, environment: tuple) -> dict:
    try:
        out = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            env=dict(environment),
            timeout=_TIMEOUT * 3,
            stdin=subprocess.DEVNULL,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return {"error": "the interpreter could not be asked"}


def python_mpi(python: str | None = None, env: dict | None = None):
    """The MPI the mpi4py of a Python interpreter loads; None without mpi4py.

    Asked in a child process with the program's environment (mpi4py's wheel loads
    MPICH by default and another MPI where ``MPI4PY_LIBMPI`` names its library;
    mpi4py built from source links the MPI it was built against). MPI is not
    started.

    Parameters
    ----------
    python : str, optional
        The interpreter; this one by default.
    env : dict, optional
        The environment the program runs in; this process's by default.

    Returns
    -------
    MpiImplementation or None
        The name is the first line of ``MPI_Get_library_version``.
    """
    python = python or sys.executable
    env = env if env is not None else os.environ
    # a point's own variables tell nothing of the MPI: one answer for every point
    environment = tuple(sorted(kv for kv in env.items() if "SCALEPROBE_" not in kv[0]))
    answer = _probe(python, environment)
    if "error" in answer:
        return None
    version = str(answer.get("version", "")).strip()
    family = _family_of_version(version)
    libraries = answer.get("libraries") or []
    if family is None and libraries:
        return library_mpi(libraries[0])
    if family is None:
        return None
    first = version.splitlines()[0] if version else family_name(family)
    name = first.split(",")[0].replace("\t", " ").strip()
    name = re.sub(r"\s+", " ", name.replace("Version:", "").strip())
    return MpiImplementation(family, name, libraries[0] if libraries else "")


@functools.lru_cache(maxsize=32)
def launcher_mpi(mpiexec: str) -> MpiImplementation | None:
    """The MPI an ``mpiexec`` belongs to, from ``mpiexec --version``.

    Parameters
    ----------
    mpiexec : str
        Path of the launcher.

    Returns
    -------
    MpiImplementation or None
        ``mpich`` for hydra (MPICH, Intel MPI, MVAPICH), ``openmpi`` for ORTE and
        PRRTE; None where it cannot tell.
    """
    try:
        out = subprocess.run(
            [mpiexec, "--version"],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout + out.stderr
    match = _OPENMPI_LAUNCHER.search(text)
    if match or "Open MPI" in text:
        version = f" {match.group(1)}" if match else ""
        return MpiImplementation("openmpi", f"Open MPI{version}")
    if "Intel(R) MPI" in text:
        return MpiImplementation("mpich", "Intel MPI (hydra)")
    if "HYDRA" in text:
        version = _HYDRA_VERSION.search(text)
        name = f"MPICH {version.group(1)}" if version else "MPICH"
        return MpiImplementation("mpich", f"{name} (hydra)")
    return None


def launchers_beside(library: str, family: str) -> list[str]:
    """The ``mpiexec`` commands installed with an MPI library, best first.

    In ``PREFIX/bin`` for a library in ``PREFIX/lib`` (or ``PREFIX/lib64``: a
    module-installed MPI), then in ``/usr/bin``: first the names distributions
    give each family's launcher (``mpiexec.openmpi``, ``mpiexec.mpich``,
    ``mpiexec.hydra``), then plain ``mpiexec``. Only files that exist are
    listed; whether they are of the family is for :func:`launcher_mpi` to say.

    Parameters
    ----------
    library : str
        Path of the MPI library.
    family : str
        Its family.

    Returns
    -------
    list of str
    """
    names = {  # a distribution's own name first: plain mpiexec may be the other's
        "openmpi": ("mpiexec.openmpi", "mpirun.openmpi", "mpiexec", "mpirun"),
        "mpich": ("mpiexec.mpich", "mpiexec.hydra", "mpirun.mpich", "mpiexec"),
    }.get(family, ("mpiexec",))
    folders = []
    if os.path.isabs(library):
        libdir = os.path.dirname(library)
        while os.path.basename(libdir) not in ("lib", "lib64", "") and libdir != "/":
            libdir = os.path.dirname(libdir)  # lib/x86_64-linux-gnu, lib/openmpi
        prefix = os.path.dirname(libdir)
        folders.append(os.path.join(prefix, "bin"))
    folders.append("/usr/bin")
    found = []
    for folder in folders:
        for name in names:
            path = os.path.join(folder, name)
            if os.access(path, os.X_OK) and os.path.isfile(path) and path not in found:
                found.append(path)
    return found
