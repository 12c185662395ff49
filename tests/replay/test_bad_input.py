"""Bad input: clear messages naming the step, segment or line, the right exit codes, never a traceback."""

from __future__ import annotations

from pathlib import Path

from recorder.store.reader import read_run
from tests.helpers import run_cli, run_in_process
from tests.replay.runs import record_run

PREFIXED = (
    ':::MLLOG {"namespace": "", "time_ms": 1000, "event_type": "INTERVAL_START", "key": "run_start", '
    '"value": null, "metadata": {"file": "a.py", "lineno": 1}}\r\n'
    "some other output\n"
    '[1,0]<stdout>::::MLLOG {"namespace": "", "time_ms": 61000, "event_type": "POINT_IN_TIME", '
    '"key": "eval_accuracy", "value": 0.7, "metadata": {"file": "a.py", "lineno": 2, "samples_count": 512}}\n'
    '0: :::MLLOG {"namespace": "", "time_ms": 62000, "event_type": "INTERVAL_END", "key": "run_stop", '
    '"value": null, "metadata": {"status": "succ\n'
    ':::MLLOG {"namespace": "", "time_ms": 63000, "event_type": "INTERVAL_END", "key": "run_stop", '
    '"value": null, "metadata": {"file": "a.py", "lineno": 3, "status": "success"}}\n'
)


def _assert_clean_error(result, code: int, *needles: str) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == code, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in " ".join(result.stderr.split()), result.stderr


def test_passing_checkpoint_without_weight_update(tmp_path: Path) -> None:
    run = record_run(tmp_path, "nowu", evals=[(5, 0.72)], skip_weight_update=[5])
    _assert_clean_error(
        run_in_process("replay", str(run.path)),
        1,
        "weight_update of step 6, where the session is at step 5",
        "session-steps",
    )  # a skipped step fails verify; forced, replay still derives no run_stop without it
    _assert_clean_error(
        run_in_process("replay", str(run.path), "--force"),
        1,
        "the passing checkpoint is step 5, which has no weight_update event",
        "weight_update_ns=",
    )


def test_unevaluated_checkpoints_and_none_passing_fabricate_nothing(tmp_path: Path) -> None:
    run = record_run(tmp_path, "partial", evals=[(4, 0.5)])
    _assert_clean_error(
        run_in_process("replay", str(run.path)), 1, "steps 5, 6 are not evaluated yet", "no run_stop is derived"
    )
    assert not (run.derived / "result_official.txt").exists()


def test_one_unevaluated_checkpoint_is_named_with_the_command_that_evaluates_it(tmp_path: Path) -> None:
    run = record_run(tmp_path, "one-left", evals=[(4, 0.5), (5, 0.5)])
    _assert_clean_error(
        run_in_process("replay", str(run.path)),
        1,
        "and step 6 is not evaluated yet: no run_stop is derived; evaluate them: recorder eval",
    )


def test_a_forced_replay_of_a_run_failing_verify_names_verify_not_an_eval_that_would_refuse(tmp_path: Path) -> None:
    run = record_run(tmp_path, "broken", evals=[(4, 0.5), (5, 0.5)], skip_weight_update=[5])
    forced = run_in_process("replay", str(run.path), "--force")
    _assert_clean_error(
        forced,
        1,
        f"step 6 is not evaluated yet: no run_stop is derived; the run fails verification: recorder verify {run.path}",
    )
    assert "recorder eval" not in forced.stderr, forced.stderr


def test_duplicate_results_for_one_step(tmp_path: Path) -> None:
    run = record_run(tmp_path, "dup", evals=[(4, 0.70)], extra_results=[(4, 0.71)])
    _assert_clean_error(
        run_in_process("replay", str(run.path)), 1, "evaluator-0002.arrows seq 0", "eval-result-inside-evaluation"
    )  # a result outside any evaluation fails verify; forced, replay still refuses to pick one
    _assert_clean_error(
        run_in_process("replay", str(run.path), "--force"),
        1,
        "duplicate 'accuracy' results for step 4",
        "evaluator-0001.arrows seq 1: 0.7",
        "evaluator-0002.arrows seq 0: 0.71",
    )


def test_checker_order_without_the_validation_start(tmp_path: Path) -> None:
    run = record_run(tmp_path, "novs", evals=[(5, 0.72)])
    _assert_clean_error(
        run_in_process("replay", str(run.path), "--interpretation", "checker-order"),
        1,
        "checker-order has nothing it may emit",
        "step 4",
    )


def test_malformed_imported_line_is_kept_and_reported(tmp_path: Path) -> None:
    log = tmp_path / "result_0.txt"
    log.write_bytes(PREFIXED.encode())
    result = run_in_process("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "bad")
    assert result.returncode == 0, result.stderr
    assert f"{log}:4: malformed JSON" in " ".join(result.stdout.split())
    events = [e for e in read_run(tmp_path / "runs" / "bad").events if e.kind == "mllog_line"]
    assert [e.data["line_no"] for e in events] == [1, 3, 4, 5]
    assert events[2].data["error"].startswith("malformed JSON") and events[2].data["line"].startswith("0: :::MLLOG")
    out = tmp_path / "replayed.txt"
    assert run_in_process("replay", str(tmp_path / "runs" / "bad"), "-o", str(out)).returncode == 0
    expected = [ln.rstrip("\r") for ln in PREFIXED.split("\n") if ":::MLLOG" in ln]
    assert out.read_text().split("\n")[:-1] == expected


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    run = record_run(tmp_path, "ok", evals=[(4, 0.72)])
    _assert_clean_error(  # the installed binary's exit status; the rest run in-process through main()
        run_cli("replay", str(run.path), "--interpretation", "fastest"),
        2,
        "unknown interpretation 'fastest'",
        "official, earliest-passing",
    )
    _assert_clean_error(
        run_in_process("replay", str(run.path), "--ruleset", "6.2.0"), 2, "unknown ruleset '6.2.0'", "6.1.0"
    )
    _assert_clean_error(
        run_in_process("replay", str(run.path), "--ruleset", "5.0.0"),
        2,
        "benchmark 'qwen35_397b_grpo' is not in training 5.0.0",
        "llama2_70b_lora",
    )
    _assert_clean_error(run_in_process("replay", str(tmp_path / "nope")), 2, "no such run directory")
    _assert_clean_error(
        run_in_process("import", str(tmp_path / "missing.txt"), "--root", str(tmp_path)), 2, "cannot read"
    )
    empty = tmp_path / "empty.txt"
    empty.write_text("hello\n")
    _assert_clean_error(
        run_in_process("import", str(empty), "--root", str(tmp_path)),
        2,
        f"{empty}: not an mllog: no :::MLLOG line found",
    )
    _assert_clean_error(
        run_in_process("import", str(empty), str(empty), "--root", str(tmp_path), "--run-id", "x"),
        2,
        "--run-id names one run",
    )
    # A usage error: as-recorded needs imported lines, and this run has none.
    _assert_clean_error(
        run_in_process("replay", str(run.path), "--interpretation", "as-recorded"), 2, "no imported mllog lines"
    )
