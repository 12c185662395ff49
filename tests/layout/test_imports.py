"""The layout's promises, read from the source: no import cycles, a core that imports only the core, and an
evaluator that sees the trainer only through `trainer.policy`.

Every import counts, also those inside functions: a lazy import still ties one module to the other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("recorder", "replay", "trainer", "evaluator", "schemas")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module an import names (an attribute import resolves to its module)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str) -> set[str]:
    """Project modules that `module` imports, anywhere in its body (TYPE_CHECKING blocks too: a cycle there is
    still a cycle for a reader and for mypy)."""
    tree = ast.parse(MODULES[module].read_text())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:  # `from recorder.history import plot` names a module
                target = _resolve(f"{node.module}.{alias.name}") or _resolve(node.module)
                if target:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    # A package's own __init__ is imported on the way to any of its modules; that is not a dependency.
    return {m for m in found if not module.startswith(m + ".")}


GRAPH = {m: imports_of(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


CORE_FORBIDDEN = ("replay", "trainer", "evaluator", "typer", "rich", "torch", "duckdb")
OUTSIDE_CORE = ("recorder.cli", "recorder.history", "recorder.report", "recorder.adapters", "recorder.compat")


def _third_party(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize(
    "module",
    sorted(
        m for m in MODULES if m.split(".")[0] == "recorder" and not m.startswith(OUTSIDE_CORE) and m != "recorder.cli"
    ),
)
def test_core_imports_only_the_core(module: str) -> None:
    assert _third_party(module).isdisjoint(CORE_FORBIDDEN), _third_party(module) & set(CORE_FORBIDDEN)
    # The core may read the schema files (`schemas`), nothing else of the project outside itself.
    outside = sorted(
        m for m in GRAPH[module] if m.split(".")[0] not in ("recorder", "schemas") or m.startswith(OUTSIDE_CORE)
    )
    assert outside == []


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.split(".")[0] == "evaluator"))
def test_evaluator_sees_the_trainer_only_through_its_policy(module: str) -> None:
    trainer = sorted(m for m in GRAPH[module] if m.split(".")[0] == "trainer")
    assert all(m == "trainer.policy" or m.startswith("trainer.policy.") for m in trainer), trainer
