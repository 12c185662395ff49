"""Tables on a real terminal (a pseudo-terminal from `script`) fit its width without cutting any id.

At 80 columns `runs`, `evals`, `score` and `check-submission` show every run id (and step, system) whole,
leaving out low-value columns and saying which; at 40 they still show every id whole, as short blocks;
`--wide` gives every column.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from replay.scorekeeping.scores import write_scores
from tests.helpers import on_terminal
from tests.kit.synthetic import record_run

# four ids alike in their first 20 characters: a table that cuts them to `in…` makes them one
IDS = [f"interrupted-resume-check-{n}" for n in ("alpha", "bravo", "charlie", "delta")]

pytestmark = pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux `script`")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("tables") / "runs"
    for run_id in IDS:
        run = record_run(where, run_id, gbs=256, steps=20, evals=[(19, 0.72), (18, 0.70)], closed=True)
        write_scores(run, check=False)
    return where


def _table_lines(text: str) -> list[str]:
    """The lines a table draws (a sentence under it is the terminal's to wrap)."""
    return [x for x in text.splitlines() if any(c in x for c in "┃│┏└─")]


@pytest.mark.parametrize("columns", [80, 40])
def test_runs_shows_every_run_id_whole(root: Path, columns: int) -> None:
    text = on_terminal(columns, "runs", "--root", str(root))
    for run_id in IDS:
        assert run_id in text, text
    assert max((len(x) for x in _table_lines(text)), default=0) <= columns, text
    if columns == 80:
        assert "left out to fit 80 columns:" in text and "19.033" in text


def test_runs_wide_gives_every_column(root: Path) -> None:
    text = on_terminal(80, "runs", "--root", str(root), "--wide")
    for name in ("origin", "benchmark", "division", "scored_as", "source", "events"):
        assert name in text, text


@pytest.mark.parametrize("columns", [80, 40])
def test_evals_and_score_show_ids_whole(root: Path, columns: int) -> None:
    run = root / IDS[2]
    evals = on_terminal(columns, "evals", str(run))
    assert IDS[2] in evals and "0.7200" in evals and "0.7000" in evals, evals
    assert max((len(x) for x in _table_lines(evals)), default=0) <= columns, evals
    score = on_terminal(columns, "score", *(str(root / i) for i in IDS))
    for run_id in IDS:
        assert run_id in score, score


@pytest.mark.parametrize("columns", [80, 40])
def test_check_submission_shows_the_system_and_benchmark_whole(corpus: Path, tmp_path: Path, columns: int) -> None:
    folder = corpus / "mlperf-results/training_results_v5.1/Wiwynn"
    text = on_terminal(columns, "check-submission", str(folder), "--ruleset", "5.1.0", "--root", str(tmp_path / "runs"))
    assert "1xKinabalux18x4GB200" in text and "llama2_70b_lora" in text, text


@pytest.mark.parametrize("columns", [80, 40])
def test_replay_compare_fits_by_leaving_columns_out_and_says_which(root: Path, columns: int) -> None:
    text = on_terminal(columns, "replay", str(root / IDS[0]), "--compare")
    assert max((len(x) for x in _table_lines(text)), default=0) <= columns, text
    assert "earliest-passing" in text and "19.033" in text, text  # an interpretation and its minutes, whole
    if columns == 80:
        assert "stop_s" in text and "checker" in text, text  # every column fits
    else:  # not even the identifying columns fit: each interpretation is a block, every value kept whole
        assert "stop_s: 1142.000" in text and "delta: +0.000" in text, text
    wide = on_terminal(columns, "replay", str(root / IDS[0]), "--compare", "--wide")
    assert "stop_s" in wide and "checker" in wide, wide
