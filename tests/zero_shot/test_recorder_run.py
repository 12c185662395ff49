"""`recorder zero-shot` on a run `recorder train` made: its committed checkpoints scored by the harness
session, recorded as eval events (writer "harness", key = lm-eval's task name), with a zero-shot result
per step under the run's eval_results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from recorder.store.reader import read_run
from tests.helpers import run_cli
from tests.results_shape import assert_written_in_shape

pytestmark = [pytest.mark.slow]
pytest.importorskip("lm_eval")


def test_a_recorder_run_is_scored_and_recorded_as_events(trained_run: Path, tmp_path: Path, hf_cache: Path) -> None:
    run = tmp_path / trained_run.name
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("derived"))
    for seg in [*run.glob("events/evaluator-*.arrows"), *run.glob("events/harness-*.arrows")]:
        seg.unlink()
    done = run_cli("zero-shot", str(run), "--hf-cache", str(hf_cache), "--tasks", "piqa,siqa", "--limit", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    events = {
        (e.step, e.key): e.value for e in read_run(run).events if e.kind == "eval_result" and e.writer == "harness"
    }
    assert set(events) == {(s, t) for s in (18, 19) for t in ("piqa", "social_iqa")}
    for step in (18, 19):
        [path] = list((run / f"eval_results/step_{step:07d}").glob("official_lmeval7_*/results.json"))
        doc = json.loads(path.read_text())
        assert doc["scores"] == {t: events[(step, t)] for t in ("piqa", "social_iqa")}
        assert doc["holdout"]["mode"] == "fingerprint" and doc["events"]["writer"] == "harness"
        assert (path.parent / "summary.txt").read_text() in done.stdout
        assert_written_in_shape(path, "zero_shot_step")
    table = (path.parent / "summary.txt").read_text()

    again = run_cli("zero-shot", str(run), "--hf-cache", str(hf_cache), "--tasks", "piqa,siqa", "--limit", "2")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "scored earlier: piqa" in again.stdout and table in again.stdout  # the same table, nothing rescored
    assert len(list(run.glob("eval_results/step_*/official_lmeval7_*"))) == 2


def test_an_imported_series_is_scored_with_the_spec_it_was_fingerprinted_with(tmp_path: Path, hf_cache: Path) -> None:
    from tests.evaluator.test_nemo_end_to_end import import_nemo_run
    from tests.kit import sample_series
    from trainer.policy.taskspec import shipped

    series = sample_series.write_series(tmp_path / "checkpoints", {s: sample_series.update_ms(s) for s in (18, 19)})
    spec = shipped("next-number")
    run = import_nemo_run(tmp_path, series, spec, steps=(18, 19))
    args = ["--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "2"]
    refused = run_cli("zero-shot", str(run), *args)
    assert refused.returncode == 1 and "pass --task with the spec it was recorded with" in refused.stdout
    done = run_cli("zero-shot", str(run), *args, "--task", str(spec))
    assert done.returncode == 0, done.stdout + done.stderr
    events = [e for e in read_run(run).events if e.kind == "eval_result" and e.writer == "harness"]
    assert sorted((e.step, e.key) for e in events) == [(18, "piqa"), (19, "piqa")]
    for step in (18, 19):
        [path] = list((run / f"eval_results/step_{step:07d}").glob("official_lmeval7_*/results.json"))
        assert json.loads(path.read_text())["tasks"]["piqa"]["n"] == 2


def _fresh_copy(trained_run: Path, tmp_path: Path) -> Path:
    run = tmp_path / trained_run.name
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("derived"))
    for seg in [*run.glob("events/evaluator-*.arrows"), *run.glob("events/harness-*.arrows")]:
        seg.unlink()
    return run


def test_the_recorders_own_step_directory_is_scored_as_its_runs_step_with_its_check(
    trained_run: Path, tmp_path: Path, hf_cache: Path
) -> None:
    """The holdout check of a recorder checkpoint is the fingerprint its training recorded: no training
    config is asked for, and the step's scores are the run's eval events."""
    run = _fresh_copy(trained_run, tmp_path)
    step = run / "checkpoints/step_0000018"
    done = run_cli("zero-shot", str(step), "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    events = [e for e in read_run(run).events if e.kind == "eval_result" and e.writer == "harness"]
    assert [(e.step, e.key) for e in events] == [(18, "piqa")]
    [path] = list((run / "eval_results/step_0000018").glob("official_lmeval7_*/results.json"))
    doc = json.loads(path.read_text())
    assert doc["holdout"]["mode"] == "fingerprint" and doc["scores"] == {"piqa": events[0].value}


def test_steps_scored_by_eval_harness_are_shown_as_scored_earlier(trained_run: Path, tmp_path: Path) -> None:
    from evaluator.harness.taskset import SHIPPED_DATA

    run = _fresh_copy(trained_run, tmp_path)
    data = ["--tasks", "piqa", "--data-dir", str(SHIPPED_DATA)]
    scored = run_cli("eval", str(run), "--harness", "lm-eval", *data)
    assert scored.returncode == 0, scored.stdout + scored.stderr
    values = {e.step: e.value for e in read_run(run).events if e.kind == "eval_result" and e.writer == "harness"}
    done = run_cli("zero-shot", str(run), *data)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line.split() for line in done.stdout.splitlines() if line.startswith(f"{run.name}/")]
    rows = {cells[0]: cells[2] for cells in lines if not cells[0].endswith(":")}  # the table's, not the log's
    assert rows == {f"{run.name}/step_{s}": f"{values[s]:.4f}" for s in (18, 19)}, done.stdout
    assert done.stdout.count("scored earlier: piqa") == 2
    assert not list(run.glob("eval_results/step_*/official_lmeval7_*"))  # nothing written for them
