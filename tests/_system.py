"""Tests that need something of the system skip where it is missing -- but not in CI.

A test that needs a Debian package (SLURM, munge, chromium, Open MPI's compiler),
root or the ``ip``/``tc`` tools skips with a reason made by :func:`missing`. Under
``CI=true`` such a skip is an error (``tests/conftest.py`` turns it into one): CI
installs everything these tests need, so a missing piece there is a broken install,
not a reason to pass.
"""

from __future__ import annotations

import os

#: Every reason made by :func:`missing` starts with this.
MISSING = "missing on this machine: "


def missing(what: str) -> str:
    """The reason of a skip for a missing system requirement.

    Parameters
    ----------
    what : str
        What is missing and how to get it.

    Returns
    -------
    str
    """
    return MISSING + str(what)


def in_ci() -> bool:
    """Whether the tests run in CI (``CI=true``, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")
