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
        [path] = list((run / f"eval_results/step_{step:07d}").glob("zero_shot_*/results.json"))
        doc = json.loads(path.read_text())
        assert doc["scores"] == {t: events[(step, t)] for t in ("piqa", "social_iqa")}
        assert doc["holdout"]["mode"] == "fingerprint" and doc["events"]["writer"] == "harness"
        assert (path.parent / "summary.txt").read_text() in done.stdout
