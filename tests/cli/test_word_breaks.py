"""No line any command prints breaks inside a word on an 80-column terminal (a pseudo-terminal from
`script`): prose wraps at spaces, tables fit (`query` leaves columns out as `runs` does, and names them).

What `script` records holds the line breaks the program wrote, not the terminal's own wrapping: a line
longer than the terminal is one the terminal would break wherever its width falls, so it counts as broken
unless it is a single word too long for any line (a path). Lines the program wraps itself (rich) break at
spaces."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from recorder.cli.terminal.output import fill_at_spaces
from replay.scorekeeping.scores import write_scores
from tests.helpers import on_terminal
from tests.kit.synthetic import record_run

COLUMNS = 80
pytestmark = pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux `script`")


def broken_words(text: str, columns: int) -> list[str]:
    """The lines of `text` (as drawn on a terminal `columns` wide) that break a word."""
    return [f"longer than {columns}: {x!r}" for x in text.splitlines() if len(x) > columns and len(x.split()) > 1]


def test_the_check_finds_a_line_the_terminal_would_break() -> None:
    assert broken_words("word " * 20, 80)  # 100 characters: the terminal would cut a word
    assert broken_words("/a/path/" + "p" * 100, 80) == []  # one word longer than any line: nothing to do
    assert broken_words("a short line\nand another", 80) == []


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("words") / "runs"
    for run_id in ("demo", "interrupted-resume-check-bravo"):
        run = record_run(where, run_id, gbs=256, steps=20, evals=[(19, 0.72), (18, 0.70)], closed=True)
        write_scores(run, check=False)
    return where


@pytest.mark.parametrize(
    "args",
    [
        ["query", "--root", "{root}", "SELECT * FROM runs"],
        ["query", "--root", "{root}", "SELECT * FROM evals"],
        ["runs", "--root", "{root}"],
        ["evals", "{root}/demo"],
        ["verify", "{root}/demo"],
        ["replay", "{root}/demo", "--compare"],
        ["replay", "{root}/demo", "--check"],
        ["score", "{root}/demo"],
        ["events", "{root}/demo", "--kind", "eval_result"],
        ["collect", "{root}/nope"],
    ],
    ids=lambda a: " ".join(a[:2]).replace("{root}/", ""),
)
def test_no_line_breaks_inside_a_word_at_80_columns(root: Path, args: list[str]) -> None:
    text = on_terminal(COLUMNS, *(a.format(root=root) for a in args))
    assert broken_words(text, COLUMNS) == [], text


def test_query_shows_every_cell_whole_and_names_what_it_left_out(root: Path) -> None:
    text = on_terminal(COLUMNS, "query", "--root", str(root), "SELECT * FROM runs")
    assert "interrupted-resume-check-bravo" in text and "demo" in text, text
    prose = " ".join(text.split())  # the sentence under the table wraps at spaces
    assert "left out to fit 80 columns:" in prose and "train_status" in prose, text
    assert "(--wide shows every column)" in prose, text
    assert "…" not in text, text
    wide = on_terminal(COLUMNS, "query", "--root", str(root), "SELECT * FROM runs", "--wide")
    assert "left out" not in wide and "train_status" in wide, wide


def test_import_prints_above_its_bar_and_breaks_no_word(corpus: Path, tmp_path: Path) -> None:
    log = corpus / "qwen35_397b_grpo_rcp" / "GBS512" / "seed_1.out"
    text = on_terminal(COLUMNS, "import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "seed1")
    assert broken_words(text, COLUMNS) == [], text
    assert "72 mllog lines" in " ".join(text.split()), text


@pytest.mark.parametrize("command", ["", "eval", "zero-shot", "replay", "import-checkpoints", "query"])
def test_help_pages_break_no_word(command: str) -> None:
    text = on_terminal(COLUMNS, *([command] if command else []), "--help")
    assert broken_words(text, COLUMNS) == [], text


def test_events_leaves_out_whole_columns_and_says_which(root: Path) -> None:
    text = on_terminal(COLUMNS, "events", str(root / "demo"), "--kind", "eval_result")
    prose = " ".join(text.split())
    assert "left out to fit 80 columns:" in prose and "(--wide shows every column)" in prose, text
    header = next(x for x in text.splitlines() if "seq" in x and "kind" in x)
    assert "││" not in header and "┃┃" not in header, text  # no column squeezed to nothing
    assert "eval_result" in text and "accuracy" in text, text


def test_a_path_or_a_command_with_spaces_goes_whole_on_a_line_of_its_own() -> None:
    run = "/home/a user/recorder runs/" + "interrupted-resume-check-bravo-" * 2 + "seed1"
    said = fill_at_spaces(f"run: {run}\nnext: recorder eval {run}", 80, [run, f"recorder eval {run}"])
    assert said.splitlines() == ["run:", run, "next:", f"recorder eval {run}"]
    assert fill_at_spaces(f"wrote {run}", 80).splitlines()[1] != run  # unmarked, it breaks at the path's spaces
    assert fill_at_spaces("run: /a b/c", 80, ["/a b/c"]) == "run: /a b/c"  # where it fits, one line
