"""Our trainer's GRPO step at the bench's shapes: `trainer.loop.GRPOTrainer.train_step`, called as is.

The bench brings its own model (bench/gpu_workload.py), tokenizer and task (its word-parity reward: a random
49152-word model never solves the addition task, so nothing would train); the trainer takes them in place of
what its config names and runs on the config's `device` and `dtype`. `checkpoint_due` is widened to every
step for the async and sync modes (the trainer itself saves from the validation start on).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gpu_workload import Shapes, prompt_texts, reward_text

from trainer.loop import GRPOTrainer
from trainer.training_task import Problem


class WordParityTask:
    """The bench's prompts, step by step, rewarded by `reward_text`."""

    def __init__(self, shapes: Shapes, steps: int, seed: int) -> None:
        self.texts = prompt_texts(shapes, steps, seed)

    def problems(self, seed: int, step: int, n: int) -> list[Problem]:
        return [Problem(t, "") for t in self.texts[(step - 1) * n : step * n]]

    def reward(self, problem: Problem, completion: str) -> float:
        return reward_text(completion)


class BenchTrainer(GRPOTrainer):
    """Our trainer, checkpointing at every step unless the mode is `none`."""

    def __init__(self, *args: Any, save_every_step: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.save_every_step = save_every_step

    def checkpoint_due(self, step: int) -> bool:
        return self.save_every_step


def bench_trainer(
    shapes: Shapes, *, model: Any, tok: Any, steps: int, device: str, dtype: Any, workdir: Path, seed: int, mode: str
) -> BenchTrainer:
    """A set-up trainer (run directory under `workdir`) for `steps` steps of the bench's work."""
    import torch

    from trainer.config import load_config
    from trainer.policy.tokenizer import HFTokenizer

    sets = [
        f"seed={seed}",
        f"num_prompts_per_step={shapes.prompts}",
        f"num_generations_per_prompt={shapes.generations}",
        f"micro_batch_size={shapes.micro_batch}",
        "updates_per_rollout=1",  # TRL's GRPOTrainer (num_iterations=1): one optimizer step per rollout batch
        f"max_new_tokens={shapes.completion_tokens}",
        f"learning_rate={5e-5 if shapes.vocab > 1000 else 1e-3}",
        f"device={device}",
        f"dtype={'bf16' if dtype == torch.bfloat16 else 'fp32'}",
        f"threads={torch.get_num_threads()}",
        "rollout=torch",
        "warmup.enabled=false",
        f"checkpoint.sync={'true' if mode == 'sync' else 'false'}",
    ]
    trainer = BenchTrainer(
        load_config(sets=sets),
        root=workdir,
        run_id=f"ours-{mode}",
        model=model,
        tokenizer=HFTokenizer(tok),
        task=WordParityTask(shapes, steps, seed),
        save_every_step=mode != "none",
    )
    trainer.setup()
    return trainer


def step_record(r: Any) -> dict[str, Any]:
    """A StepResult in the bench's terms."""
    return {
        "step_s": r.step_s,
        "generation_s": r.generation_s,
        "update_s": r.train_s + r.refit_s,
        "checkpoint_block_s": r.checkpoint_block_s,
        "loss": r.loss,
        "reward": r.reward,
        "grad_norm": r.grad_norm,
        "completion_tokens": r.tokens,
    }


def run(
    shapes: Shapes,
    *,
    mode: str,
    steps: int,
    warmup: int,
    device: str,
    dtype: Any,
    workdir: Path,
    seed: int = 0,
    deadline: float | None = None,
) -> dict[str, Any]:
    """`warmup + steps` steps of our trainer with checkpointing `mode` (none, async, sync) at every step, fewer
    timed steps (at least one) once time.perf_counter() passes `deadline`. -> one result record (means over
    the timed steps)."""
    import torch
    from gpu_workload import build_hf_tokenizer, build_model

    model = build_model(shapes, dtype=dtype, device=device, seed=seed)
    before = {k: v.detach().float().cpu().clone() for k, v in model.state_dict().items()}
    trainer = bench_trainer(
        shapes,
        model=model,
        tok=build_hf_tokenizer(shapes),
        steps=warmup + steps,
        device=device,
        dtype=dtype,
        workdir=workdir,
        seed=seed,
        mode=mode,
    )
    records = []
    for i in range(warmup + steps):
        if deadline is not None and i > warmup and time.perf_counter() > deadline:
            break  # at least one timed step is in; the rest would overrun the bench's budget
        records.append(step_record(trainer.train_step(i + 1)))
    assert trainer.ckpt is not None
    t = time.perf_counter()
    trainer.ckpt.close()  # every write durable (and committed) before the numbers are trusted
    drain_s = time.perf_counter() - t if mode != "none" else 0.0
    trainer.cleanup("completed", "")
    committed = trainer.summary.checkpoints
    changed = any(not torch.equal(before[k], v.detach().float().cpu()) for k, v in model.state_dict().items())
    return _summary(
        records[warmup:],
        mode=mode,
        changed=changed,
        steps_planned=steps,
        committed=len(committed),
        drain_s=drain_s,
        checkpoint_bytes=committed[-1].bytes if committed else 0,
    )


def _summary(timed: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    import math

    n = len(timed)
    mean = {k: sum(r[k] for r in timed) / n for k in ("step_s", "generation_s", "update_s", "checkpoint_block_s")}
    tokens = sum(r["completion_tokens"] for r in timed)
    losses = [r["loss"] for r in timed]
    return {
        **mean,
        "steps": n,
        "completion_tokens_per_s": tokens / sum(r["step_s"] for r in timed),
        "completion_tokens_per_step": tokens / n,
        "loss": losses,
        "loss_finite": all(map(math.isfinite, losses)),
        "reward": [r["reward"] for r in timed],
        "grad_norm": [r["grad_norm"] for r in timed],
        "step_s_all": [r["step_s"] for r in timed],
        "weights_changed": extra.pop("changed"),
        **extra,
    }
