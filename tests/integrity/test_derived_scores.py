"""`derived/scores.jsonl` edited by hand is caught, never shown as a verified score.

verify re-derives every row (rule derived-scores); `runs` re-derives the score it shows and prints the
events' value, flagged unverified; `query` says its scores are the file as written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.scorekeeping.scores import write_scores
from tests.helpers import run_cli
from tests.kit.synthetic import record_run


@pytest.fixture
def scored(tmp_path: Path) -> Path:
    """A run evaluated 19 (0.72, passes) then 18, with its scores file written by replay: official 19.033 min."""
    run = record_run(tmp_path / "runs", "r1", gbs=256, steps=20, evals=[(19, 0.72), (18, 0.70)], closed=True)
    write_scores(run, check=False)
    return run.path


def _edit_official(run: Path, **changes: object) -> None:
    path = run / "derived" / "scores.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        if row["interpretation"] == "official":
            row.update(changes)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _runs_line(root: Path) -> tuple[str, str]:
    done = run_cli("runs", "--root", str(root))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout + done.stderr
    return next(x for x in done.stdout.splitlines() if " r1 " in x), done.stdout


def test_the_honest_scores_file_verifies_and_is_shown_as_it_is(scored: Path) -> None:
    done = run_cli("verify", str(scored))
    assert done.returncode == 0 and "verify: intact" in done.stdout, done.stdout
    row, out = _runs_line(scored.parent)
    assert "19.033" in row and "unverified" not in row and "UNVERIFIED" not in out


def test_minutes_edited_to_0_001_are_caught_by_verify_and_not_shown_by_runs(scored: Path) -> None:
    _edit_official(scored, minutes=0.001)
    done = run_cli("verify", str(scored))
    assert done.returncode == 1
    assert "ALTERED: derived/scores.jsonl: line 1 (official): minutes 0.001, the events derive 19.03" in done.stdout
    assert "[rule derived-scores]" in done.stdout
    row, out = _runs_line(scored.parent)
    assert "0.001" not in row and "19.033" in row and "unverified" in row
    assert "UNVERIFIED: r1: derived/scores.jsonl: line 1 (official): minutes 0.001" in out


def test_a_consistent_forgery_of_the_whole_row_is_caught(scored: Path) -> None:
    """Passing step, run_stop and minutes forged together, so that they agree with each other."""
    row = next(json.loads(x) for x in (scored / "derived" / "scores.jsonl").read_text().splitlines())
    stop = row["run_start_ns"] + 60_000_000_000
    _edit_official(scored, passing_step=1, run_stop_ns=stop, minutes=1.0)
    done = run_cli("verify", str(scored))
    assert done.returncode == 1 and "passing_step 1, the events derive 19 [rule derived-scores]" in done.stdout


def test_a_scores_file_that_is_not_json_is_named_by_line(scored: Path) -> None:
    path = scored / "derived" / "scores.jsonl"
    path.write_text(path.read_text() + "{not json\n")
    done = run_cli("verify", str(scored))
    assert done.returncode == 1 and "derived/scores.jsonl: line " in done.stdout and "not JSON" in done.stdout


def test_query_says_its_scores_are_the_file_as_written(scored: Path) -> None:
    done = run_cli("query", "--root", str(scored.parent), "SELECT minutes FROM scores WHERE interpretation='official'")
    assert done.returncode == 0 and "not re-derived here" in done.stderr
    plain = run_cli("query", "--root", str(scored.parent), "SELECT count(*) FROM events")
    assert "not re-derived" not in plain.stderr


def test_runs_re_derives_within_the_budget_it_shares_with_the_report(
    scored: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One rule (replay.scorekeeping.scores_check.RecheckBudget): past RECHECK_EVENTS a forged file is shown as written,
    flagged unchecked and said so; within it, as the events derive it. tests/history/test_report.py holds the
    report to the same limit."""
    from typer.testing import CliRunner

    from recorder.cli import app
    from recorder.store.reader import read_run
    from replay.scorekeeping import scores_check

    _edit_official(scored, minutes=0.001)
    events = len(read_run(scored).events)
    shown = {}
    for limit in (events - 1, events):
        monkeypatch.setattr(scores_check, "RECHECK_EVENTS", limit)
        done = CliRunner().invoke(app, ["runs", "--root", str(scored.parent)])
        assert done.exit_code == 0, done.output
        shown[limit] = (next(x for x in done.stdout.splitlines() if " r1 " in x), done.stdout)
    row, out = shown[events - 1]
    assert "0.001" in row and "unchecked" in row and "unverified" not in row
    assert f"a command re-derives at most {events - 1:,} events in all" in out
    row, out = shown[events]
    assert "19.033" in row and "unverified" in row and "unchecked" not in row


def test_the_budget_charges_each_run_it_re_derives_and_skips_one_that_does_not_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from replay.scorekeeping import scores_check

    monkeypatch.setattr(scores_check, "RECHECK_EVENTS", 100)
    budget = scores_check.RecheckBudget()
    assert [budget.take(n) for n in (60, 50, 40, 1)] == [True, False, True, False]
