"""The Examples sections of every docstring run as doctests, module by module.

They are collected from the installed ``scaleprobe`` packages (so each module is
imported under its real name, once) and run as part of the ordinary test command.
The root package's folder sits inside ``framework/`` (``pyproject.toml`` maps it), where
an editable install also finds it as ``scaleprobe.framework._root``: it runs once, as
``scaleprobe``.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("framework", "kernels", "models", "deployments")
ROOT_FOLDER = "scaleprobe.framework._root"


def _modules() -> list[str]:
    names = ["scaleprobe"]
    for package in PACKAGES:
        pkg = importlib.import_module(f"scaleprobe.{package}")
        names.append(pkg.__name__)
        names += [
            info.name
            for info in pkgutil.walk_packages(pkg.__path__, f"{pkg.__name__}.")
            if not info.name.endswith("__main__") and info.name != ROOT_FOLDER
        ]
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(module, name) if t.examples]
    if not tests:
        pytest.skip("no examples")
    report = []
    for test in tests:
        runner.run(test, out=report.append)
    failed, _ = runner.summarize(verbose=False)
    assert failed == 0, "".join(report)
