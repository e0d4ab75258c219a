"""Print pip constraints that pin every dependency to the floor pyproject.toml claims.

``name>=X`` becomes ``name==X`` (runtime dependencies and the extras named on the
command line); exact pins (``name==X``) pass through. CI installs scaleprobe with
these constraints in a second environment and runs the fast tests on them, so a floor
that does not work fails CI instead of a user's install.

Usage: python .ci/floors.py [EXTRA ...] > floors.txt
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][\w.-]*)\s*(>=|==)\s*([^,;\s]+)\s*$")


def floors(pyproject: Path, extras: list[str]) -> list[str]:
    """The ``name==floor`` lines of the runtime dependencies and ``extras``."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [extra for extra in extras if extra not in optional]
    if unknown:
        raise SystemExit(
            f"unknown extra(s) {unknown}; pyproject.toml has {sorted(optional)}"
        )
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += optional[extra]
    lines = {}
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement)
        if match is None:
            raise SystemExit(
                f"{requirement!r} has no single floor; write it as 'name>=version'"
            )
        name, _, version = match.groups()
        lines[name.lower()] = f"{name}=={version}"
    return sorted(lines.values(), key=str.lower)


if __name__ == "__main__":
    root = Path(__file__).resolve().parent.parent
    print("\n".join(floors(root / "pyproject.toml", sys.argv[1:])))
