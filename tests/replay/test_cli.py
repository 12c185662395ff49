"""`recorder replay` / `--compare` / `--check`, scores.jsonl, and replay's import boundary (no torch)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from recorder.store.reader import read_run
from replay.derive import derive_run
from replay.interpretations import INTERPRETATIONS
from replay.scorekeeping.scores import write_scores
from tests.helpers import run_in_process
from tests.replay.runs import CASES, record_run

CONTRACT = [
    "run_id",
    "ruleset",
    "interpretation",
    "status",
    "passing_step",
    "run_start_ns",
    "run_stop_ns",
    "minutes",
    "checker",
    "mlperf_logging_version",
]


def test_replay_writes_the_derived_log_and_scores(tmp_path: Path) -> None:
    run = record_run(tmp_path, "cli", **CASES["arbitrary_order"])  # type: ignore[arg-type]
    result = run_in_process("replay", str(run.path), "--ruleset", "6.1.0")
    assert result.returncode == 0, result.stderr
    assert "official: success, passing step 5, 5.033 minutes" in " ".join(result.stdout.split())
    written = (run.derived / "result_official.txt").read_text()
    assert written == derive_run(read_run(run).events, "6.1.0", "official").text()
    rows = [json.loads(line) for line in (run.derived / "scores.jsonl").read_text().splitlines()]
    assert [r["interpretation"] for r in rows] == list(INTERPRETATIONS)
    for row in rows:
        assert list(row)[: len(CONTRACT)] == CONTRACT
    by = {r["interpretation"]: r for r in rows}
    assert by["official"]["passing_step"] == 5 and by["checker-order"]["passing_step"] == 4
    assert by["as-recorded"]["status"] == "none" and by["as-recorded"]["minutes"] is None
    assert all(r["checker"] is None for r in rows)  # the checker runs when a verdict is asked for: --check


def test_replay_check_keeps_the_verdict_it_asked_for(tmp_path: Path) -> None:
    run = record_run(tmp_path, "cli", **CASES["arbitrary_order"])  # type: ignore[arg-type]
    result = run_in_process("replay", str(run.path), "--ruleset", "6.1.0", "--check")
    assert result.returncode == 1, result.stdout + result.stderr  # the checker fails this short run
    rows = [json.loads(line) for line in (run.derived / "scores.jsonl").read_text().splitlines()]
    by = {r["interpretation"]: r for r in rows}
    assert by["official"]["checker"].startswith("compliance checker (mlperf-logging 4.1.68, training 6.1.0): FAILED")
    assert all(r["checker"] is None for r in rows if r["interpretation"] != "official")


def test_compare_table(tmp_path: Path) -> None:
    run = record_run(tmp_path, "cmp", **CASES["arbitrary_order"])  # type: ignore[arg-type]
    result = run_in_process("replay", str(run.path), "--compare")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for name in INTERPRETATIONS:
        assert name in out
    assert "-1.033" in out  # earliest-passing and checker-order: 4.000 vs official 5.033
    assert "+0.500" in out  # include-final-save: 5.533


def test_check_runs_both_checkers(tmp_path: Path) -> None:
    good = record_run(tmp_path, "good", gbs=256, steps=20, closed=True, evals=[(18, 0.72)], eval_start_s=1300)
    result = run_in_process("replay", str(good.path), "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    flat = " ".join(result.stdout.split())
    assert "compliance checker (mlperf-logging 4.1.68, training 6.1.0): PASSED" in flat
    assert "RCP checker (mlperf-logging 4.1.68, training 6.1.0): PASSED: RCP found" in flat
    skip = record_run(tmp_path, "skip", gbs=256, steps=20, closed=True, evals=[(19, 0.72)], eval_start_s=1300)
    result = run_in_process("replay", str(skip.path), "--check")
    assert result.returncode == 1
    assert "next_validation_samples" in result.stdout


def test_write_scores_is_atomic_and_complete(tmp_path: Path) -> None:
    run = record_run(tmp_path, "ws", **CASES["later_pass"])  # type: ignore[arg-type]
    path = write_scores(run.path)
    assert path == run.derived / "scores.jsonl"
    assert sorted(p.name for p in run.derived.iterdir()) == ["evals", "scores.jsonl", "state.json"]
    assert len(path.read_text().splitlines()) == len(INTERPRETATIONS)


def test_replay_never_imports_torch() -> None:
    code = (
        "import sys, recorder.cli.replay, replay.derive, recorder.adapters.mllog_import, replay.checkers.check, replay.scorekeeping.scores, replay.scorekeeping.olympic;"
        "import replay.checkers.check as c; c.mlperf_logging_version();"
        "sys.exit(1 if 'torch' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[2]).returncode == 0
