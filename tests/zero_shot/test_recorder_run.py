"""`recorder zero-shot` on a run `recorder train` made: its committed checkpoints scored by the harness
session, recorded as eval events (writer "harness", key = lm-eval's task name), with a zero-shot result
per step under the run's eval_results."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from recorder.reader import read_run
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
