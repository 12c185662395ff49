"""What a checkpoint format is lives in its row: no product module outside the tables compares a format's,
a reader's or a layout's name to a string literal (`==`, `!=`, `in`, `not in`, or a `match` case). Code that
differs per format asks the row (`recorded_format(name).files`, `reader(info.format).left_out`, an importer
row's `claims`), so a new format is rows, never a new branch somewhere else."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from recorder.adapters.dcp import Layout
from recorder.checkpoints.formats import CheckpointFormat, ReaderName
from tests.layout.test_imports import MODULES
from trainer.config import WRITE_FORMATS

# The tables themselves: the recorded formats, the readers, the importers of series.
TABLES = {
    "recorder.checkpoints.formats",
    "recorder.checkpoints.readers",
    "recorder.adapters.series_importers",
}
# Every name a format goes by: recorded, read, laid out on disk, or written by the trainer.
NAMES = frozenset(get_args(CheckpointFormat)) | set(get_args(ReaderName)) | set(get_args(Layout)) | set(WRITE_FORMATS)
# The same words meaning something else, module by module.
NOT_A_FORMAT = {("recorder.interrupts", "recorder")}  # the program's name, as the shell ran it


def _literals(node: ast.expr) -> list[str]:
    """The string constants `node` is, or holds as a tuple, list or set (`x in ("a", "b")`)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _literals(e)]
    return []


def _compared(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, string) for each string literal a comparison or a `match` case tests a value against."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += [(node.lineno, s) for s in _literals(side)]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, s) for s in _literals(node.value)]
    return sorted(found)


def format_comparisons(modules: dict[str, Path], names: frozenset[str] | set[str] = NAMES) -> list[str]:
    """`module:line: 'name'` for each comparison of a format name to a literal outside the tables."""
    found = []
    for module, path in sorted(modules.items()):
        if module in TABLES:
            continue
        for line, s in _compared(ast.parse(path.read_text(encoding="utf-8"))):
            if s in names and (module, s) not in NOT_A_FORMAT:
                found.append(f"{module}:{line}: {s!r}")
    return found


def test_no_module_outside_the_tables_compares_a_format_name() -> None:
    assert format_comparisons(MODULES) == []


def test_the_names_are_the_tables_own() -> None:
    assert {"torch-dcp", "nemo-rl-mcore", "dcp-archive", "mcore-torch-dist", "hf-safetensors", "dcp"} <= NAMES


def test_a_comparison_and_a_match_case_are_found(tmp_path: Path) -> None:
    held = tmp_path / "load.py"
    held.write_text(
        "def f(info, layout):\n"
        "    if info.format == 'torch-dcp':\n"
        "        return 1\n"
        "    if layout in ('dcp-archive', 'other'):\n"
        "        return 2\n"
        "    match info.format:\n"
        "        case 'mcore-torch-dist':\n"
        "            return 3\n"
        "    return info.format != 'fine' or reader(info.format).sharded\n"
    )
    assert format_comparisons({"recorder.checkpoints.load": held}) == [
        "recorder.checkpoints.load:2: 'torch-dcp'",
        "recorder.checkpoints.load:4: 'dcp-archive'",
        "recorder.checkpoints.load:7: 'mcore-torch-dist'",
    ]
    assert format_comparisons({"recorder.checkpoints.readers": held}) == []  # a table may
