"""SIGKILL of `recorder train` and `recorder eval` (real subprocesses) at random instants: afterwards
`recorder verify` passes, every event the process had reported as done is in the log, and no checkpoint
is half-committed. A few kills in the default tier; 100+ in the slow one."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli
from tests.reliability.crash import SMALL_TRAIN, check_after_kill, run_and_kill, timed

TRAIN_PRINTED = r"(?m)^step (\d+)/\d+"
EVAL_PRINTED = r"(?m)^step (\d+): accuracy"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, small_run: tuple[Path, float]) -> tuple[Path, float, float]:
    """The session's small run: its duration bounds the train kills; it is the eval kills' input."""
    run, train_s = small_run
    work = tmp_path_factory.mktemp("evalref")
    shutil.copytree(run, work / run.name)
    eval_s = timed(["eval", str(work / run.name), "--all"])
    return run, train_s, eval_s


def _delay(rng: random.Random, upper_s: float, i: int) -> float:
    """Even trials uniform over the whole run, odd ones in its last 30 % (checkpoints written and committed)."""
    return rng.uniform(0.2, upper_s) if i % 2 == 0 else rng.uniform(0.7 * upper_s, upper_s)


def _kill_many(n: int, seed: int, total_s: float, trial) -> list[tuple[float, int, int]]:  # type: ignore[no-untyped-def]
    """`trial(i, delay)` n times; a process that finished before its kill shrinks the range (warm caches
    make later runs faster than the reference), so the kills keep landing mid-run."""
    rng, upper, out = random.Random(seed), 0.95 * total_s, []
    for i in range(n):
        delay = _delay(rng, upper, i)
        result = trial(i, delay)
        out.append(result)
        if result[1] != -9:
            upper = max(0.5, 0.9 * min(upper, delay))
    return out


def kill_trainer(tmp_path: Path, total_s: float, n: int, seed: int) -> list[tuple[float, int, int]]:
    def trial(i: int, delay: float) -> tuple[float, int, int]:
        k = run_and_kill(["train", "--root", str(tmp_path), "--run-id", f"t{i}", *SMALL_TRAIN], delay)
        return delay, k.returncode, check_after_kill(tmp_path / f"t{i}", k, TRAIN_PRINTED, "step_metrics")

    return _kill_many(n, seed, total_s, trial)


def kill_evaluator(tmp_path: Path, ref: Path, total_s: float, n: int, seed: int) -> list[tuple[float, int, int]]:
    def trial(i: int, delay: float) -> tuple[float, int, int]:
        run = tmp_path / f"e{i}" / ref.name  # the run id is the directory's name
        shutil.copytree(ref, run)
        k = run_and_kill(["eval", str(run), "--all"], delay)
        kept = check_after_kill(run, k, EVAL_PRINTED, "eval_result")
        if i == 0:  # a rerun after the kill closes the interrupted session and finishes the evaluation
            again = run_cli("eval", str(run), "--all")
            assert again.returncode in (0, 1) and "Traceback" not in again.stderr, again.stderr
            check_after_kill(run, k, EVAL_PRINTED, "eval_result")
        return delay, k.returncode, kept

    return _kill_many(n, seed, total_s, trial)


def _report(name: str, results: list[tuple[float, int, int]]) -> None:
    landed = sum(1 for _, rc, _ in results if rc == -9)
    print(
        f"{name}: {len(results)} trials, {landed} killed mid-run, events kept per trial "
        f"{sorted(n for *_, n in results)}"
    )


@pytest.mark.slow  # the default tier keeps the evaluator's SIGKILL test; the trainer's is minutes
def test_sigkill_train_few(tmp_path, reference):
    _, train_s, _ = reference
    results = kill_trainer(tmp_path, train_s, 4, seed=1)
    _report("train", results)
    assert any(rc == -9 for _, rc, _ in results)


def test_sigkill_eval_few(tmp_path, reference):
    ref, _, eval_s = reference
    results = kill_evaluator(tmp_path, ref, eval_s, 3, seed=2)
    _report("eval", results)
    assert any(rc == -9 for _, rc, _ in results)


@pytest.mark.slow
def test_sigkill_train_and_eval_100(tmp_path, reference):
    ref, train_s, eval_s = reference
    train = kill_trainer(tmp_path / "train", train_s, 60, seed=10) if (tmp_path / "train").mkdir() is None else []
    evals = kill_evaluator(tmp_path / "eval", ref, eval_s, 45, seed=11) if (tmp_path / "eval").mkdir() is None else []
    _report("train", train)
    _report("eval", evals)
    assert len(train) + len(evals) >= 100
    assert sum(rc == -9 for _, rc, _ in train + evals) >= 80
