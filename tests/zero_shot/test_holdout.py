"""The holdout check against what the small training run logged: it passes on the checkpoint as trained;
a logged value moved by 0.01 or a swapped tokenizer aborts naming both values and the gap, and of two
checkpoints the one that passes is scored while the other aborts; `record` stores the value; the training
world size comes from the shards and from `source_world_size`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.zero_shot.options import ZeroShotOptions
from evaluator.zero_shot.runner import ZeroShotSummary, zero_shot
from tests.helpers import run_cli
from tests.results_shape import assert_written_in_shape

pytestmark = [pytest.mark.slow]
pytest.importorskip("lm_eval")


def _run(paths: list[Path], hf_cache: Path, **kw: object) -> tuple[ZeroShotSummary, str]:
    lines: list[str] = []
    options = ZeroShotOptions(tasks=("piqa",), limit=1, hf_cache=hf_cache, workers=1, **kw)  # type: ignore[arg-type]
    return zero_shot(paths, options, echo=lines.append), "\n".join(lines)


def _logged(run: Path) -> dict[int, float]:
    return {r["step"]: r["value"] for r in json.loads((run / "tensorboard_scalars.json").read_text())["eval/loss"]}


def _shift(run: Path, step: int, by: float) -> None:
    rows = json.loads((run / "tensorboard_scalars.json").read_text())
    for r in rows["eval/loss"]:
        r["value"] += by if r["step"] == step else 0.0
    (run / "tensorboard_scalars.json").write_text(json.dumps(rows))


def test_a_logged_loss_moved_by_001_aborts_with_both_values_and_the_gap(training: Path, hf_cache: Path) -> None:
    run = training / "run"
    logged = _logged(run)[20]
    _shift(run, 20, 0.01)
    done = run_cli("zero-shot", str(run), "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "holdout check failed" in done.stdout
    assert f"logged {logged + 0.01:.6f}" in done.stdout and "gap 0.0100" in done.stdout
    assert f"recomputed eval/loss {logged:.6f}" in done.stdout
    assert not (run / "eval_results").exists()


def test_of_two_checkpoints_one_passes_and_one_aborts_naming_both_values_and_the_gap(
    training: Path, hf_cache: Path
) -> None:
    run = training / "run"
    logged = _logged(run)
    _shift(run, 20, -0.02)
    out = training / "results"
    paths = [str(run / "snapshots/step_10"), str(run / "snapshots/step_20")]
    done = run_cli("zero-shot", *paths, "--hf-cache", str(hf_cache), "--tasks", "piqa", "--limit", "1", "-o", str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    [failed] = [line for line in done.stdout.splitlines() if "holdout check failed" in line]
    assert failed.startswith("run/step_20: holdout check failed: ")
    assert f"recomputed eval/loss {logged[20]:.6f}" in failed and f"logged {logged[20] - 0.02:.6f}" in failed
    assert "gap 0.0200" in failed and "> 0.005" in failed
    [path] = list(out.glob("*/results.json"))
    doc = json.loads(path.read_text())
    assert doc["label"] == "run/step_10" and doc["holdout"]["passed"]
    assert doc["holdout"]["logged"] == logged[10] and doc["holdout"]["gap"] <= 0.005
    assert [line.split()[0] for line in (path.parent / "summary.txt").read_text().splitlines()] == [
        "checkpoint",
        "run/step_10",
    ]


def test_world_size_from_the_number_of_shards(training: Path, hf_cache: Path) -> None:
    run = training / "run"
    config = json.loads((run / "training.json").read_text())
    (run / "training.json").write_text(json.dumps(config | {"world_size": 1}))  # a stale config: the shards win
    assert json.loads((run / "meta.json").read_text()) == {"step": 20}
    assert len(list(run.glob("__*_0.distcp"))) == 2
    summary, _ = _run([run], hf_cache)
    [doc] = summary.docs
    assert doc.checkpoint.train_world_size == 2 and doc.holdout["world_size"] == 2
    assert doc.holdout["passed"], doc.holdout
    [written] = summary.written
    assert_written_in_shape(written, "zero_shot")


def test_a_swapped_tokenizer_aborts(training: Path, hf_cache: Path) -> None:
    run = training / "run"
    file = run / "tokenizer/tokenizer.json"
    tok = json.loads(file.read_text())
    file.write_text(json.dumps(tok | {"chars": tok["chars"][::-1]}))
    summary, out = _run([run], hf_cache)
    # the label names the run by its path from the root (two runs' checkpoints never share one)
    assert [label.rsplit("/", 1)[-1] for label in summary.failed] == ["run"] and summary.written == []
    assert "holdout check failed" in out and f"logged {_logged(run)[20]:.6f}" in out


def test_the_check_passes_against_tensorboards_event_file(training: Path, hf_cache: Path) -> None:
    run = training / "run"
    logged = _logged(run)[20]
    (run / "tensorboard_scalars.json").unlink()
    summary, _ = _run([run / "snapshots/step_20"], hf_cache)
    [doc] = summary.docs
    check = doc.holdout
    assert check["source"] == str(run / "tb") and check["passed"]
    assert check["logged"] == pytest.approx(logged, abs=1e-6)  # TensorBoard keeps float32
    assert check["world_size"] == 2 and doc.checkpoint.train_world_size == 2  # the snapshot's meta


def test_record_stores_the_loss_of_a_checkpoint_between_logged_evaluations(training: Path, hf_cache: Path) -> None:
    run = training / "run"
    logged = _logged(run)[10]
    rows = {"eval/loss": [{"step": 20, "value": _logged(run)[20]}]}  # step 10 not logged
    (run / "tensorboard_scalars.json").write_text(json.dumps(rows))
    summary, _ = _run([run / "snapshots/step_10"], hf_cache, holdout="record")
    [path] = summary.written
    check = json.loads(path.read_text())["holdout"]
    assert check["mode"] == "record" and "logged" not in check
    assert check["recomputed"] == pytest.approx(logged, abs=1e-6)
    assert path.parent.parent == run / "eval_results/step_0000010"


def test_world_size_from_source_world_size_of_a_consolidated_archive(training: Path, hf_cache: Path) -> None:
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from_keys

    archive, single = training / "fsdp2_epoch_1", training / "consolidated"
    state = _load_state_dict_from_keys(checkpoint_id=str(archive))
    dcp.save(state, checkpoint_id=str(single), no_dist=True)  # one shard, as a one-process resave writes
    assert sorted(p.name for p in single.glob("*.distcp")) == ["__0_0.distcp"]
    (single / "final_meta.json").write_text((archive / "final_meta.json").read_text())
    summary, _ = _run([single], hf_cache)
    [doc] = summary.docs
    assert doc.checkpoint.train_world_size == 2 and doc.holdout["passed"]
    # the packing depends on it: the same weights at world size 1 miss the logged value
    summary, out = _run([single], hf_cache, train_world_size=1)
    assert [label.rsplit("/", 1)[-1] for label in summary.failed] == ["consolidated"] and "holdout check failed" in out
