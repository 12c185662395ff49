"""A trainer segment cut short after an evaluation relied on it is named truncated, at its first missing seq,
and the evaluation is not blamed for what the cut took away (nor advised about a --dtype nobody passed).
An open trainer segment that nothing later relied on (a killed writer) is no problem."""

from __future__ import annotations

import os
from pathlib import Path

from recorder.verify import verify_run
from recorder.verify.truncation import TRUNCATED_RULE
from tests.helpers import run_cli
from tests.kit.synthetic import record_run


def _cut(segment: Path, fraction: float) -> None:
    os.truncate(segment, int(segment.stat().st_size * fraction))


def test_a_cut_trainer_segment_is_truncated_at_its_seq_and_the_evaluator_is_not_blamed(tmp_path: Path) -> None:
    run = record_run(tmp_path, "cut", gbs=256, steps=20, evals=[(18, 0.72)], closed=True).path
    assert verify_run(run).ok
    _cut(run / "events" / "trainer-0001.arrows", 2 / 3)
    done = run_cli("verify", str(run))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    (problem,) = verify_run(run).problems
    assert (problem.segment, problem.rule) == ("trainer-0001.arrows", TRUNCATED_RULE)
    assert f"trainer-0001.arrows  {problem.seq} events  truncated at seq {problem.seq}" in done.stdout
    assert (
        f"TRUNCATED: trainer-0001.arrows seq {problem.seq}: truncated: it ends at seq {problem.seq - 1}" in done.stdout
    )
    assert "evaluates step 18" in done.stdout
    assert "ALTERED" not in done.stdout and "--dtype" not in done.stdout and "open (writer" not in done.stdout
    assert not any(line.startswith(("ALTERED: evaluator", "TRUNCATED: evaluator")) for line in done.stdout.splitlines())
    replay = run_cli("replay", str(run))
    assert replay.returncode == 1 and "truncated-segment" in replay.stderr and "evaluator-0001" in replay.stderr


def test_a_cut_that_keeps_the_commits_but_loses_train_stop_is_truncated_too(tmp_path: Path) -> None:
    run = record_run(tmp_path, "cut", gbs=256, steps=20, evals=[(18, 0.72)], closed=True).path
    trainer = run / "events" / "trainer-0001.arrows"
    _cut(trainer, 0.97)  # the closing record and train_stop go; the commits stay
    problems = verify_run(run).problems
    assert [p.rule for p in problems] == [TRUNCATED_RULE], problems
    assert "evaluates step 18, and the run's train_stop is gone" in problems[0].message


def test_a_killed_trainer_with_nothing_evaluated_is_open_not_truncated(tmp_path: Path) -> None:
    run = record_run(tmp_path, "killed", gbs=256, steps=20, closed=True).path
    _cut(run / "events" / "trainer-0001.arrows", 2 / 3)  # as a kill mid-append leaves it
    done = run_cli("verify", str(run))
    assert done.returncode == 0, done.stdout
    assert "open (writer did not close)" in done.stdout and "truncated" not in done.stdout
