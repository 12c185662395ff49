"""Forgeries with a recomputed digest chain, caught by the semantic checks.

Each attack works on a copy of a real trained and evaluated run and ends caught by verify with the rule
named, and refused by replay and eval: never a success.
"""

from __future__ import annotations

from pathlib import Path

from recorder.store.reader import read_run
from recorder.verify import verify_run
from tests.helpers import run_cli, run_in_process
from tests.integrity.forge import Row, copy_run, rewrite, rows, write
from tests.integrity.forge import evaluator_segment as _evaluator
from tests.integrity.forge import first_event as _first
from tests.integrity.forge import trainer_segment as _trainer

MINUTE = 60 * 1_000_000_000


def _rules(run: Path) -> set[str]:
    return {p.rule for p in verify_run(run).problems}


def _caught(run: Path, rule: str, segment: str) -> None:
    """verify exits 1 naming segment, seq and rule; replay refuses the run."""
    done = run_cli("verify", str(run))
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if f"[rule {rule}]" in x)
    assert line.startswith(f"ALTERED: {segment} seq ")
    replay = run_cli("replay", str(run), "--check")
    assert replay.returncode == 1 and "fails verification" in replay.stderr, replay.stdout + replay.stderr
    assert "Traceback" not in done.stderr + replay.stderr


def test_the_honest_run_verifies(evaluated_run: Path) -> None:
    report = verify_run(evaluated_run)
    assert report.ok and not report.warnings, report.problems


def test_1_a_foreign_evaluation_is_caught(attacked: Path) -> None:
    events = rows(_trainer(attacked))
    start = _first(events, "run_start")["time_ns"]
    foreign = rows(_evaluator(attacked))
    for e in foreign:  # another run's evaluation of "step 18": other weights, 72 minutes before run_start
        e["time_ns"] = start - 72 * MINUTE + e["seq"]
        if e["kind"] == "eval_start":
            e["data"] = {**e["data"], "sha256": "ab" * 32}
    write(attacked / "events" / "evaluator-0002.arrows", foreign)
    assert {"eval-names-commit", "eval-after-commit", "eval-after-train-stop"} <= _rules(attacked)
    _caught(attacked, "eval-names-commit", "evaluator-0002.arrows")


def test_2_an_impossible_timeline_is_caught(attacked: Path) -> None:
    def second_update(events: list[Row]) -> list[Row]:
        start = _first(events, "run_start")
        update = _first(events, "weight_update", 18)
        forged = {**update, "time_ns": start["time_ns"] - MINUTE}
        at = events.index(update) + 1
        return [*events[:at], forged, *events[at:]]

    rewrite(_trainer(attacked), second_update)
    assert {"one-update-per-step"} <= _rules(attacked)
    _caught(attacked, "one-update-per-step", "trainer-0001.arrows")


def test_2b_a_single_update_moved_before_run_start_is_caught(attacked: Path) -> None:
    def move(events: list[Row]) -> list[Row]:
        start = _first(events, "run_start")["time_ns"]
        update = _first(events, "weight_update", 1)
        update["time_ns"] = start - MINUTE
        return events

    rewrite(_trainer(attacked), move)
    _caught(attacked, "update-after-run-start", "trainer-0001.arrows")


def test_3_a_swapped_checkpoint_is_caught_by_its_own_metadata(attacked: Path) -> None:
    def swap(events: list[Row]) -> list[Row]:
        c18, c19 = _first(events, "checkpoint_committed", 18), _first(events, "checkpoint_committed", 19)
        for key in ("path", "sha256", "bytes", "fingerprint"):
            c18["data"][key] = c19["data"][key]
        return events

    rewrite(_trainer(attacked), swap)
    assert "commit-metadata" in _rules(attacked)
    _caught(attacked, "commit-metadata", "trainer-0001.arrows")


def test_4_an_invented_result_is_caught(attacked: Path) -> None:
    evaluation = rows(_evaluator(attacked))[:3]  # eval_start, eval_result, eval_stop of step 18
    result = evaluation[1]
    result["value"] = 0.99
    result["data"] = {**result["data"], "results": "derived/evals/step_0000018/forged.json", "results_sha256": "0" * 64}
    for e in evaluation:
        e["time_ns"] += 10 * MINUTE
    write(attacked / "events" / "evaluator-0002.arrows", evaluation)
    _caught(attacked, "eval-evidence", "evaluator-0002.arrows")


def test_4b_an_edited_score_with_its_file_rehashed_is_caught(attacked: Path) -> None:
    evaluation = rows(_evaluator(attacked))[:3]
    evaluation[1]["value"] = 0.99  # the event says 0.99, its results.json (unchanged, same sha) says otherwise
    for e in evaluation:
        e["time_ns"] += 10 * MINUTE
    write(attacked / "events" / "evaluator-0002.arrows", evaluation)
    _caught(attacked, "eval-evidence", "evaluator-0002.arrows")


def test_6_a_run_that_fails_verify_is_not_evaluated(attacked: Path) -> None:
    segment = _trainer(attacked)
    raw = bytearray(segment.read_bytes())
    at = raw.index(b'"sha256":"') + len(b'"sha256":"')
    raw[at] = ord("0") if raw[at] != ord("0") else ord("1")  # one digit of a commit, changed in place
    segment.write_bytes(bytes(raw))
    before = sorted(p.name for p in (attacked / "events").iterdir())
    done = run_cli("eval", str(attacked), "--all")
    assert done.returncode == 1 and "fails verification" in done.stderr and "--force" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in (attacked / "events").iterdir()) == before  # nothing recorded


def test_13_an_honest_copy_keeps_its_run_id_and_verifies(trained_run: Path, tmp_path: Path) -> None:
    original = copy_run(trained_run, tmp_path / "a", evaluations=False)
    copy = copy_run(original, tmp_path / "b")
    copy = copy.rename(copy.parent / "trained-copy")  # cp -a r1 r1-copy
    done = run_in_process("eval", str(copy), "--order", "18")  # what it records in the copy is read
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert {e.run_id for e in read_run(copy).events} == {"trained"}
    assert verify_run(copy).ok, verify_run(copy).problems
    listed = run_cli("verify", str(copy))
    assert listed.returncode == 0 and "verify: intact" in listed.stdout
