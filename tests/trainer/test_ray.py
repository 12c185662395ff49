"""The --ray path: rollout workers as Ray actors on the session's local cluster give the torch backend's
completions bit for bit (per-sample seeds), and a GRPO step over them matches the in-process one."""

import pytest
import torch

from trainer.config import load_config
from trainer.loop import GRPOTrainer
from trainer.policy.model import ModelConfig, build_model, build_tokenizer
from trainer.policy.sampling import sample_seed
from trainer.policy.task import validation_tasks
from trainer.rollout import RayRollout, TorchRollout

SMALL = ModelConfig(hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64)


@pytest.mark.slow  # three actors each import torch; the default tier's GRPO-step test below refits over Ray too
def test_ray_workers_match_torch_and_follow_refits(ray_cluster):
    model, tok = build_model(SMALL), build_tokenizer(SMALL)
    prompts = [t.prompt for t in validation_tasks()[:24]]
    seeds = [sample_seed("ray", i) for i in range(24)]
    kw = dict(temperature=1.0, top_p=1.0, max_new_tokens=4)
    local, remote = TorchRollout(model, tok), RayRollout(model, tok, workers=3, address=None)
    try:
        before = remote.generate(prompts, seeds, **kw)
        assert before == local.generate(prompts, seeds, **kw)
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1.5)
        remote.refit(model)
        after = remote.generate(prompts, seeds, **kw)
        assert after == local.generate(prompts, seeds, **kw) and after != before
    finally:
        remote.close()
    import ray

    assert ray.is_initialized()  # the shared session cluster survives a backend's close


def test_grpo_steps_over_ray_match_torch(ray_cluster, tmp_path):
    cfg = load_config(sets=["warmup.enabled=false", "num_prompts_per_step=4", "micro_batch_size=32"])
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
