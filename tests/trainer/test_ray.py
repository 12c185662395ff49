"""The --ray path: a GRPO step over Ray rollout workers matches the in-process one (that the workers give the
torch backend's completions bit for bit, before and after refits, is the rollout contract's:
tests/contract/test_rollouts.py)."""

import pytest

from trainer.config import load_config
from trainer.loop import GRPOTrainer
from trainer.policy.model import ModelConfig

SMALL = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)


def test_grpo_steps_over_ray_match_torch(ray_cluster, tmp_path):
    cfg = load_config(
        sets=["warmup.enabled=false", "num_prompts_per_step=4", "num_generations_per_prompt=16", "micro_batch_size=32"]
    )
    results = {}
    for use_ray in (False, True):
        t = GRPOTrainer(cfg, root=tmp_path, run_id=f"ray-{use_ray}", use_ray=use_ray, model_cfg=SMALL)
        t.setup()
        try:
            results[use_ray] = [t.train_step(s) for s in (1, 2)]
        finally:
            t.cleanup("completed", "")
    for a, b in zip(results[False], results[True], strict=False):
        assert (a.reward, a.tokens) == (b.reward, b.tokens)
        assert a.loss == pytest.approx(b.loss, abs=1e-6)
