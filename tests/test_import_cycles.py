"""No import cycles among scaleprobe's modules.

The graph is read from the source, not from an interpreter: every ``import`` and
``from ... import`` of a ``scaleprobe`` module in the four source folders, at module
level or inside a function (a function-level import that closes a cycle still makes
two modules that cannot be understood, or loaded, one without the other). Imports
under ``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Source folder -> the package it installs as (pyproject.toml's package-dir).
FOLDERS = {
    "framework/_root": "scaleprobe",
    "framework": "scaleprobe.framework",
    "kernels": "scaleprobe.kernels",
    "models": "scaleprobe.models",
    "deployments": "scaleprobe.deployments",
}


def _module_name(path: Path) -> tuple[str, bool]:
    """The dotted name of a source file, and whether it is a package."""
    for folder, package in FOLDERS.items():
        base = ROOT / folder
        if folder == "framework" and (ROOT / "framework/_root") in path.parents:
            continue
        if base in path.parents:
            parts = list(path.relative_to(base).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            return ".".join([package, *parts]), is_package
    raise ValueError(f"{path} is in none of {sorted(FOLDERS)}")


def source_modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the four source folders: name -> (file, is a package)."""
    modules = {}
    for folder in ("framework", "kernels", "models", "deployments"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            name, is_package = _module_name(path)
            modules[name] = (path, is_package)
    return modules


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    return skipped


def _resolve(name: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = name.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(name: str, path: Path, is_package: bool, known) -> set[str]:
    """The scaleprobe modules that one module imports (targets present in ``known``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    targets = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, is_package, node)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                targets.add(submodule if submodule in known else base)
    return {t for t in targets if t in known and t != name}


def import_graph() -> dict[str, set[str]]:
    """Module -> the scaleprobe modules it imports."""
    modules = source_modules()
    return {
        name: imports_of(name, path, is_package, modules)
        for name, (path, is_package) in modules.items()
    }


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module.

    Tarjan's algorithm (iterative); each cycle is returned as a closed path
    ``[a, b, ..., a]`` found by a breadth-first search inside its component.
    """
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph, component: set[str]) -> list[str]:
    first = min(component)
    paths = {first: [first]}
    queue = [first]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & component):
            if child == first:
                return [*paths[node], first]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    raise AssertionError(f"no cycle through {first} in {sorted(component)}")


def test_the_graph_sees_the_imports_it_must():
    graph = import_graph()
    # A module-level relative import, a function-level one and an absolute one.
    assert "scaleprobe.framework.spec" in graph["scaleprobe.framework.planning"]
    assert "scaleprobe.framework.launch" in graph["scaleprobe.framework.runner"]
    assert "scaleprobe.kernels.schema" in graph["scaleprobe.framework.launch"]
    assert "scaleprobe.framework.cli" in graph
    assert "scaleprobe" in graph


def test_find_cycles_names_a_known_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert find_cycles(graph) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_in_the_source_folders():
    cycles = find_cycles(import_graph())
    named = [" -> ".join(cycle) for cycle in cycles]
    assert named == [], "import cycles: " + "; ".join(named)
