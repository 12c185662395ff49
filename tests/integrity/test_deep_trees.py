"""Every walk of a tree the recorder did not write is iterative and bounded in depth: a tree nested past
Python's recursion limit is refused naming its folder, never a RecursionError (tests/integrity/
test_hostile_inputs.py holds the commands; these hold each walk on its own)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recorder.store.run_files import tree_digest
from recorder.untrusted.tree_walk import MAX_DEPTH, TreeWalkError, files_under, walk
from recorder.untrusted.untrusted_files import first_irregular
from replay.checkers.package_check import HostileSubmissionError, copy_submission
from tests.kit.hostile_inputs import DEEP, _nest, remove_tree


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[Path]:
    top = tmp_path / "tree"
    top.mkdir()
    (top / "a.txt").write_text("a")
    (_nest(top, DEEP) / "b.txt").write_text("b")
    yield top
    remove_tree(top)  # pytest's own clean-up recurses per folder


def _deepest_allowed(top: Path) -> Path:
    return top.joinpath(*["d"] * (MAX_DEPTH + 1))


def test_walk_refuses_the_first_folder_past_the_bound_by_name(deep: Path) -> None:
    with pytest.raises(TreeWalkError, match=f"folders nested more than {MAX_DEPTH} deep") as e:
        list(walk(deep))
    assert str(e.value).startswith(f"{_deepest_allowed(deep)}: ")


def test_walk_finds_every_file_of_a_tree_within_the_bound(tmp_path: Path) -> None:
    (_nest(tmp_path, MAX_DEPTH) / "deepest.txt").write_text("x")
    (tmp_path / "top.txt").write_text("y")
    assert sorted(p.name for p in files_under(tmp_path)) == ["deepest.txt", "top.txt"]


def test_a_tree_digest_refuses_a_deep_tree(deep: Path) -> None:
    with pytest.raises(TreeWalkError, match=str(_deepest_allowed(deep))):
        tree_digest(deep)


def test_the_irregular_file_check_names_a_deep_tree(deep: Path) -> None:
    why = first_irregular(deep)
    assert why is not None and why.startswith(f"{_deepest_allowed(deep)}: folders nested more than")


def test_a_submission_copy_refuses_a_deep_tree(deep: Path, tmp_path: Path) -> None:
    with pytest.raises(HostileSubmissionError) as e:
        copy_submission(deep, tmp_path / "copy")
    assert f"{_deepest_allowed(deep)}: folders nested more than {MAX_DEPTH} deep: not copied" in str(e.value)
    assert (tmp_path / "copy" / "a.txt").read_text() == "a"
