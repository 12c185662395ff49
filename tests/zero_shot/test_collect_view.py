"""`recorder collect` as a team's collect.py: the newest result of each checkpoint by default, `--all` for
every one; a `--limit` result is a smoke test, never in the default table, and marked as one with `--all`.
The documents are written by the command's own writer (`write_outputs`) for a checkpoint of real files."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evaluator.zero_shot.reporting.outputs import write_outputs
from tests.helpers import run_cli
from tests.zero_shot.test_bound_results import _document


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """One checkpoint scored three times (0.25, then 0.5 the newest, then a smoke test of 2 examples at
    0.75, newer still) and another checkpoint once."""
    checkpoint = tmp_path / "fsdp2_epoch_2"
    checkpoint.mkdir()
    for rank in (0, 1):
        (checkpoint / f"__{rank}_0.distcp").write_bytes(bytes([rank]) * 64)
    out = tmp_path / "out"
    older = _document(checkpoint, 0.25, "2026-01-01T00:00:00+00:00")
    newest = _document(checkpoint, 0.5, "2026-01-02T00:00:00+00:00")
    smoke = _document(checkpoint, 0.75, "2026-01-03T00:00:00+00:00")
    smoke = dataclasses.replace(smoke, settings=dataclasses.replace(smoke.settings, limit=2))
    other = dataclasses.replace(_document(checkpoint, 0.125, "2026-01-01T00:00:00+00:00"), label="tiny/run2/epoch_2")
    for i, doc in enumerate([newest, older, smoke, other]):  # the newest is not the last one written
        write_outputs(out / f"r{i}", doc, "", "")
    return out


def _rows(stdout: str) -> list[tuple[str, str]]:
    return [(line.split()[0], line.split()[2]) for line in stdout.splitlines() if line.startswith("tiny/")]


def test_the_newest_result_of_each_checkpoint_and_no_smoke_test(results: Path) -> None:
    done = run_cli("collect", str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    assert _rows(done.stdout) == [("tiny/run1/epoch_2", "0.5000"), ("tiny/run2/epoch_2", "0.1250")]
    assert "smoke test" not in done.stdout.split("left out")[0]
    assert "left out 1 older result(s) of the same checkpoints and 1 smoke test(s) (--limit): --all shows them" in (
        done.stdout
    )


def test_all_shows_every_result_and_marks_the_smoke_test(results: Path) -> None:
    done = run_cli("collect", str(results), "--all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(_rows(done.stdout)) == [
        ("tiny/run1/epoch_2", "0.2500"),
        ("tiny/run1/epoch_2", "0.5000"),
        ("tiny/run1/epoch_2", "0.7500"),
        ("tiny/run2/epoch_2", "0.1250"),
    ]
    [smoke] = [line for line in done.stdout.splitlines() if " 0.7500 " in line]
    assert smoke.endswith("smoke test, test data, unsigned")  # no --trust: no author checked
    assert all(
        "smoke test" not in line for line in done.stdout.splitlines() if line.startswith("tiny/") and line != smoke
    )


def test_only_smoke_tests_show_nothing_by_default_and_say_so(results: Path) -> None:
    for path in results.glob("r[013]"):
        for f in path.iterdir():
            f.unlink()
        path.rmdir()
    done = run_cli("collect", str(results))
    assert done.returncode == 1 and not _rows(done.stdout), done.stdout
    assert "left out 1 smoke test(s) (--limit): --all shows them" in done.stdout
