"""Provenance of a campaign: versions, MPI library, host, git commit, timestamps."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import subprocess
import time

from .spec import Spec

__all__ = ["provenance"]


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _run(command: list[str]) -> str:
    try:
        out = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def mpi_library(mpiexec: str) -> str:
    """Describe the MPI library behind ``mpiexec`` (e.g. ``MPICH 5.0.2 (HYDRA)``)."""
    text = _run([mpiexec, "--version"])
    for line in text.splitlines():
        if line.strip().lower().startswith("version:"):
            return f"MPICH {line.split(':', 1)[1].strip()} (hydra mpiexec)"
        if "open mpi" in line.lower() or "(open mpi)" in line.lower():
            return line.strip()
    return text.splitlines()[0] if text else "unknown"


def provenance(spec: Spec, mpiexec: str) -> dict:
    """Return the provenance attributes of a campaign.

    Parameters
    ----------
    spec : Spec
        The campaign.
    mpiexec : str
        The launcher in use.

    Returns
    -------
    dict
        JSON-serialisable attributes for the Dataset.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    commit = _run(["git", "-C", here, "rev-parse", "HEAD"]) or "unknown"
    attrs = {
        "title": spec.name,
        "kernel": spec.kernel,
        "scaleprobe_version": _version("scaleprobe"),
        "git_commit": commit,
        "python_version": platform.python_version(),
        "numpy_version": _version("numpy"),
        "mpi4py_version": _version("mpi4py"),
        "dask_version": _version("dask"),
        "xarray_version": _version("xarray"),
        "mpi_library": mpi_library(mpiexec),
        "mpiexec": mpiexec,
        "hostname": socket.gethostname(),
        "throttle_mode": spec.throttle.mode,
        "admissible": spec.admissible,
        "spec": spec.text,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    if spec.throttle.mode == "netns":
        from .netns import shaping_provenance

        attrs.update(shaping_provenance())
    return attrs
