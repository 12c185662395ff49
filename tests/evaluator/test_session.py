"""Evaluation sessions on synthetic runs with real tiny checkpoints: order, stop, resume, refusals, events,
results.json, and the CLI's exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.errors import NotEvaluableError, SeriesError, UnverifiedRunError
from evaluator.order import parse_order
from evaluator.results_files import sha256_text
from evaluator.session import evaluate_run
from evaluator.settings import Options
from recorder.store.reader import read_run
from recorder.verify import verify_run
from tests.evaluator.synth import record_run
from tests.helpers import run_cli, run_in_process
from tests.results_shape import assert_written_in_shape

PASS_ALL, PASS_NONE = -1.0, 1.0  # random models score 0.0: > -1 passes, > 1 never does


def eval_events(run_path: Path) -> list[tuple[str, int | None]]:
    return [(e.kind, e.step) for e in read_run(run_path).events if e.kind.startswith("eval_")]


@pytest.mark.parametrize(("order", "expected"), [("ascending", 18), ("descending", 20), ("19,18,20", 19)])
def test_stops_at_the_first_passing_in_the_chosen_order(tmp_path: Path, order: str, expected: int) -> None:
    run = record_run(tmp_path, steps=20, target=PASS_ALL, samples=2)
    s = evaluate_run(run.path, Options(order=parse_order(order)))
    assert [o.step for o in s.outcomes] == [expected] and s.passing_step == expected
    assert eval_events(run.path) == [("eval_start", expected), ("eval_result", expected), ("eval_stop", expected)]


def test_all_and_the_events_it_records(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=20, target=PASS_ALL, samples=3)
    s = evaluate_run(run.path, Options(order=parse_order("descending"), all=True))
    assert [o.step for o in s.outcomes] == [20, 19, 18] and s.passing_step == 20
    log = read_run(run.path)
    evs = [e for e in log.events if e.kind.startswith("eval_")]
    assert {e.writer for e in evs} == {"evaluator"} and {e.segment for e in evs} == {"evaluator-0001.arrows"}
    results = [e for e in evs if e.kind == "eval_result"]
    assert [(e.step, e.samples_count, e.key, e.value) for e in results] == [
        (20, 20 * 256, "accuracy", 0.0),
        (19, 19 * 256, "accuracy", 0.0),
        (18, 18 * 256, "accuracy", 0.0),
    ]
    assert results[0].data["metric"] == "pass@4" and results[0].data["n"] == 3 and results[0].data["k"] == 4
    start = next(e for e in evs if e.kind == "eval_start")
    cp = next(e for e in log.events if e.kind == "checkpoint_committed" and e.step == 20)
    assert {k: start.data[k] for k in ("checkpoint", "sha256", "worker", "backend", "task")} == {
        "checkpoint": cp.data["path"],
        "sha256": cp.data["sha256"],
        "worker": "local",
        "backend": "torch",
        "task": "addition",
    }
    assert set(start.data) == {"checkpoint", "sha256", "worker", "backend", "task", "task_sha256"}
    assert verify_run(run.path).ok


def test_results_json_is_evidence(tmp_path: Path) -> None:
    from trainer.policy.task import validation_tasks

    run = record_run(tmp_path, steps=18, target=PASS_ALL, samples=5)
    evaluate_run(run.path, Options())
    result = next(e for e in read_run(run.path).events if e.kind == "eval_result")
    path = run.path / result.data["results"]
    assert path == run.derived / "evals" / "step_0000018" / "results.json"
    import hashlib

    assert hashlib.sha256(path.read_bytes()).hexdigest() == result.data["results_sha256"]
    doc = json.loads(path.read_text())
    cp = next(e for e in read_run(run.path).events if e.kind == "checkpoint_committed")
    assert doc["score"] == result.value and doc["checkpoint"]["sha256"] == cp.data["sha256"]
    assert doc["checkpoint"]["path"] == "checkpoints/step_0000018"
    tasks = validation_tasks()[:5]
    assert len(doc["samples"]) == 20
    first = doc["samples"][0]
    assert first["prompt_sha256"] == sha256_text(tasks[0].prompt)
    assert first["target_sha256"] == sha256_text(tasks[0].answer)
    assert len(first["completion_sha256"]) == 64 and first["correct"] is False
    assert doc["task_set"]["n"] == 5 and doc["task_set"]["of"] == 251 and doc["complete_task_set"] is False
    assert set(doc["provenance"]) == {"git_commit", "git_dirty", "packages", "host", "python", "cpu_kernels"}
    assert "torch" in doc["provenance"]["packages"]
    assert doc["fingerprint"]["checked"] is True and doc["fingerprint"]["max_abs_diff"] <= 0.005
    assert {"hash_s", "load_s", "score_s", "total_s", "start_ns", "end_ns"} <= set(doc["timings"])
    assert_written_in_shape(path, "pass_at_k")


def test_limit_then_resume_evaluates_only_what_is_missing(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=21, target=PASS_NONE, samples=2)
    first = evaluate_run(run.path, Options(limit=2))
    assert [o.step for o in first.outcomes] == [18, 19] and first.remaining == [20, 21]
    second = evaluate_run(run.path, Options())
    assert [(o.step, o.status) for o in second.outcomes] == [
        (18, "skipped"),
        (19, "skipped"),
        (20, "scored"),
        (21, "scored"),
    ]
    third = evaluate_run(run.path, Options(order=parse_order("descending")))
    assert third.segment is None and all(o.status == "skipped" for o in third.outcomes)
    steps = [e.step for e in read_run(run.path).events if e.kind == "eval_result"]
    assert sorted(steps) == [18, 19, 20, 21]  # each scored once, over two sessions
    assert len(list(run.events.glob("evaluator-*.arrows"))) == 2  # the no-op session opened no segment


def test_a_prior_pass_stops_a_rerun_unless_all(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=20, target=PASS_ALL, samples=2)
    evaluate_run(run.path, Options())
    again = evaluate_run(run.path, Options())
    assert again.segment is None and again.passing_step == 18
    more = evaluate_run(run.path, Options(all=True))
    assert [(o.step, o.status) for o in more.outcomes] == [(18, "skipped"), (19, "scored"), (20, "scored")]


def test_after_a_pass_another_order_evaluates_nothing_more(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=20, target=PASS_ALL, samples=2)
    assert evaluate_run(run.path, Options(order=parse_order("descending"))).passing_step == 20
    for order in ("ascending", "18,19"):
        again = evaluate_run(run.path, Options(order=parse_order(order)))
        assert again.segment is None and [(o.step, o.status) for o in again.outcomes] == [(20, "skipped")]
    assert [s for k, s in eval_events(run.path) if k == "eval_result"] == [20]


def _tamper(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x01  # one bit of one weight
    path.write_bytes(bytes(data))


def test_a_tampered_weights_file_is_refused_by_its_hash_and_not_scored(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=19, target=PASS_ALL, samples=2)
    _tamper(run.checkpoints / "step_0000018" / "model.safetensors")
    with pytest.raises(UnverifiedRunError, match="rule commit-sha"):  # verify refuses the run first
        evaluate_run(run.path, Options())
    s = evaluate_run(run.path, Options(force=True))  # forced, each checkpoint is still checked
    assert [(o.step, o.status, o.error) for o in s.outcomes] == [
        (18, "failed", "HashMismatchError"),
        (19, "scored", ""),
    ]
    assert eval_events(run.path)[:2] == [("eval_start", 18), ("eval_failed", 18)]
    failed = next(e for e in read_run(run.path).events if e.kind == "eval_failed")
    assert "altered after training" in failed.data["reason"] and failed.data["error"] == "HashMismatchError"
    assert not (run.derived / "evals" / "step_0000018").exists()


def _edit_json(path: Path, **changes: object) -> None:
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("change", ["tokenizer", "config"])
def test_another_tokenizer_or_model_config_is_refused_by_the_fingerprint(tmp_path: Path, change: str) -> None:
    run = record_run(tmp_path, steps=18, target=PASS_ALL, samples=2)
    cp = run.checkpoints / "step_0000018"
    if change == "tokenizer":  # same alphabet, two characters swapped: every id means another character
        chars = json.loads((cp / "tokenizer.json").read_text())["chars"]
        _edit_json(cp / "tokenizer.json", chars=chars[1] + chars[0] + chars[2:])
    else:
        _edit_json(cp / "config.json", rms_norm_eps=0.5)
    s = evaluate_run(run.path, Options())
    assert [(o.status, o.error) for o in s.outcomes] == [("failed", "FingerprintMismatchError")]
    assert "weights, tokenizer or code differ" in s.outcomes[0].reason
    assert [k for k, _ in eval_events(run.path)] == ["eval_start", "eval_failed"]
    # --fingerprint off scores it and says so in results.json
    off = evaluate_run(run.path, Options(fingerprint=False))
    assert off.outcomes[0].status == "scored"
    doc = json.loads((run.path / off.outcomes[0].results).read_text())
    assert doc["fingerprint"]["checked"] is False and doc["fingerprint"]["why"] == "--fingerprint off"


def test_a_path_outside_the_run_is_refused(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=18, target=PASS_ALL, samples=2, paths={18: "../evil/step_0000018"})
    with pytest.raises(UnverifiedRunError, match="rule commit-inside-run"):
        evaluate_run(run.path, Options())
    s = evaluate_run(run.path, Options(force=True))
    assert [(o.status, o.error) for o in s.outcomes] == [("failed", "UnsafePathError")]


def test_bad_runs_are_refused_before_any_event(tmp_path: Path) -> None:
    running = record_run(tmp_path, run_id="running", steps=18, stopped=False, files=False)
    # its trainer closed without train_stop: verify's train-stop-recorded refuses it first
    with pytest.raises((NotEvaluableError, UnverifiedRunError), match="training has not stopped|train-stop-recorded"):
        evaluate_run(running.path, Options())
    gappy = record_run(tmp_path, run_id="gappy", steps=20, checkpoint_steps=[19, 20], files=False)
    with pytest.raises(SeriesError, match="starts at step 19"):
        evaluate_run(gappy.path, Options())
    assert not list(running.events.glob("evaluator-*")) and not list(gappy.events.glob("evaluator-*"))


def test_cli_exit_codes_and_evals_table(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=19, target=PASS_NONE, samples=2)
    # in-process through main(), which maps errors to exit codes; the installed binary's own exit status below
    done = run_in_process("eval", str(run.path), "--order", "19,18")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no evaluated checkpoint reached pass@4 > 1.0" in done.stderr
    table = run_in_process("evals", str(run.path))
    assert table.returncode == 0 and "2 evaluations" in table.stdout and table.stdout.count("scored") == 2
    bad = run_in_process("eval", str(run.path), "--order", "17")
    assert bad.returncode == 2 and "no committed checkpoint" in bad.stderr and "Traceback" not in bad.stderr
    gone = run_cli("eval", str(tmp_path / "nope"))
    assert gone.returncode == 2 and "no such run directory" in gone.stderr


def test_a_second_session_at_once_is_refused(tmp_path: Path) -> None:
    import fcntl
    import os

    from evaluator.errors import EvaluatorBusyError

    run = record_run(tmp_path, steps=18, target=PASS_ALL, samples=2, files=False)
    (run.derived / "evals").mkdir(parents=True)
    fd = os.open(run.derived / "evals" / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a running session holds it
        with pytest.raises(EvaluatorBusyError, match="another evaluator session is running"):
            evaluate_run(run.path, Options())
    finally:
        os.close(fd)
    assert not list(run.events.glob("evaluator-*"))


def test_a_step_interrupted_beside_a_pass_is_evaluated_again_before_the_pass_counts(tmp_path: Path) -> None:
    from recorder.store.log import LogWriter

    run = record_run(tmp_path, steps=20, target=PASS_ALL, samples=2)
    evaluate_run(run.path, Options(order=parse_order("19")))  # one worker's checkpoint passed ...
    events = read_run(run.path).events
    started = next(e for e in events if e.kind == "eval_start").data
    cp = next(e for e in events if e.kind == "checkpoint_committed" and e.step == 18).data
    with LogWriter(run.path, "evaluator") as w:  # ... while Ctrl-C stopped the other's, earlier in step order
        w.append("eval_start", step=18, data={**started, "checkpoint": cp["path"], "sha256": cp["sha256"]})
        w.append("eval_failed", step=18, data={"reason": "interrupted", "error": "KeyboardInterrupt"})
    again = evaluate_run(run.path, Options())
    assert [(o.step, o.status) for o in again.outcomes] == [(18, "scored")] and again.passing_step == 18
    assert evaluate_run(run.path, Options()).passing_step == 18  # and then evaluation has ended
