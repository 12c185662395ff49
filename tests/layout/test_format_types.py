"""A checkpoint format is typed as a row name of the formats table (`recorder.checkpoints.formats.CheckpointFormat`,
a Literal of the table's names), never as a plain string: mypy then refuses a name the table lacks wherever a
format is held."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.layout.test_imports import MODULES

# The zero-shot results.json documents: their `format` is the loading reader's name as the file records it
# (recorder.checkpoints.formats.ReaderName, not yet narrowed there).
NOT_NARROWED_YET = {"recorder.results.zero_shot.format"}


def plain_string_formats(modules: dict[str, Path]) -> list[str]:
    """`module.field` for each annotated field or variable named `format` (or `*_format`) typed with `str`."""
    found = []
    for module, path in sorted(modules.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                name = node.target.id
                words = {w.strip() for w in ast.unparse(node.annotation).replace("|", " ").split()}
                if (name == "format" or name.endswith("_format")) and "str" in words:
                    found.append(f"{module}.{name}")
    return found


def test_a_format_is_typed_by_the_formats_table() -> None:
    assert sorted(set(plain_string_formats(MODULES)) - NOT_NARROWED_YET) == []


def test_a_format_typed_as_a_string_is_found(tmp_path: Path) -> None:
    held = tmp_path / "committed.py"
    held.write_text("class C:\n    format: str | None = None\n    weights_format: CheckpointFormat\n")
    assert plain_string_formats({"evaluator.committed": held}) == ["evaluator.committed.format"]
