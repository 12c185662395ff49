"""A command module parses its options, calls one library function and prints: no function in `recorder/cli/`
is longer than 60 lines, counted from its `def` (its options included) to its last line."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60


def long_functions(source: str, limit: int = LIMIT) -> list[tuple[str, int]]:
    """(name, lines) of every function in `source`, nested ones too, longer than `limit` lines."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def test_no_cli_function_is_over_60_lines() -> None:
    found = {
        f"{path.relative_to(ROOT)}:{name}": lines
        for path in sorted((ROOT / "recorder" / "cli").rglob("*.py"))
        for name, lines in long_functions(path.read_text())
    }
    assert found == {}


def test_the_length_check_finds_a_long_function() -> None:
    def body(lines: int, indent: str) -> str:
        return "".join(f"{indent}x{i} = {i}\n" for i in range(lines))

    assert long_functions(f"def fits():\n{body(LIMIT - 1, '    ')}") == []
    assert long_functions(f"class C:\n    def long(self):\n{body(LIMIT, '        ')}") == [("long", LIMIT + 1)]
