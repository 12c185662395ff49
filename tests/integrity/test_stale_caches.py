"""A derived file older than the run's last events is stale, not altered; one that claims them is checked.

`recorder score` before `recorder eval`, then `recorder verify`: the scores file was derived from fewer
events than the run now holds (derived/state.json says from which), so verify notes it and exits 0, and
`recorder runs` shows the run as its events derive it, flagged stale. A scores file edited by hand under a
record that claims the current events is still ALTERED.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recorder.store.run import RunDir
from tests.helpers import run_cli
from tests.kit.synthetic import record_evals, record_run


@pytest.fixture
def scored_then_evaluated(tmp_path: Path) -> Path:
    """Trained to step 20, scored (nothing evaluated yet), then evaluated: 19 (0.72, passes), 18 (0.70)."""
    run = record_run(tmp_path / "runs", "r1", gbs=256, steps=20, closed=True)
    done = run_cli("score", str(run.path))
    assert done.returncode == 1 and "not evaluated yet" in done.stdout, done.stdout + done.stderr
    assert json.loads((run.derived / "scores.jsonl").read_text().splitlines()[0])["status"] == "none"
    record_evals(run, [(19, 0.72), (18, 0.70)], gbs=256, start_s=1500, each_s=60)
    return run.path


def test_a_scores_file_from_before_the_evaluation_is_stale_not_altered(scored_then_evaluated: Path) -> None:
    done = run_cli("verify", str(scored_then_evaluated))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ALTERED" not in done.stdout and "verify: intact" in done.stdout
    assert "derived/scores.jsonl: stale" in done.stderr and "refreshes it" in done.stderr  # a warning: stderr


def test_runs_shows_a_stale_run_as_its_events_derive_it(scored_then_evaluated: Path) -> None:
    done = run_cli("runs", "--root", str(scored_then_evaluated.parent))
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(x for x in done.stdout.splitlines() if " r1 " in x)
    assert "19.033" in row and "stale" in row and "unverified" not in row
    assert "UNVERIFIED" not in done.stdout


def test_replay_refreshes_the_cache_and_a_hand_edit_of_it_is_altered(scored_then_evaluated: Path) -> None:
    run = scored_then_evaluated
    assert run_cli("replay", str(run)).returncode == 0
    done = run_cli("verify", str(run))
    assert done.returncode == 0 and "stale" not in done.stdout + done.stderr, done.stdout + done.stderr
    path = run / "derived" / "scores.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["minutes"] = 0.001
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))  # derived/state.json still claims the events
    done = run_cli("verify", str(run))
    assert done.returncode == 1, done.stdout
    assert "ALTERED: derived/scores.jsonl: line 1 (official): minutes 0.001" in done.stdout
    assert "[rule derived-scores]" in done.stdout


def test_a_record_forged_to_look_stale_hides_nothing(scored_then_evaluated: Path) -> None:
    """Whoever edits the record can make a cache read as stale; then every reader re-derives it."""
    run = scored_then_evaluated
    assert run_cli("replay", str(run)).returncode == 0
    path = run / "derived" / "scores.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["minutes"] = 0.001
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    state_path = run / "derived" / "state.json"
    state = json.loads(state_path.read_text())
    state["derived"]["scores.jsonl"]["events"] = {}
    state_path.write_text(json.dumps(state))
    done = run_cli("runs", "--root", str(run.parent))
    row = next(x for x in done.stdout.splitlines() if " r1 " in x)
    assert "0.001" not in row and "19.033" in row and "stale" in row


def test_verify_keeps_its_verdict_for_the_report(scored_then_evaluated: Path) -> None:
    from recorder.derived_state import verified_unchanged

    run = RunDir(scored_then_evaluated)
    assert verified_unchanged(run) is None
    assert run_cli("verify", str(run.path)).returncode == 0
    assert verified_unchanged(run) == 96  # 87 trainer events and 9 of the evaluator
    record_evals(run, [(20, 0.71)], gbs=256, start_s=1700, each_s=60)
    assert verified_unchanged(run) is None  # a new segment: verified again


def test_a_kept_verdict_is_not_reused_over_bytes_changed_in_place(scored_then_evaluated: Path) -> None:
    """A same-size edit inside a segment keeps every size verify recorded: the bytes are compared too, so the
    report verifies again (and finds it) instead of showing the kept verdict as proven."""
    from recorder.derived_state import verified_unchanged

    run = RunDir(scored_then_evaluated)
    assert run_cli("verify", str(run.path)).returncode == 0 and verified_unchanged(run) == 96
    segment = sorted(run.events.glob("*.arrows"))[0]
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0x01
    segment.write_bytes(bytes(data))
    assert verified_unchanged(run) is None
    assert run_cli("verify", str(run.path)).returncode != 0  # what the report's own verify then says


@pytest.mark.slow  # a real training run (minutes on a loaded 2-core machine) and a real evaluation
def test_train_score_eval_verify_is_intact(trained_run: Path, tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "runs" / "trained"
    shutil.copytree(trained_run, run)
    scored = run_cli("score", str(run))
    assert scored.returncode in (0, 1) and "Traceback" not in scored.stderr, scored.stderr  # 1: not evaluated yet
    evaluated = run_cli("eval", str(run))
    assert evaluated.returncode in (0, 1) and "Traceback" not in evaluated.stderr, evaluated.stderr
    done = run_cli("verify", str(run))
    assert done.returncode == 0 and "verify: intact" in done.stdout and "ALTERED" not in done.stdout, done.stdout
    assert "derived/scores.jsonl: stale" in done.stderr
    listed = run_cli("runs", "--root", str(run.parent))
    assert listed.returncode == 0 and "UNVERIFIED" not in listed.stdout, listed.stdout
