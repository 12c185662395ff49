"""The model-free parts: validation start, series checks, path safety, order, pass@k, history. No torch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluator.attempts import attempts, open_attempts, scored
from evaluator.committed import CommittedCheckpoint, check_series, committed, resolve
from evaluator.errors import OrderError, SeriesError, UnsafePathError
from evaluator.order import Order, arrange, parse_order
from evaluator.passk import pass_at_k, pass_at_k_task, sample_plan, sample_seed
from recorder.rules import series_problems
from recorder.rules import validation_start_step as validation_start
from recorder.store.kinds import CheckpointCommitted
from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from tests.evaluator.synth import record_run


@pytest.mark.parametrize(("gbs", "start"), [(256, 18), (512, 10), (1024, 7), (128, 33), (3840, 4), (7680, 3)])
def test_validation_start_is_the_rule(gbs: int, start: int) -> None:
    assert validation_start(gbs) == start


def test_series_complete_has_no_problems() -> None:
    assert series_problems([18, 19, 20], 18, 20) == []


def test_series_reports_late_start_gap_early_and_missing_tail() -> None:
    assert series_problems([19, 20], 18, 20) == [
        "the series starts at step 19, not at the validation start 18",
        "missing checkpoints for steps 18 (training stopped at step 20)",
    ]
    problems = series_problems([17, 18, 20, 21, 24], 18, 25)
    assert problems[0] == "checkpoints before the validation start 18: steps 17"
    assert problems[1] == "missing checkpoints for steps 19, 22-23, 25 (training stopped at step 25)"
    assert series_problems([5, 6], 18, 6) == [
        "checkpoints before the validation start 18: steps 5-6",
        "no checkpoint at or after the validation start 18",
    ]


def test_check_series_refuses_unless_allowed(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=21, checkpoint_steps=[17, 18, 20, 21], files=False)
    cps = committed(read_run(run).events)
    with pytest.raises(SeriesError, match=r"missing checkpoints for steps 19 .*--allow-gaps"):
        check_series(cps, 256, 21, allow_gaps=False)
    candidates, problems = check_series(cps, 256, 21, allow_gaps=True)
    assert [c.step for c in candidates] == [18, 20, 21]
    assert len(problems) == 2


def test_checkpoints_come_from_events_not_files(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=19, files=False)
    (run.checkpoints / "step_0000020").mkdir(parents=True)  # a stray directory nobody committed
    assert [c.step for c in committed(read_run(run).events)] == [18, 19]


def test_a_step_committed_twice_with_other_weights_is_refused(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=18, files=False)
    with LogWriter(run, "trainer") as w:
        other = CheckpointCommitted(
            path="checkpoints/step_0000018",
            sha256="1" * 64,
            bytes=0,
            weight_update_ns=None,
            save_begin_ns=None,
            save_end_ns=0,
            blocked_ns=None,
            fingerprint={},
            format="safetensors",
            dtype=None,
        )
        w.append(other, step=18, samples_count=18 * 256)
    with pytest.raises(SeriesError, match="step 18 was committed twice"):
        committed(read_run(run).events)


def _cp(path: str) -> CommittedCheckpoint:
    return CommittedCheckpoint(step=18, samples_count=0, path=path, sha256="", bytes=None, weight_update_ns=None)


@pytest.mark.parametrize("path", ["/etc", "../other/checkpoints/step_0000018", "checkpoints/../../x", ""])
def test_paths_leaving_the_run_are_refused(tmp_path: Path, path: str) -> None:
    run = RunDir.create(tmp_path, "r")
    with pytest.raises(UnsafePathError, match="refused"):
        resolve(run.path, _cp(path))


def test_a_symlink_out_of_the_run_is_refused(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r")
    (tmp_path / "elsewhere").mkdir()
    run.checkpoints.mkdir()
    os.symlink(tmp_path / "elsewhere", run.checkpoints / "step_0000018")
    with pytest.raises(UnsafePathError, match="outside the run directory"):
        resolve(run.path, _cp("checkpoints/step_0000018"))
    assert resolve(run.path, _cp("checkpoints/./step_9")) == (run.path / "checkpoints/step_9").resolve()


def test_parse_order() -> None:
    assert parse_order("ascending") == Order("ascending")
    assert parse_order(" 19, 18,20") == Order("steps", (19, 18, 20))
    for bad, msg in [("up", "use ascending"), ("19,19", "listed twice"), ("0,1", "positive"), ("", "use ascending")]:
        with pytest.raises(OrderError, match=msg):
            parse_order(bad)


def test_arrange() -> None:
    assert arrange([20, 18, 19], Order("ascending")) == [18, 19, 20]
    assert arrange([20, 18, 19], Order("descending")) == [20, 19, 18]
    assert arrange([18, 19, 20], Order("steps", (19, 18))) == [19, 18]
    with pytest.raises(OrderError, match="step 17"):
        arrange([18, 19], Order("steps", (17, 18)))


@given(st.lists(st.integers(1, 10_000), unique=True, min_size=1, max_size=30), st.randoms())
def test_parse_order_round_trips_any_permutation(steps: list[int], rnd: object) -> None:
    text = ",".join(map(str, steps))
    assert arrange(sorted(steps), parse_order(text)) == steps
    assert arrange(steps, parse_order("descending")) == sorted(steps, reverse=True)


def test_pass_at_k_by_hand() -> None:
    assert pass_at_k_task(4, 0, 4) == 0.0
    assert pass_at_k_task(4, 1, 4) == 1.0
    assert pass_at_k_task(4, 1, 1) == 0.25
    assert pass_at_k_task(10, 3, 2) == pytest.approx(1 - 21 / 45)
    assert pass_at_k([[True, False, False, False], [False] * 4, [True] * 4], 4) == 2 / 3
    with pytest.raises(ValueError):
        pass_at_k_task(3, 1, 4)


def test_sample_seeds_depend_on_task_and_sample_only() -> None:
    plan = sample_plan([0, 1, 250], 4)
    assert plan[:5] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]
    seeds = [sample_seed(t, j) for t, j in plan]
    assert len(set(seeds)) == len(seeds) and all(0 <= s < 2**63 for s in seeds)
    assert sample_seed(1, 2) == sample_seed(1, 2) != sample_seed(2, 1)


def test_history_pairs_attempts_and_closers(tmp_path: Path) -> None:
    run = record_run(tmp_path, steps=20, files=False)
    with LogWriter(run, "evaluator") as w:  # a scored 18, then 19 started and never ended (killed)
        w.append("eval_start", step=18, data={"worker": "local"})
        w.append("eval_result", step=18, key="accuracy", value=0.71, data={})
        w.append("eval_stop", step=18)
        w.append("eval_start", step=19, data={})
    first = attempts(read_run(run).events)
    assert [(a.step, a.status) for a in first] == [(18, "scored"), (19, "running")]
    assert list(scored(first)) == [18] and scored(first)[18].accuracy == 0.71
    assert [a.step for a in open_attempts(first)] == [19]
    with LogWriter(run, "evaluator") as w:
        w.append(
            "eval_failed",
            step=19,
            data={"reason": "x", "error": "EvaluatorInterrupted", "interrupted_segment": "evaluator-0001.arrows"},
        )
        w.append("eval_start", step=20, data={})
        w.append("eval_failed", step=20, data={"reason": "bad hash", "error": "HashMismatchError"})
    second = attempts(read_run(run).events)
    assert [(a.step, a.status) for a in second] == [(18, "scored"), (19, "interrupted"), (20, "failed")]
    assert open_attempts(second) == []
