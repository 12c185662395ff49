"""Defend the rules, not a list of attacks: each case a forgery of
a copy of a real trained and evaluated run with the digest chain recomputed (the bytes verify), each caught
by the rule it breaks, named with its segment and seq. One rule per case; docs/integrity.md lists them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from recorder.rules import EVAL_TASK_SHA256
from recorder.verify import verify_run
from tests.helpers import run_cli
from tests.integrity.forge import Row, rewrite, rows, write
from tests.integrity.forge import evaluator_segment as _evaluator
from tests.integrity.forge import first_event as _first
from tests.integrity.forge import in_evaluator as _in_evaluator
from tests.integrity.forge import in_trainer as _in_trainer
from tests.integrity.forge import trainer_segment as _trainer

MINUTE = 60 * 1_000_000_000
YEAR = 366 * 24 * 60 * MINUTE


def _results(run: Path, step: int = 18) -> Path:
    return run / "derived" / "evals" / f"step_{step:07d}" / "results.json"


def _edit_results(run: Path, edit: Callable[[dict[str, object]], None], step: int = 18) -> None:
    """Rewrite results.json and record its new sha256 in the eval_result (the forger's full job)."""
    doc = json.loads(_results(run, step).read_text())
    edit(doc)
    body = json.dumps(doc).encode()
    _results(run, step).write_bytes(body)

    def rehash(events: list[Row]) -> list[Row]:
        result = _first(events, "eval_result", step)
        result["data"] = {**result["data"], "results_sha256": hashlib.sha256(body).hexdigest()}
        return events

    rewrite(_evaluator(run), rehash)


def _set(row: Row, **fields: object) -> None:
    row.update(fields)


# -- the timeline ------------------------------------------------------------------------------------------


def result_before_its_start(events: list[Row]) -> None:
    _first(events, "eval_result", 18)["time_ns"] = _first(events, "eval_start", 18)["time_ns"] - 1


def evaluation_after_2100(events: list[Row]) -> None:
    for e in events:
        e["time_ns"] += 80 * YEAR


def train_stop_before_run_start(events: list[Row]) -> None:
    _first(events, "train_stop")["time_ns"] = _first(events, "run_start")["time_ns"] - MINUTE


def monotonic_clock_back(events: list[Row]) -> None:
    _first(events, "weight_update", 10)["mono_ns"] = _first(events, "weight_update", 1)["mono_ns"]


def steps_1_to_17_removed(events: list[Row]) -> list[Row]:
    return [e for e in events if e["step"] is None or e["step"] >= 18 or e["kind"] == "block_start"]


def update_without_metrics(events: list[Row]) -> list[Row]:
    return [e for e in events if not (e["kind"] == "step_metrics" and e["step"] == 12)]


def update_of_a_step_never_trained(events: list[Row]) -> list[Row]:
    update = _first(events, "weight_update", 19)
    at = events.index(update) + 1
    return [*events[:at], {**update, "step": 25, "samples_count": 25 * 256}, *events[at:]]


def negative_step(events: list[Row]) -> None:
    for e in events:
        if e["step"] == 1:
            e["step"] = -1


def dated_before_1970(events: list[Row]) -> None:
    for e in events:
        e["time_ns"] -= events[0]["time_ns"] + 5_000_000_000


def a_second_run_opened(run: Path) -> None:
    opened = dict(_first(rows(_trainer(run)), "run_opened"))
    opened["data"] = {**opened["data"], "global_batch_size": 128}
    opened["time_ns"] += 1
    write(run / "events" / "trainer-0000.arrows", [opened])


def an_overlapping_session(run: Path) -> None:
    events = rows(_trainer(run))
    session = [e for e in events if e["kind"] in ("weight_update", "step_metrics") and e["step"] <= 3]
    for e in session:
        e["time_ns"] += 1
    write(run / "events" / "trainer-0002.arrows", session)


# -- the values --------------------------------------------------------------------------------------------


def accuracy_above_one(run: Path) -> None:
    _in_evaluator(lambda events: _set(_first(events, "eval_result", 18), value=1.5))(run)
    _edit_results(run, lambda doc: doc.update(score=1.5))


def accuracy_nan(events: list[Row]) -> None:
    _first(events, "eval_result", 18)["value"] = "NaN"


def n_zero(events: list[Row]) -> None:
    result = _first(events, "eval_result", 18)
    result["data"] = {**result["data"], "n": 0}


def more_passed_than_tasks(run: Path) -> None:
    _edit_results(run, lambda doc: doc.update(tasks_passed=400))


def duplicate_samples(run: Path) -> None:
    _edit_results(run, lambda doc: doc.update(samples=doc["samples"][:4] * 251))  # type: ignore[index]


def fewer_samples(run: Path) -> None:
    _edit_results(run, lambda doc: doc.update(samples=doc["samples"][:40]))  # type: ignore[index]


def every_sample_claimed_correct(run: Path) -> None:
    def claim(doc: dict[str, object]) -> None:
        for sample in doc["samples"]:  # type: ignore[attr-defined]
            sample.update(correct=True, reward=1.0)

    _edit_results(run, claim)


# -- the evidence and the score ----------------------------------------------------------------------------


def commit_path_with_dotdot(run: Path) -> None:
    path = "checkpoints/../checkpoints/step_0000018"

    def commit(events: list[Row]) -> None:
        c = _first(events, "checkpoint_committed", 18)
        c["data"] = {**c["data"], "path": path}

    def evaluation(events: list[Row]) -> None:
        s = _first(events, "eval_start", 18)
        s["data"] = {**s["data"], "checkpoint": path}

    _in_trainer(commit)(run)
    _in_evaluator(evaluation)(run)


def another_task_spec(events: list[Row]) -> None:
    for e in events:
        if e["kind"] in ("eval_start", "eval_result") and e["step"] == 19:
            e["data"] = {**e["data"], "task": "easier", "task_sha256": "cd" * 32}


def pass_at_eight(events: list[Row]) -> None:
    result = _first(events, "eval_result", 18)
    result["data"] = {**result["data"], "k": 8}


def sixty_four_tasks(events: list[Row]) -> None:
    result = _first(events, "eval_result", 18)
    result["data"] = {**result["data"], "n": 64}


EASIER = "cd" * 32


def every_evaluation_with_an_easier_spec(run: Path) -> None:
    """The whole job: every evaluation, its events and its results.json alike, states one other task spec."""
    bodies = {}
    for step in sorted({e["step"] for e in rows(_evaluator(run)) if e["kind"] == "eval_result"}):
        doc = json.loads(_results(run, step).read_text())
        doc["task"] = {**doc["task"], "spec_sha256": EASIER}
        bodies[step] = json.dumps(doc).encode()
        _results(run, step).write_bytes(bodies[step])

    def restate(events: list[Row]) -> list[Row]:
        for e in events:
            if e["kind"] in ("eval_start", "eval_result"):
                e["data"] = {**e["data"], "task_sha256": EASIER}
            if e["kind"] == "eval_result":
                e["data"] = {**e["data"], "results_sha256": hashlib.sha256(bodies[e["step"]]).hexdigest()}
        return events

    rewrite(_evaluator(run), restate)


def a_second_evaluation_of_step_18(run: Path) -> None:
    again = [dict(e) for e in rows(_evaluator(run)) if e["step"] == 18]
    for e in again:
        e["time_ns"] += 10 * MINUTE
    write(run / "events" / "evaluator-0002.arrows", again)


def gbs_moves_the_validation_start_past_step_18(events: list[Row]) -> None:
    opened = _first(events, "run_opened")
    opened["data"] = {**opened["data"], "global_batch_size": 128}  # validation start: ceil(2.5 + 30) = 33


CASES: list[tuple[Callable[[Path], None], str, str]] = [
    (_in_evaluator(result_before_its_start), "eval-result-inside-evaluation", "evaluator-0001.arrows"),
    (_in_evaluator(evaluation_after_2100), "time-range", "evaluator-0001.arrows"),
    (_in_trainer(train_stop_before_run_start), "train-stop-order", "trainer-0001.arrows"),
    (_in_trainer(monotonic_clock_back), "mono-order", "trainer-0001.arrows"),
    (_in_trainer(steps_1_to_17_removed), "session-steps", "trainer-0001.arrows"),
    (_in_trainer(update_without_metrics), "session-steps", "trainer-0001.arrows"),
    (_in_trainer(update_of_a_step_never_trained), "session-steps", "trainer-0001.arrows"),
    (_in_trainer(negative_step), "step-range", "trainer-0001.arrows"),
    (_in_trainer(dated_before_1970), "time-range", "trainer-0001.arrows"),
    (a_second_run_opened, "one-run-opened", "trainer-0000.arrows"),
    (an_overlapping_session, "session-overlap", "trainer-0002.arrows"),
    (accuracy_above_one, "eval-value", "evaluator-0001.arrows"),
    (_in_evaluator(accuracy_nan), "eval-value", "evaluator-0001.arrows"),
    (_in_evaluator(n_zero), "eval-evidence", "evaluator-0001.arrows"),
    (more_passed_than_tasks, "eval-evidence", "evaluator-0001.arrows"),
    (duplicate_samples, "eval-evidence", "evaluator-0001.arrows"),
    (fewer_samples, "eval-evidence", "evaluator-0001.arrows"),
    (every_sample_claimed_correct, "eval-evidence", "evaluator-0001.arrows"),
    (commit_path_with_dotdot, "commit-inside-run", "trainer-0001.arrows"),
    (_in_evaluator(another_task_spec), "one-task-spec", "evaluator-0001.arrows"),
    (_in_evaluator(pass_at_eight), "eval-settings", "evaluator-0001.arrows"),
    (_in_evaluator(sixty_four_tasks), "eval-settings", "evaluator-0001.arrows"),
    (every_evaluation_with_an_easier_spec, "eval-settings", "evaluator-0001.arrows"),
    (a_second_evaluation_of_step_18, "one-result-per-step", "evaluator-0002.arrows"),
    (_in_trainer(gbs_moves_the_validation_start_past_step_18), "eval-from-validation-start", "evaluator-0001.arrows"),
]


@pytest.mark.parametrize(("attack", "rule", "segment"), CASES, ids=[f"{c[1]}:{c[0].__qualname__}" for c in CASES])
def test_each_attack_is_caught_by_its_rule(
    attacked: Path, attack: Callable[[Path], None], rule: str, segment: str
) -> None:
    attack(attacked)
    problems = verify_run(attacked).problems
    named = [p for p in problems if p.rule == rule]
    assert named, problems
    assert named[0].segment == segment and named[0].seq is not None, named


def test_only_the_recorded_and_the_rulesets_settings_tell_an_evaluation_of_another_benchmark(attacked: Path) -> None:
    every_evaluation_with_an_easier_spec(attacked)  # consistent: one spec, evidence that matches its events
    problems = verify_run(attacked).problems
    assert problems and {p.rule for p in problems} == {"eval-settings", "benchmark-eval"}, problems
    recorded = next(p for p in problems if p.rule == "eval-settings")
    assert f"task spec {EASIER[:16]}..., not the built-in addition task" in recorded.message
    ruleset = next(p for p in problems if p.rule == "benchmark-eval")
    assert f"task_sha256 {EASIER[:16]}..., not {EVAL_TASK_SHA256[:16]}..." in ruleset.message


def test_the_cli_names_segment_seq_and_rule_and_replay_refuses(attacked: Path) -> None:
    a_second_evaluation_of_step_18(attacked)
    (attacked / "derived" / "scores.jsonl").unlink(
        missing_ok=True
    )  # a forger drops the cache that would also give it away
    done = run_cli("verify", str(attacked))
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        "ALTERED: evaluator-0002.arrows seq 1: a second accuracy for step 18 (the first at evaluator-0001.arrows seq 1)"
        in done.stdout
    )
    assert "[rule one-result-per-step]" in done.stdout
    replay = run_cli("replay", str(attacked), "--check")
    assert replay.returncode == 1 and "fails verification" in replay.stderr, replay.stdout + replay.stderr
    assert "Traceback" not in done.stderr + replay.stderr
