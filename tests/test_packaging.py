"""``pip install .`` installs every package of the source folders.

``pyproject.toml`` lists the packages explicitly (the four folders map into one import
root); a subpackage missing from the list is found by an editable install and lost by
a regular one, so the list is checked against the folders.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _configured() -> tuple[set[str], dict[str, str]]:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        setuptools = tomllib.load(handle)["tool"]["setuptools"]
    return set(setuptools["packages"]), setuptools["package-dir"]


def _on_disk(package_dir: dict[str, str]) -> set[str]:
    found = set()
    for package, folder in package_dir.items():
        base = ROOT / folder
        for init in base.rglob("__init__.py"):
            relative = init.parent.relative_to(base)
            if relative.parts and relative.parts[0] == "_root":
                continue  # the root package's own folder, mapped on its own
            found.add(".".join((package, *relative.parts)))
    return found


def test_every_package_folder_is_listed_for_installation():
    listed, package_dir = _configured()
    assert _on_disk(package_dir) - listed == set()
    assert listed - _on_disk(package_dir) == set()


def test_the_check_sees_the_subpackages():
    _, package_dir = _configured()
    assert "scaleprobe.models.fim" in _on_disk(package_dir)
