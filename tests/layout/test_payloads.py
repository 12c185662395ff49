"""Producers build events through recorder/store/kinds.py: no `append` in the project's code passes `data=` or
names its kind as a string, so a misspelled kind or key fails where it is written (read from the source)."""

from __future__ import annotations

import ast
from pathlib import Path

from recorder.store.catalogue import catalogue

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("recorder", "replay", "trainer", "evaluator")
KINDS = frozenset(catalogue())  # a list's append("text") is not an event


def _untyped_appends(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append"):
            continue
        first = node.args[0] if node.args else None
        by_name = isinstance(first, ast.Constant) and first.value in KINDS
        if by_name or any(k.arg == "data" for k in node.keywords):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_event_is_appended_by_kind_name_or_with_a_hand_built_data_dict() -> None:
    found = [
        f"{p.parent.relative_to(ROOT)}/{w}"
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
        for w in _untyped_appends(p)
    ]
    assert found == [], "append a payload from recorder.store.kinds instead: " + ", ".join(found)


def test_the_check_sees_an_untyped_append(tmp_path: Path) -> None:
    source = tmp_path / "producer.py"
    source.write_text('w.append("train_stop", data={"status": "completed"})\nw.append(TrainStop(status="x"))\n')
    assert len(_untyped_appends(source)) == 1
