"""recorder/store/upcast.py's docstring names every reader that branches on a field recorded before it existed (a
comment saying "before the field" or "an older import" at the branch), and names no other: the upcast is the
one place old shapes are filled, and the docstring says truthfully where the absence itself is read."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from tests.layout.test_imports import MODULES

UPCAST = "recorder.store.upcast"
_BRANCH = re.compile(r"before the field|an older import")


def branching_readers(modules: dict[str, Path]) -> set[str]:
    """Modules with a comment marking a branch on a field older writers did not record."""
    found = set()
    for module, path in modules.items():
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        if any(t.type == tokenize.COMMENT and _BRANCH.search(t.string) for t in tokens):
            found.add(module)
    return found


def named_in(docstring: str, modules: dict[str, Path]) -> set[str]:
    return {m for m in modules if m != UPCAST and f"`{m}`" in docstring}


def _upcast_docstring() -> str:
    import recorder.store.upcast

    return recorder.store.upcast.__doc__ or ""


def test_the_upcast_docstring_names_each_reader_that_branches_on_an_absent_field() -> None:
    assert branching_readers(MODULES) == named_in(_upcast_docstring(), MODULES)


def test_a_branch_the_docstring_does_not_name_is_found(tmp_path: Path) -> None:
    reader = tmp_path / "reader.py"
    reader.write_text("if sha is None:  # recorded before the field\n    pass\n")
    assert branching_readers({"evaluator.reader": reader}) == {"evaluator.reader"}
    assert named_in("`evaluator.other`", {"evaluator.reader": reader, "evaluator.other": reader}) == {"evaluator.other"}
