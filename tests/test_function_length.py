"""Short functions: none in the four source folders is over 80 lines.

A function is counted from its ``def`` line to its last line, docstring included
(decorators are not counted). Long functions are split by meaning; files are as long
as their one concept needs.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("framework", "kernels", "models", "deployments")
LIMIT = 80


def long_functions(root=ROOT, folders=FOLDERS, limit=LIMIT) -> list[str]:
    """``path:line name (N lines)`` of every function longer than ``limit``."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    length = node.end_lineno - node.lineno + 1
                    if length > limit:
                        where = path.relative_to(root)
                        found.append(f"{where}:{node.lineno} {node.name} ({length})")
    return found


def test_the_count_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(80))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text(f"def long():\n{body}\n")
    assert long_functions(tmp_path, ("pkg",)) == ["pkg/long.py:1 long (81)"]
    assert long_functions(tmp_path, ("pkg",), limit=81) == []


def test_no_function_is_over_80_lines():
    assert long_functions() == []


def test_every_source_folder_is_read():
    for folder in FOLDERS:
        assert any((ROOT / folder).rglob("*.py")), folder
