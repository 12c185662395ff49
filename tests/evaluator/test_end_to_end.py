"""Train (embedded default) -> eval -> replay --check; run_stop carries the passing checkpoint's weight update."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from recorder.store.reader import read_run
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def evaluated_run(trained_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the session's default trained run (tests/conftest.py), evaluated by `recorder eval`."""
    source = Path(trained_run)
    run = tmp_path_factory.mktemp("e2e") / source.name
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("derived"))
    for seg in (run / "events").glob("evaluator-*.arrows"):
        seg.unlink()
    done = run_cli("eval", str(run))
    assert done.returncode == 0, done.stdout + done.stderr
    return run


def test_eval_then_replay_check_passes(evaluated_run: Path) -> None:
    done = run_cli("replay", str(evaluated_run), "--ruleset", "6.1.0", "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compliance checker" in done.stdout and "PASSED" in done.stdout


def test_run_stop_is_the_passing_checkpoints_weight_update(evaluated_run: Path) -> None:
    events = read_run(evaluated_run).events
    opened = next(e for e in events if e.kind == "run_opened")
    target = opened.data["config"]["eval"]["target"]
    results = [e for e in events if e.kind == "eval_result" and e.key == "accuracy"]
    passing = next(e for e in results if e.value > target)  # first passing in evaluation order
    update = next(e for e in events if e.kind == "weight_update" and e.step == passing.step)
    committed = next(e for e in events if e.kind == "checkpoint_committed" and e.step == passing.step)
    assert committed.data["weight_update_ns"] == update.time_ns
    mllog = (evaluated_run / "derived" / "result_official.txt").read_text().splitlines()
    last = json.loads(mllog[-1].split(":::MLLOG ", 1)[1])
    assert last["key"] == "run_stop" and last["metadata"]["status"] == "success"
    assert last["time_ms"] == update.time_ns // 1_000_000
    assert last["metadata"]["samples_count"] == passing.samples_count
    evals = [json.loads(x.split(":::MLLOG ", 1)[1]) for x in mllog if '"eval_accuracy"' in x]
    assert evals[-1]["value"] == passing.value
    assert all(
        json.loads(x.split(":::MLLOG ", 1)[1])["time_ms"] > last["time_ms"] for x in mllog if '"key": "eval_stop"' in x
    )  # evaluations run after the weight update run_stop carries


def _scored_bits(evaluated_run: Path, tmp_path: Path, settings: list[tuple[int, int]]) -> dict[tuple[int, int], Any]:
    """(score, completion hashes) of the first evaluated step, re-evaluated per (batch size, workers)."""
    from evaluator.order import parse_order
    from evaluator.session import evaluate_run
    from evaluator.settings import Options

    step = next(e.step for e in read_run(evaluated_run).events if e.kind == "eval_result")
    seen = {}
    for batch, workers in settings:
        run = tmp_path / f"b{batch}w{workers}" / evaluated_run.name
        shutil.copytree(evaluated_run, run, ignore=shutil.ignore_patterns("derived", "evaluator-*"))
        s = evaluate_run(run, Options(order=parse_order(str(step)), batch_size=batch, workers=workers, tasks=64))
        doc = json.loads((run / str(s.outcomes[0].results)).read_text())
        seen[(batch, workers)] = (doc["score"], [x["completion_sha256"] for x in doc["samples"]])
    reference = seen[settings[0]]
    assert 0.3 < reference[0] < 1.0  # a trained model: completions are right and wrong, the test can fail
    return seen


def test_trained_model_scores_the_same_bits_for_any_batch_size(evaluated_run: Path, tmp_path: Path) -> None:
    seen = _scored_bits(evaluated_run, tmp_path, [(64, 1), (1, 1), (7, 1)])
    for key, value in seen.items():
        assert value == seen[(64, 1)], f"batch size {key[0]} differs"


@pytest.mark.slow  # two Ray actors each import torch; test_invariance.py holds the default tier's Ray case
def test_trained_model_scores_the_same_bits_with_two_ray_workers(
    evaluated_run: Path, tmp_path: Path, ray_cluster: None
) -> None:
    seen = _scored_bits(evaluated_run, tmp_path, [(7, 1), (7, 2)])
    assert seen[(7, 2)] == seen[(7, 1)]


@pytest.mark.parametrize("change", ["tokenizer", "config"])
def test_trained_checkpoint_with_another_tokenizer_or_config_is_refused(
    trained_run: Path, tmp_path: Path, change: str
) -> None:
    from evaluator.errors import UnverifiedRunError
    from evaluator.order import parse_order
    from evaluator.session import evaluate_run
    from evaluator.settings import Options

    run = tmp_path / Path(trained_run).name
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("derived", "evaluator-*"))
    step = min(e.step for e in read_run(run).events if e.kind == "checkpoint_committed")
    cp = run / "checkpoints" / f"step_{step:07d}"
    name, key = ("tokenizer.json", "chars") if change == "tokenizer" else ("config.json", "rms_norm_eps")
    doc = json.loads((cp / name).read_text())
    doc[key] = doc[key][1] + doc[key][0] + doc[key][2:] if change == "tokenizer" else doc[key] * 1000
    (cp / name).write_text(json.dumps(doc))
    only = parse_order(str(step))
    # The commit hashes config.json and the tokenizer, so verify refuses the run before any model loads ...
    with pytest.raises(UnverifiedRunError, match=rf"{name} is missing or not the committed one \[rule commit-files\]"):
        evaluate_run(run, Options(order=only, tasks=8))
    # ... and under --force the fingerprint still catches what the swap changes.
    refused = evaluate_run(run, Options(order=only, tasks=8, force=True))
    assert [(o.step, o.status, o.error) for o in refused.outcomes] == [(step, "failed", "FingerprintMismatchError")]
    assert "the weights, tokenizer or code differ" in refused.outcomes[0].reason
    lenient = evaluate_run(run, Options(order=only, tasks=8, force=True, fingerprint_tolerance=1e9))
    assert [o.status for o in lenient.outcomes] == ["scored"]  # --fingerprint-tolerance is what decides
