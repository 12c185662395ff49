"""`recorder report`: each kind of run says what happened, in words, at the top; a set of runs carries
mlperf-logging's olympic score; the page is one file that names nothing outside itself."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from recorder.report.page import build_report
from recorder.verify import verify_run
from tests.helpers import run_in_process
from tests.history import report_runs

RCP = "qwen35_397b_grpo_rcp/GBS512"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report")
    for build in (report_runs.converged, report_runs.failed, report_runs.aborted, report_runs.resumed):
        build(root)
    return root


def top(page: str) -> str:
    """The words before the first table or chart: what a reviewer reads first."""
    story = re.search(r'<div class="story[^"]*">(.*?)</div>', page, re.S)
    assert story is not None and page.index(story.group(0)) < page.index('class="chart')
    return html.unescape(re.sub(r"<[^>]+>", "", story.group(1).replace("</p>", " ")))


def report(run: Path, out: Path) -> str:
    build_report([run], out)
    return out.read_text()


@pytest.mark.parametrize(
    ("run_id", "said"),
    [
        (
            "converged",
            [
                "Converged (official): step 19's checkpoint passes",
                "run_stop at 19.033 minutes",
                "3 checkpoint(s) evaluated (steps 19, 18, 20); the best scored 0.7200 at step 19",
            ],
        ),
        (
            "failed",
            [
                "Did not converge (official): no evaluated checkpoint passes the target (> 0.69)",
                "status aborted at 20.067 minutes",
                "the best scored 0.6800 at step 20",
            ],
        ),
        (
            "aborted",
            [
                "Training was interrupted at step 7 (interrupted by the user (SIGINT)); no checkpoint saved",
                "No checkpoint has been evaluated",
            ],
        ),
        (
            "resumed",
            [
                "RESUMED: trainer-0002.arrows resumed training after step 18 from checkpoints/step_0000018",
                "not a valid timed MLPerf run",
                "Converged (official)",
            ],
        ),
    ],
)
def test_the_top_of_the_page_says_what_happened(root: Path, tmp_path: Path, run_id: str, said: list[str]) -> None:
    words = top(report(root / run_id, tmp_path / "r.html"))
    for sentence in said:
        assert sentence in words, words


def test_a_run_judged_by_another_target_is_marked_not_comparable(tmp_path: Path) -> None:
    run = report_runs.aborted(tmp_path, "easy", target=0.6)
    page = report(run.path, tmp_path / "r.html")
    assert "NOT COMPARABLE: judged by pass target 0.6, not the ruleset's 0.69" in top(page)
    assert '<span class="badge warn">NOT COMPARABLE</span>' in page


def test_a_run_evaluated_otherwise_than_the_benchmark_is_marked_not_comparable(tmp_path: Path) -> None:
    from tests.kit.synthetic import record_run

    run = record_run(tmp_path, "few", gbs=256, steps=20, evals=[], target=0.69, eval_samples=64)
    assert verify_run(run.path).ok  # an honest run that does not claim the benchmark
    page = report(run.path, tmp_path / "r.html")
    assert "NOT COMPARABLE: its evaluation is not the benchmark's (samples 64, not 251)" in top(page)
    assert '<span class="badge warn">NOT COMPARABLE</span>' in page


def test_an_imported_reference_log_says_where_it_came_from(corpus: Path, tmp_path: Path) -> None:
    log = corpus / RCP / "seed_1.out"
    assert run_in_process("import", str(log), "--root", str(tmp_path), "--run-id", "seed1").returncode == 0
    page = report(tmp_path / "seed1", tmp_path / "r.html")
    words = top(page)
    assert f"Imported from {log}" in words and "(as-recorded)" in words, words
    assert "IMPORTED" in page and "qwen35_397b_grpo, closed, GBS 512" in page


def test_several_runs_carry_the_score_recorder_score_gives(corpus: Path, tmp_path: Path) -> None:
    logs = [str(corpus / RCP / f"seed_{i}.out") for i in (1, 2, 3)]
    assert run_in_process("import", *logs, "--root", str(tmp_path)).returncode == 0
    runs = sorted(str(p) for p in tmp_path.iterdir() if (p / "events").is_dir())
    out = tmp_path / "set.html"
    r = run_in_process("report", *runs, "-o", str(out))
    assert r.returncode == 0, r.stderr
    score = run_in_process("score", *runs)  # the same set through `recorder score`
    said = re.search(r"_compute_strong_score_standalone\): (\S+) minutes = (\S+) minutes over 3 runs", score.stdout)
    assert said is not None, score.stdout
    page = html.unescape(out.read_text())
    assert f"score: {said.group(2)} minutes</b> (olympic average {said.group(1)} minutes" in page
    reasons = [line.strip() for line in score.stdout.splitlines() if line.startswith("  ") and "dropped" in line]
    assert reasons and all(reason in page for reason in reasons)  # why the set is (not) scored, word for word
    assert page.count('<section id="run-') == 3 and 'id="accuracy-all"' in page and 'id="reward-all"' in page


def test_a_compacted_run_is_not_reverified_and_says_so(tmp_path: Path) -> None:
    from recorder.history.compact import compact_run

    run = report_runs.converged(tmp_path)
    compact_run(run)
    page = html.unescape(report(run.path, tmp_path / "r.html"))
    assert "intact (at compaction)" in page and "verified by `recorder compact`" in page
    assert "Converged (official): step 19's checkpoint passes" in top(page)
    segment = next(run.events.iterdir())  # a segment that changed since: the report verifies it again
    segment.write_bytes(segment.read_bytes() + b"\0")
    page = html.unescape(report(run.path, tmp_path / "r2.html"))
    assert "UNVERIFIED" in top(page) and "intact (at compaction)" not in page


def test_the_page_names_nothing_outside_itself(root: Path, tmp_path: Path) -> None:
    page = report(root / "converged", tmp_path / "r.html")
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", page)
    assert "default-src 'none'" in page  # the browser itself refuses any load the page might attempt


def test_a_missing_run_is_a_one_line_error(tmp_path: Path) -> None:
    r = run_in_process("report", str(tmp_path / "nope"), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 2 and r.stderr.startswith("error:") and "Traceback" not in r.stderr
    assert not (tmp_path / "r.html").exists()


def test_the_timeline_opens_on_the_scored_region(root: Path, tmp_path: Path) -> None:
    """From the first save (18 min) to the latest run_stop (include-final-save, 19.533 min), as `recorder plot`
    zooms; the evaluations after it (21.667 to 24.667 min) are under "whole run"."""
    page = report(root / "converged", tmp_path / "r.html")
    data = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert data is not None
    layout = json.loads(data.group(1))["charts"]["timeline-0"]["layout"]
    lo, hi = layout["xaxis"]["range"]
    assert 17.8 < lo < 18 and 19.533 < hi < 19.7
    whole = next(b for b in layout["updatemenus"][0]["buttons"] if b["label"] == "whole run")
    assert whole["args"][0]["xaxis.range"][1] > 24.667


def test_a_large_compacted_run_shows_its_scores_file_and_says_it_was_not_rederived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recorder.history.compact import compact_run
    from replay.scorekeeping import scores_check

    run = report_runs.converged(tmp_path)
    compact_run(run)
    report(run.path, tmp_path / "r.html")  # writes derived/scores.jsonl
    monkeypatch.setattr(scores_check, "RECHECK_EVENTS", 10)  # as if the run were a million events
    page = html.unescape(report(run.path, tmp_path / "r2.html"))
    assert page.count("not re-derived from the run's") == 1 and "`recorder verify` re-derives every row" in page
    assert "(a command re-derives at most 10 events in all)" in page
