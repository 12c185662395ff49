"""One pass target: a run recorded with a target other than the ruleset's (`recorder train --set
eval.target=0.5`) is judged by that target in `recorder eval`, the history and replay alike, and marked not
comparable in each; the 6.1.0 checker still judges its log by 0.69 (docs/design.md section 4)."""

from __future__ import annotations

import json
from pathlib import Path

from recorder.comparability import why_not_comparable
from recorder.rules import TARGET, passes, recorded_target
from recorder.store.kinds import RunOpened
from tests.helpers import run_in_process
from tests.kit.synthetic import record_run


def _csv(root: Path, sql: str) -> list[str]:
    done = run_in_process("query", "--root", str(root), sql, "--format", "csv")
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[1:]


def test_a_checkpoint_between_the_runs_target_and_the_rules_gets_one_answer(tmp_path: Path) -> None:
    # Step 18 scores 0.6: above the run's 0.5, below the ruleset's 0.69. Steps 19 and 20 are not evaluated.
    run = record_run(tmp_path, "t05", gbs=256, steps=20, evals=[(18, 0.6)], target=0.5, closed=True)

    evaluated = run_in_process("eval", str(run.path))  # the evaluator's decision: 18 passed, nothing left to do
    assert evaluated.returncode == 0, evaluated.stderr
    out = " ".join(evaluated.stdout.split())
    assert "first passing checkpoint: step 18 (pass@4 > 0.5)" in out
    assert "NOT COMPARABLE: the run's pass target is 0.5, not the ruleset's 0.69" in out
    table = run_in_process("evals", str(run.path)).stdout
    assert "pass means > 0.5" in table and "NOT COMPARABLE" in table
    assert [line.split()[6] for line in table.splitlines() if line.split()[:1] == ["18"]] == ["yes"]

    replayed = run_in_process("replay", str(run.path), "--check")
    assert replayed.returncode == 1  # the log claims success at 0.6; the 6.1.0 checker reads 0.69
    out = " ".join(replayed.stdout.split())
    assert "not comparable official: success, passing step 18" in out
    assert "compliance checker (mlperf-logging 4.1.68, training 6.1.0): FAILED" in out
    assert "v['value'] > s['target_accuracy']" in out
    rows = [json.loads(line) for line in (run.derived / "scores.jsonl").read_text().splitlines()]
    official = next(r for r in rows if r["interpretation"] == "official")
    assert (official["status"], official["passing_step"]) == ("success", 18)
    assert all(r["target"] == 0.5 and r["comparable"] is False for r in rows)
    assert all(r["why"].startswith("NOT COMPARABLE") for r in rows)

    assert _csv(tmp_path, "SELECT step, value, target, passed FROM evals WHERE key = 'accuracy'") == ["18,0.6,0.5,true"]
    assert _csv(tmp_path, "SELECT passing_step, target, comparable FROM runs") == ["18,0.5,false"]
    assert _csv(tmp_path, "SELECT DISTINCT comparable FROM scores") == ["false"]
    listed = run_in_process("runs", "--root", str(tmp_path)).stdout
    assert "NOT COMPARABLE to MLPerf results: t05 (the run's pass target is 0.5" in " ".join(listed.split())

    scored = run_in_process("score", str(run.path))
    assert scored.returncode == 1 and "t05 (NOT COMPARABLE)" in scored.stdout


def test_the_rulesets_target_leaves_a_run_comparable(tmp_path: Path) -> None:
    run = record_run(tmp_path, "std", gbs=256, steps=20, evals=[(18, 0.6), (19, 0.7)], target=TARGET, closed=True)
    replayed = run_in_process("replay", str(run.path))
    assert replayed.returncode == 0, replayed.stderr
    assert "official: success, passing step 19" in " ".join(replayed.stdout.split())
    assert "NOT COMPARABLE" not in replayed.stdout.upper()
    assert _csv(tmp_path, "SELECT passing_step, target, comparable FROM runs") == ["19,0.69,true"]
    assert "NOT COMPARABLE" not in run_in_process("runs", "--root", str(tmp_path)).stdout


def _opened(**data: object) -> RunOpened:
    base = {"benchmark": None, "ruleset": None, "division": None, "global_batch_size": None}
    return RunOpened.from_recorded(base | {"provenance": {}, "resumed_from": None} | data)


def test_the_recorded_target_and_its_fallbacks() -> None:
    assert recorded_target(_opened(target=0.5, config={"eval": {"target": 0.6}})) == 0.5
    assert recorded_target(_opened(config={"eval": {"target": 0.6}})) == 0.6  # runs recorded before the field
    assert recorded_target(_opened(config={})) is None and recorded_target(None) is None
    assert why_not_comparable(None) is None and why_not_comparable(_opened(target=TARGET, config={})) is None
    assert why_not_comparable(_opened(target=0.5, config={})) == "the run's pass target is 0.5, not the ruleset's 0.69"
    assert passes(0.6, 0.5) and not passes(0.6) and not passes(TARGET) and not passes(None)


def test_a_run_judged_by_the_rulesets_target_but_evaluated_otherwise_says_so_not_that_its_target_judges(
    tmp_path: Path,
) -> None:
    # 64 tasks, not the benchmark's 251, at the ruleset's own target: passing is still judged by 0.69 (the
    # kit's results score 251 tasks, which verify names: --force replays it anyway)
    run = record_run(tmp_path, "t64", gbs=256, steps=20, evals=[(18, 0.7)], target=TARGET, eval_samples=64, closed=True)
    replayed = run_in_process("replay", str(run.path), "--force")
    assert replayed.returncode == 0, replayed.stderr
    out = " ".join(replayed.stdout.split())
    assert "NOT COMPARABLE: its evaluation is not the benchmark's (samples 64, not 251)" in out, out
    assert "its scores pass or fail nothing against the benchmark" in out, out
    assert "own target" not in out, out
