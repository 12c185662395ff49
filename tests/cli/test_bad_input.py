"""Every command, given a bad -o, ruleset, run id or path, exits 2 with exactly one
`error:` line, no traceback, and leaves every file as it was (the runs' hashes and the current folder)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.shell import make_root, run_main, tree_hashes

LONG_ID = "r" * 300


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_root(tmp_path_factory.mktemp("badinput"))


@pytest.fixture()
def cwd(tmp_path: Path) -> Iterator[Path]:
    """A clean current folder: a command must not leave anything in it."""
    here = Path.cwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(here)


# {root}: the runs; {run}: the evaluated worked example; {cwd}: the current folder; {log}: a real mllog.
CASES: list[tuple[str, list[str], str]] = [
    # bad -o: a directory, a missing parent, a place under /proc, an extension the writer cannot produce
    ("replay -o dir", ["replay", "{run}", "-o", "{cwd}"], "is a directory"),
    ("replay -o missing parent", ["replay", "{run}", "-o", "{cwd}/nonexist/x.txt"], "does not exist"),
    ("replay -o /proc", ["replay", "{run}", "-o", "/proc/nope/x.txt"], "does not exist"),
    ("query -o dir", ["query", "--root", "{root}", "SELECT 1", "-o", "{cwd}"], "is a directory"),
    ("query -o missing parent", ["query", "--root", "{root}", "SELECT 1", "-o", "/nonexist/x.csv"], "does not exist"),
    ("plot -o txt", ["plot", "{run}", "-o", "{cwd}/x.txt"], "'.txt' is not supported"),
    ("plot -o dir", ["plot", "{run}", "-o", "{cwd}"], "is a directory"),
    ("plot --root -o missing", ["plot", "--root", "{root}", "-o", "/nonexist/x.png"], "does not exist"),
    ("report -o dir", ["report", "{run}", "-o", "{cwd}"], "is a directory"),
    ("report -o txt", ["report", "{run}", "-o", "{cwd}/r.txt"], "'.txt' is not supported"),
    # bad ruleset or interpretation: refused before anything is read or written
    ("replay --ruleset", ["replay", "{run}", "--ruleset", "9.9.9"], "unknown ruleset"),
    ("score --ruleset", ["score", "{run}", "--ruleset", "9.9.9"], "unknown ruleset"),
    ("import --ruleset", ["import", "{log}", "--root", "{root}", "--ruleset", "9.9.9"], "unknown ruleset"),
    ("replay -i", ["replay", "{run}", "-i", "nope"], "unknown interpretation"),
    ("replay -i as-recorded on a recorded run", ["replay", "{run}", "-i", "as-recorded"], "as-recorded replays"),
    # bad run ids: one rule everywhere
    ("train --run-id space", ["train", "--root", "{root}", "--run-id", "a b"], "invalid run id"),
    ("train --run-id newline", ["train", "--root", "{root}", "--run-id", "a\nb"], "invalid run id"),
    ("import --run-id $(id)", ["import", "{log}", "--root", "{root}", "--run-id", "$(id)"], "invalid run id"),
    ("import --run-id 300 chars", ["import", "{log}", "--root", "{root}", "--run-id", LONG_ID], "invalid run id"),
    # bad paths
    ("verify missing", ["verify", "{root}/nope"], "no such run directory"),
    ("events missing", ["events", "{root}/nope"], "no such run directory"),
    ("replay missing", ["replay", "{root}/nope"], "no such run directory"),
    ("score missing", ["score", "{root}/nope"], "no such run directory"),
    ("evals missing", ["evals", "{root}/nope"], "no such run directory"),
    ("plot missing", ["plot", "{root}/nope", "-o", "{cwd}/x.png"], "no such run directory"),
    ("runs missing root", ["runs", "--root", "{root}/nope"], "no such root directory"),
    ("query missing root", ["query", "--root", "{root}/nope", "SELECT 1"], "no such root directory"),
    ("compact missing root", ["compact", "--root", "{root}/nope"], "no such root directory"),
    ("compact --root a run", ["compact", "--root", "{run}"], "is a run directory"),
    ("rm missing run", ["rm", "{root}/nope"], "no such run directory"),
    ("rm the root", ["rm", "{root}"], "not a run directory"),
    ("import missing file", ["import", "{cwd}/nope.out", "--root", "{root}"], "nope.out"),
    ("verify a file", ["verify", "{log}"], "not a directory"),
    ("collect missing", ["collect", "{root}/nope"], "nope: no such directory"),
    ("collect a file", ["collect", "{log}"], "not a directory"),
]


@pytest.mark.parametrize(("args", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_one_error_line_and_changes_nothing(
    root: Path, cwd: Path, corpus: Path, args: list[str], needle: str
) -> None:
    log = corpus / "qwen35_397b_grpo_rcp/GBS256/seed_1.out"
    values = {"root": str(root), "run": str(root / "worked"), "cwd": str(cwd), "log": str(log)}
    argv = [a.format(**values) if "{" in a and "$(" not in a else a for a in args]
    before = tree_hashes(root, cwd)
    r = run_main(*argv)
    assert r.code == 2, (r.code, r.out, r.err)
    errors = [line for line in r.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.err
    assert needle in errors[0], r.err
    assert "Traceback" not in r.out + r.err
    assert tree_hashes(root, cwd) == before


def test_unwritable_output_is_refused_before_work(root: Path, cwd: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write anywhere: permissions cannot refuse it")
    locked = cwd / "locked"
    locked.mkdir(mode=0o500)
    before = tree_hashes(root, cwd)
    r = run_main("replay", str(root / "worked"), "-o", str(locked / "x.txt"))
    assert r.code == 2 and "permission denied" in r.err
    assert tree_hashes(root, cwd) == before
