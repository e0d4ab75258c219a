"""Every code block of the README and the documentation runs, as a reader would run it.

Each page's blocks run in order in a folder of their own (later blocks see the files
earlier ones made):

- ``bash``/``sh``/``shell`` blocks run under ``bash -eu -o pipefail`` with the
  interpreter's ``bin/`` (the ``scaleprobe`` command) first on ``PATH``;
- ``python`` blocks run in one namespace per page, in process, or as a script in a
  subprocess with this interpreter when marked ``script`` (a script that starts a Dask
  cluster must, since Dask's spawned workers import it again);
- ``yaml`` blocks that hold a spec are loaded with ``scaleprobe.framework.load_spec``
  and planned; a block marked ``file NAME`` is written to ``NAME`` first;
- a block marked ``skip REASON`` is not run: only install commands, which ``.ci/run``
  runs itself, may be.

Every other block is an error, and so is a block that did not run. Inline code that
spells a ``scaleprobe`` command must parse, and a benchmark it names must exist and take
the options given.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml
from _docblocks import MARKERS, Block, blocks, inline_code

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
SHELLS = ("bash", "sh", "shell")
#: A block of any language may be written to a file; these are also run or loaded.
RUNNABLE = (*SHELLS, "python", "yaml")
#: Seconds a block may take: the README's tour sweep took 75 s on a quiet 2-core host
#: and 700 s beside a load of 35 runnable processes.
BLOCK_TIMEOUT = 1800


def _pages() -> list[Path]:
    pages = [README, *sorted(DOCS.rglob("*.md"))]
    return [page for page in pages if "_build" not in page.parts]


def _launches(page: Path) -> bool:
    """Whether a block of ``page`` launches MPI (runs a sweep)."""
    return any(
        "scaleprobe run " in block.text or "run_sweep(" in block.text
        for block in blocks(page)
        if block.marker != "skip"
    )


def _page_params() -> list:
    return [
        pytest.param(
            page,
            id=_page_id(page),
            marks=[pytest.mark.slow, pytest.mark.mpi] if _launches(page) else [],
        )
        for page in _pages()
    ]


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _environment() -> dict:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PYTHONPATH", None)
    return env


def _check_marker(block: Block) -> None:
    assert block.marker in ("", *MARKERS), (
        f"{block.where}: unknown marker {block.marker!r}; allowed: {MARKERS}"
    )
    if block.marker == "skip":
        assert block.argument, f"{block.where}: a skipped block needs a reason"
        assert "pip install" in block.text, (
            f"{block.where}: only install commands may be skipped (CI runs them)"
        )
    elif block.marker == "file":
        assert block.argument, f"{block.where}: 'file' needs a file name"
        assert "/" not in block.argument, (
            f"{block.where}: 'file' needs a plain file name, got {block.argument!r}"
        )
    elif block.marker == "script":
        assert block.language == "python", (
            f"{block.where}: only Python runs as a script"
        )
    else:
        assert block.language in RUNNABLE, (
            f"{block.where}: a {block.language or 'plain'!r} block runs in no way; "
            f"use one of {RUNNABLE}, or mark it 'file NAME'"
        )


def _run_shell(block: Block, folder: Path) -> None:
    result = subprocess.run(
        ["bash", "-eu", "-o", "pipefail", "-c", block.text],
        cwd=folder,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, (
        f"{block.where} exited {result.returncode}:\n{result.stdout[-3000:]}\n"
        f"{result.stderr[-3000:]}"
    )


def _run_script(block: Block, folder: Path) -> None:
    script = folder / f"block_{block.line}.py"
    script.write_text(block.text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, script.name],
        cwd=folder,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, (
        f"{block.where} exited {result.returncode}:\n{result.stderr[-3000:]}"
    )


def _run_python(block: Block, namespace: dict) -> None:
    code = compile(block.text, block.where, "exec")
    with warnings.catch_warnings():
        # a documented call may warn (an extrapolation, say): the reader sees it too
        warnings.simplefilter("always")
        exec(code, namespace)


def _load_spec(block: Block, folder: Path) -> bool:
    """Load and plan a YAML block that holds a spec; False when it holds none."""
    from scaleprobe.framework import load_spec, plan

    content = yaml.safe_load(block.text)
    if not (isinstance(content, dict) and "kernel" in content):
        return False
    path = folder / (
        block.argument if block.marker == "file" else f"spec_{block.line}.yaml"
    )
    path.write_text(block.text, encoding="utf-8")
    spec = load_spec(path)
    assert plan(spec), f"{block.where}: the spec plans no point"
    return True


def _run_block(block: Block, folder: Path, namespace: dict) -> None:
    if block.marker == "file":
        (folder / block.argument).write_text(block.text, encoding="utf-8")
    if block.language == "yaml":
        assert _load_spec(block, folder) or block.marker == "file", (
            f"{block.where}: a YAML block that is not a spec must be marked 'file NAME'"
        )
    elif block.language in SHELLS:
        _run_shell(block, folder)
    elif block.marker == "script":
        _run_script(block, folder)
    elif block.language == "python":
        _run_python(block, namespace)


@pytest.mark.parametrize("page", _page_params())
def test_every_code_block_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files a Python block writes land here
    found = blocks(page)
    for block in found:
        _check_marker(block)
    ran = []
    namespace = {"__name__": f"docs_{page.stem}"}
    for block in found:
        if block.marker != "skip":
            _run_block(block, tmp_path, namespace)
            ran.append(block)
    unmarked = [block for block in found if block.marker != "skip"]
    assert ran == unmarked, f"{_page_id(page)}: blocks left unrun"


def _scaleprobe_commands() -> list[tuple[str, str]]:
    commands = []
    for page in _pages():
        for line, span in inline_code(page):
            placeholder = any(c in span for c in "[]|<>…") or "..." in span
            # a command named alone ('scaleprobe fit') is a name, not an invocation
            invoked = len(span.split()) > 2 or span.split()[-1].startswith("-")
            if span.startswith("scaleprobe ") and invoked and not placeholder:
                commands.append((f"{_page_id(page)}:{line}", span))
    return commands


@pytest.mark.parametrize(("where", "command"), _scaleprobe_commands())
def test_inline_commands_parse(where, command, capsys):
    from scaleprobe.framework.cli import build_parser

    argv = shlex.split(command)[1:]
    code = 0
    try:
        build_parser().parse_args(argv)
    except SystemExit as stop:  # --help and --version exit 0, a bad argument 2
        code = stop.code
    assert code == 0, f"{where}: {command!r} does not parse:\n{capsys.readouterr().err}"


def _benchmark_commands() -> list[tuple[str, str]]:
    commands = []
    for page in _pages():
        for line, span in inline_code(page):
            words = span.split()
            named = len(words) >= 2 and words[0] == "python"
            if named and words[1].startswith("tests/") and "<" not in span:
                commands.append((f"{_page_id(page)}:{line}", span))
    return commands


@pytest.mark.parametrize(("where", "command"), _benchmark_commands())
def test_benchmark_commands_exist(where, command):
    words = shlex.split(command)
    script = ROOT / words[1]
    assert script.is_file(), f"{where}: {words[1]} does not exist"
    source = script.read_text(encoding="utf-8")
    for word in words[2:]:
        option = word.split("=", 1)[0]
        if option.startswith("--"):
            assert f'"{option}"' in source, (
                f"{where}: {words[1]} has no option {option}"
            )


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines; it must stay at most 250"


def _api_lists() -> dict[str, list[str]]:
    """The names listed in docs/api.rst, by the module they are listed under."""
    listed: dict[str, list[str]] = {}
    module = None
    for line in (DOCS / "api.rst").read_text(encoding="utf-8").splitlines():
        if line.startswith(".. currentmodule::"):
            module = line.split("::", 1)[1].strip()
            listed[module] = []
        elif module and line.startswith("   ") and not line.strip().startswith(":"):
            listed[module].append(line.strip())
    return listed


def test_api_reference_lists_every_public_name():
    import importlib

    listed = _api_lists()
    assert set(listed) >= {
        "scaleprobe.framework",
        "scaleprobe.kernels.schema",
        "scaleprobe.models",
    }
    for module, names in listed.items():
        public = sorted(importlib.import_module(module).__all__)
        missing = sorted(set(public) - set(names))
        extra = sorted(set(names) - set(public))
        assert not missing, f"docs/api.rst does not list {missing} of {module}"
        assert not extra, f"docs/api.rst lists {extra}, not public in {module}"


def test_every_registered_kernel_has_a_page():
    from scaleprobe.kernels.registry import kernel_names

    pages = {page.stem for page in (DOCS / "kernels").glob("*.md")}
    unpaged = sorted(set(kernel_names()) - pages)
    assert not unpaged, f"kernels without a page in docs/kernels/: {unpaged}"


def test_ci_runs_the_readme_test_command():
    test_line = next(
        line.strip()
        for block in blocks(README)
        for line in block.text.splitlines()
        if "pytest" in line and not line.startswith("#")
    )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_line in ci, f".ci/run does not run the README's {test_line!r}"
