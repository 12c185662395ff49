"""Every disagreement between NeMo-RL's training log and the series the real megatron-core wrote
(tests/golden/mcore/dense-tp1) is refused naming the file, the step and the log's line, with nothing
written: a weight update after the step's own tracked_stats or after the log's block_stop, samples, a step
the log spans but never logged, a step past its end. A recorded block_stop is never moved: a final save left
out as unfinished changes none of the derived training events. The commands run in this process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from recorder.store.reader import read_run
from tests.evaluator import nemo_run
from tests.evaluator.test_nemo_end_to_end import mllog
from tests.helpers import run_in_process
from tests.kit import mcore_golden
from tests.kit.mcore_golden import ITERATION
from trainer.policy.taskspec import shipped

SOURCE = ("--model-config", str(mcore_golden.model_config("dense-tp1")), "--tokenizer", str(mcore_golden.tokenizer()))


def _training_log(tmp_path: Path, final_step: int, drop: tuple[int, ...] = ()) -> Path:
    """The run holding the training mllog of a run that stopped after `final_step`, without the tracked_stats
    of the steps in `drop` (as a logger that lost them leaves it)."""
    log = nemo_run.write_training_mllog(tmp_path / "mlperf_training.log", final_step=final_step)
    kept = [
        line
        for line in log.read_text().splitlines(keepends=True)
        if not any('"tracked_stats"' in line and f'"step": {step}}}' in line for step in drop)
    ]
    assert len(kept) == len(log.read_text().splitlines()) - len(drop)
    log.write_text("".join(kept))
    done = run_in_process("import", str(log), "--root", str(tmp_path / "runs"), "--run-id", "nemo")
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "runs" / "nemo"


def _set_info(series: Path, step: int, **values: Any) -> Path:
    path = series / f"step_{step}" / "training_info.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | values))
    return path


def _refused(tmp_path: Path, run: Path, series: Path, *said: str) -> None:
    before = [e.digest for e in read_run(run).events]
    done = run_in_process("import-checkpoints", str(series), "--into", str(run), *SOURCE)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    text = " ".join(done.stderr.split())
    assert len(errors) == 1 and all(s in text for s in said), text
    assert "are not one run" in text, text
    assert [e.digest for e in read_run(run).events] == before  # nothing written, the block_stop where it was


@pytest.mark.parametrize("step", [18, 19])
def test_a_weight_update_after_the_steps_own_tracked_stats_is_refused(step: int, tmp_path: Path) -> None:
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    info = _set_info(series, step, training_step_end_time_ms=nemo_run.update_ms(step) + 30_000)
    run = _training_log(tmp_path, final_step=19)
    _refused(tmp_path, run, series, str(info), f"30.000 s after the training log's tracked_stats of step {step}")


def test_a_final_update_after_the_logs_block_stop_is_refused(tmp_path: Path) -> None:
    """A log whose final tracked_stats was lost (older NeMo-RL dropped it): the block_stop alone dates step 19."""
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    info = _set_info(series, 19, training_step_end_time_ms=nemo_run.update_ms(19) + 30_000)
    run = _training_log(tmp_path, final_step=19, drop=(19,))
    _refused(tmp_path, run, series, str(info), "30.000 s after the training log's block_stop")


def test_an_update_before_the_logs_previous_step_is_refused(tmp_path: Path) -> None:
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    info = _set_info(series, 19, training_step_end_time_ms=nemo_run.update_ms(18))
    run = _training_log(tmp_path, final_step=19)
    _refused(tmp_path, run, series, str(info), "not after the training log's step 18")


def test_samples_that_are_not_the_logs_are_refused(tmp_path: Path) -> None:
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    info = _set_info(series, 18, consumed_samples=18 * nemo_run.PROMPTS + 1)
    run = _training_log(tmp_path, final_step=19)
    _refused(tmp_path, run, series, str(info), "step 18 consumed", "tracked_stats of step 18 says samples_count 4608")


def test_a_step_the_log_spans_but_never_logged_is_refused(tmp_path: Path) -> None:
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    run = _training_log(tmp_path, final_step=20, drop=(18,))
    _refused(tmp_path, run, series, str(series / "step_18" / "training_info.json"), "holds no tracked_stats for")


def test_a_series_longer_than_the_log_is_refused(tmp_path: Path) -> None:
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    run = _training_log(tmp_path, final_step=18)
    _refused(tmp_path, run, series, str(series / "step_19" / "training_info.json"), "ends at step 18 (its block_stop)")


def test_a_final_save_left_out_as_unfinished_moves_no_derived_training_event(tmp_path: Path) -> None:
    """Training ran to step 20; step 20's save never wrote its .metadata: the series ends at step 19, and the
    derived log still holds the log's tracked_stats of step 20 and its block_stop, unmoved."""
    series = mcore_golden.copy_series("dense-tp1", tmp_path / "checkpoints")
    (series / "step_20").mkdir()
    (series / "step_20" / "config.yaml").write_bytes((series / "step_19" / "config.yaml").read_bytes())
    (series / "step_20" / ITERATION).mkdir(parents=True)
    (series / "step_20" / "training_info.json").write_text(
        json.dumps(
            {
                "current_step": 20,
                "consumed_samples": 20 * nemo_run.PROMPTS,
                "training_step_end_time_ms": nemo_run.update_ms(20),
            }
        )
    )
    run = _training_log(tmp_path, final_step=20)
    done = run_in_process("import-checkpoints", str(series), "--into", str(run), *SOURCE)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert any(line.startswith("left out:") and "step_20" in line for line in done.stdout.splitlines()), done.stdout
    script = tmp_path / "my_eval.py"  # the submitter's evaluation: no checkpoint passes
    script.write_text(
        "import json, sys, pathlib\npathlib.Path(sys.argv[2]).write_text(json.dumps({'accuracy': 0.5, 'samples': 251}))\n"
    )
    command = f"{sys.executable} {script} {{checkpoint}} {{out}}"
    task = str(shipped("next-number"))
    done = run_in_process("eval", str(run), "--task", task, "--backend", "command", "--command", command, *SOURCE)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr  # none passes
    done = run_in_process("replay", str(run), "--interpretation", "official")
    assert done.returncode == 0, done.stdout + done.stderr
    derived = mllog(run / "derived" / "result_official.txt")
    training = [x for x in derived if x["key"] in ("tracked_stats", "block_stop")]
    logged = [x for x in mllog(tmp_path / "mlperf_training.log") if x["key"] in ("tracked_stats", "block_stop")]

    def facts(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [(x["key"], x["time_ms"], x["metadata"]["step"], x["metadata"]["samples_count"]) for x in lines]

    assert facts(training) == facts(logged)
    assert training[-1]["key"] == "block_stop" and training[-1]["metadata"]["step"] == 20
    stop = derived[-1]
    assert stop["key"] == "run_stop" and stop["metadata"]["status"] == "aborted"
    assert stop["time_ms"] == nemo_run.update_ms(19)  # the final checkpoint's update, as the rule says
