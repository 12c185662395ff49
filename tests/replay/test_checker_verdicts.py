"""The compliance checker's verdict is kept where it was earned: after `replay --check`, the `--compare` that
follows (as .ci/demo runs them) and the report show it; a reading the checker did not judge says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import run_in_process
from tests.kit.synthetic import record_run


@pytest.fixture()
def checked(tmp_path: Path) -> Path:
    run = record_run(
        tmp_path, "demo", gbs=256, steps=20, evals=[(18, 0.72), (19, 0.75)], closed=True, evaluator_segments=2
    ).path
    (run / "events" / "evaluator-0002.arrows").rename(tmp_path / "evaluator-0002.arrows")  # evaluated later
    done = run_in_process("replay", str(run), "--ruleset", "6.1.0", "--check")
    assert done.returncode == 0 and "compliance checker" in done.stdout and ": PASSED" in done.stdout, done.stdout
    return run


def _cells(stdout: str, interpretation: str) -> list[str]:
    (row,) = [x for x in stdout.splitlines() if re.match(rf"│ {interpretation} ", x)]
    return [c.strip() for c in row.strip("│").split("│")]


def test_compare_after_check_keeps_the_official_verdict_and_says_why_the_rest_are_empty(checked: Path) -> None:
    done = run_in_process("replay", str(checked), "--ruleset", "6.1.0", "--compare")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _cells(done.stdout, "official")[-1] == "PASSED"
    assert _cells(done.stdout, "inline-eval")[-1] == "-"
    assert "(-: not run on that reading; add --check to run it on every row)" in done.stdout


def test_compare_with_check_judges_every_row_and_needs_no_legend_for_dashes(checked: Path) -> None:
    done = run_in_process("replay", str(checked), "--ruleset", "6.1.0", "--compare", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _cells(done.stdout, "inline-eval")[-1] == "PASSED" and "not run on that reading" not in done.stdout


def test_the_report_shows_the_verdict_replay_check_recorded(checked: Path, tmp_path: Path) -> None:
    assert run_in_process("replay", str(checked), "--ruleset", "6.1.0", "--compare").returncode == 0
    page = tmp_path / "demo.html"
    done = run_in_process("report", str(checked), "-o", str(page))
    assert done.returncode == 0, done.stdout + done.stderr
    html = page.read_text(encoding="utf-8")
    assert re.search(r"<b>compliance checker[^<]*</b><span class=\"PASSED\">PASSED</span>", html), re.findall(
        r"<b>compliance checker[^<]*</b><span[^>]*>[^<]*", html
    )


def test_a_verdict_is_not_carried_to_other_events(checked: Path) -> None:
    """A later evaluation changes the events: the old verdict is not shown for what they now derive."""
    (checked.parent / "evaluator-0002.arrows").rename(checked / "events" / "evaluator-0002.arrows")
    done = run_in_process("replay", str(checked), "--ruleset", "6.1.0", "--compare")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _cells(done.stdout, "official")[-1].startswith("-"), done.stdout
