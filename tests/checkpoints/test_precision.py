"""The rule's precision: a bf16 run's checkpoints are evaluated in bf16 by default, and results.json and
eval_result say so with the device they ran on; --dtype fp32 is allowed, marked as not the rule's
precision, and named by verify's eval-precision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from evaluator.session import evaluate_run
from evaluator.settings import Options
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from tests.helpers import run_cli
from tests.kit import synthetic

STEP = 18  # GBS 256: the validation start


def _bf16_checkpoint(run: RunDir, step: int, update: int) -> dict[str, Any]:
    """The trainer's own checkpoint of a dtype=bf16 run: bf16 weights, fingerprinted as the trainer does."""
    from recorder.checkpoints.fingerprint import fingerprint_record
    from recorder.checkpoints.recorder_format import write_checkpoint
    from trainer.policy.model import ModelConfig, build_model
    from trainer.policy.tokenizer import CharTokenizer

    model = build_model(ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64))
    model.lm_head.weight.data.mul_(40.0)
    model = model.to(torch.bfloat16)
    tok = CharTokenizer()
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    directory = run.path / f"checkpoints/step_{step:07d}"
    directory.parent.mkdir(parents=True, exist_ok=True)
    sha, size = write_checkpoint(
        directory,
        tensors,
        config_json=model.config.to_json_string(),
        tokenizer_json=tok.to_json(),
        weight_update_ns=update,
        step=step,
    )
    fp = fingerprint_record(model, tok)
    return {"sha256": sha, "bytes": size, "fingerprint": fp, "format": "safetensors", "dtype": "bfloat16"}


def _run(tmp_path: Path) -> RunDir:
    return synthetic.record_run(
        tmp_path, "bf16", gbs=256, steps=STEP, target=-1.0, eval_samples=2, eval_max_new_tokens=2,
        checkpoint_data=_bf16_checkpoint,
    )  # fmt: skip


def _results(run: RunDir) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((run.path / "derived" / "evals" / f"step_{STEP:07d}" / "results.json").read_text())
    return doc


def test_a_bf16_run_is_evaluated_in_bf16_on_the_cpu_by_default(tmp_path: Path) -> None:
    run = _run(tmp_path)
    summary = evaluate_run(run.path, Options())
    assert [o.status for o in summary.outcomes] == ["scored"]
    backend = _results(run)["backend"]
    assert (backend["dtype"], backend["device"], backend["rollout_dtype"], backend["rule_precision"]) == (
        "bf16", "cpu", "bf16", True
    )  # fmt: skip
    (result,) = [e for e in read_run(run).events if e.kind == "eval_result"]
    assert (result.data["dtype"], result.data["device"]) == ("bf16", "cpu")
    assert "cuda" not in json.dumps(_results(run)["backend"])
    assert verify_run(run.path).ok


def test_fp32_is_allowed_marked_and_named_by_verify(tmp_path: Path) -> None:
    run = _run(tmp_path)
    evaluate_run(run.path, Options(dtype="fp32"))
    backend = _results(run)["backend"]
    assert (backend["dtype"], backend["rule_precision"]) == ("fp32", False)
    found = verify_run(run.path)
    assert not found.ok and "eval-precision" in str(found.problems)
    done = run_cli("verify", str(run.path))  # a breach of the rule, said as such: nothing was altered
    assert done.returncode == 1 and "ALTERED" not in done.stdout, done.stdout
    assert "BREACH: " in done.stdout and "[rule eval-precision]" in done.stdout.replace("\n", ""), done.stdout
    assert done.stdout.splitlines()[-1].startswith("verify: BREACH (")
