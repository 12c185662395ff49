"""No dead names: every top-level function, class and constant of the product is named somewhere besides its
own definition (the product, tests, bench, docs, or the task files lm-eval reads by name). A name nobody
reads misleads the next reader into keeping it in step."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from tests.layout.test_imports import MODULES, ROOT

READ_BY = ("recorder", "replay", "trainer", "evaluator", "schemas", "tests", "bench", "docs")
SUFFIXES = {".py", ".md", ".toml", ".yaml"}
# Names defined ahead of their reader, each with why (none today).
NOT_READ_YET: set[str] = set()
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _defined(tree: ast.Module) -> list[str]:
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("__")]


def dead_names(modules: dict[str, Path], texts: list[str]) -> list[str]:
    """`module.name` for each top-level name of `modules` that occurs only once in all of `texts` (its
    definition)."""
    count: Counter[str] = Counter()
    for text in texts:
        count.update(_WORD.findall(text))
    return [
        f"{module}.{name}"
        for module, path in sorted(modules.items())
        for name in _defined(ast.parse(path.read_text(encoding="utf-8")))
        if count[name] <= 1
    ]


def _tree_texts() -> list[str]:
    return [
        p.read_text(encoding="utf-8")
        for folder in READ_BY
        for p in (ROOT / folder).rglob("*")
        if p.suffix in SUFFIXES and p.is_file()
    ]


def test_every_top_level_name_is_read_somewhere() -> None:
    assert sorted(set(dead_names(MODULES, _tree_texts())) - NOT_READ_YET) == []


def test_a_name_defined_and_never_read_is_found(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("def used() -> None: ...\n\n\ndef forgotten() -> None: ...\n")
    assert dead_names({"m": module}, [module.read_text(), "used()\n"]) == ["m.forgotten"]


def test_what_is_not_read_yet_is_still_defined() -> None:
    for qualified in NOT_READ_YET:
        module, _, name = qualified.rpartition(".")
        assert name in _defined(ast.parse(MODULES[module].read_text(encoding="utf-8"))), qualified
