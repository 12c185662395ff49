"""Learning is real (slow): over 5 seeds the warm-up init scores below the target on the validation set and
at least 4 runs have a checkpoint above it by the final step. Prints each seed's curve."""

import json

import pytest

from recorder.reader import read_run
from trainer.config import load_config
from trainer.loop import GRPOTrainer
from trainer.policy.checkpoint_files import load_checkpoint
from trainer.policy.task import validation_tasks
from trainer.warmup import pass_at_k

TARGET = 0.69


def _score(model, tok):
    # salt "eval": the evaluator's per-sample seeds (evaluator/passk.py), so these are its numbers.
    return pass_at_k(model, tok, validation_tasks(), k=4, temperature=0.1, top_p=0.95, max_new_tokens=5, salt="eval")


@pytest.mark.slow
def test_five_seeds_cross_the_target(tmp_path):
    from safetensors.torch import load_file

    curves = {}
    for seed in range(5):
        summary = GRPOTrainer(load_config(sets=[f"seed={seed}"]), root=tmp_path, run_id=f"seed{seed}").run()
        model, tok = load_checkpoint(summary.checkpoints[0].path)
        model.load_state_dict(load_file(f"{summary.warmup.cache_path}/model.safetensors"))
        init = _score(model, tok)
        scores = {c.step: _score(*load_checkpoint(c.path)) for c in summary.checkpoints}
        rewards = [round(e.data["reward"], 3) for e in read_run(summary.run.path).events if e.kind == "step_metrics"]
        curves[seed] = {
            "init": init,
            "checkpoints": scores,
            "train_reward": rewards,
            "warmup_batches": summary.warmup.batches,
            "dev": summary.warmup.dev_accuracy,
        }
        print(f"seed {seed}: " + json.dumps(curves[seed]), flush=True)
    assert all(c["init"] < TARGET for c in curves.values()), curves
    crossed = [s for s, c in curves.items() if max(c["checkpoints"].values()) > TARGET]
    assert len(crossed) >= 4, curves
