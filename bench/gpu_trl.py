"""TRL's GRPOTrainer on the bench's workload: the peer our step is measured against.

Settings match our step: beta 0 (no reference model), no vLLM (transformers `generate`), one update per
generation batch (generation batch = global batch, micro-batches by gradient accumulation), temperature 1,
top_p 1, constant learning rate, clip 0.2, gradient clipping at 1.0, no activation checkpointing (TRL's
default recomputes activations; ours does not), no checkpoints. Step time is
on_step_begin -> on_step_end (generation happens inside it), with the device synchronised at both ends.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gpu_workload import Shapes, trl_reward


def run(
    shapes: Shapes, *, steps: int, warmup: int, device: str, dtype: Any, workdir: Path, seed: int = 0
) -> dict[str, Any]:
    """`warmup + steps` TRL GRPO steps. -> one result record (means over the timed steps)."""
    import math

    import torch
    from gpu_workload import build_hf_tokenizer, build_model
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    class Timer(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.begin = 0.0
            self.step_s: list[float] = []
            self.logs: list[dict[str, float]] = []

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync()
            self.begin = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            sync()
            self.step_s.append(time.perf_counter() - self.begin)

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                self.logs.append(dict(logs))

    total = warmup + steps
    tok = build_hf_tokenizer(shapes)
    model = build_model(shapes, dtype=dtype, device=device, seed=seed)
    before = {k: v.detach().float().cpu().clone() for k, v in model.state_dict().items()}
    data = prompt_dataset(shapes, total, seed)
    args = grpo_config(shapes, steps=total, device=device, dtype=dtype, workdir=workdir, seed=seed)
    timer = Timer()
    trainer = GRPOTrainer(
        model=model, reward_funcs=trl_reward, args=args, train_dataset=data, processing_class=tok, callbacks=[timer]
    )
    trainer.train()
    after = trainer.model.state_dict()  # TRL 1.16: the policy is `model` again
    changed = any(not torch.equal(before[k], after[k].detach().float().cpu()) for k in before)
    timed = timer.step_s[warmup:]
    logs = timer.logs[warmup:] if len(timer.logs) == len(timer.step_s) else timer.logs
    tokens = [log.get("completions/mean_length", float("nan")) * shapes.global_batch for log in logs]
    losses = [float(log["loss"]) for log in logs]
    mean_step = sum(timed) / len(timed)
    return {
        "step_s": mean_step,
        "steps": len(timed),
        "completion_tokens_per_step": sum(tokens) / len(tokens),
        "completion_tokens_per_s": sum(tokens) / len(tokens) / mean_step,
        "loss": losses,
        "loss_finite": all(map(math.isfinite, losses)),
        "reward": [log.get("reward") for log in logs],
        "step_s_all": timed,
        "weights_changed": changed,
    }


def prompt_dataset(shapes: Shapes, steps: int, seed: int) -> Any:
    """The bench's prompts as TRL's dataset (TRL adds no <bos> to plain text: it is the first word)."""
    from datasets import Dataset
    from gpu_workload import BOS, prompt_texts

    return Dataset.from_dict({"prompt": [f"{BOS} {t}" for t in prompt_texts(shapes, steps, seed)]})


def grpo_config(shapes: Shapes, *, steps: int, device: str, dtype: Any, workdir: Path, seed: int) -> Any:
    """TRL's settings for the same work as our step (see the module docstring)."""
    import torch
    from trl import GRPOConfig

    total = steps
    accumulation = shapes.global_batch // shapes.micro_batch
    return GRPOConfig(
        output_dir=str(workdir / "trl"),
        max_steps=total,
        per_device_train_batch_size=shapes.micro_batch,
        gradient_accumulation_steps=accumulation,
        generation_batch_size=shapes.global_batch,
        num_generations=shapes.generations,
        max_completion_length=shapes.completion_tokens,
        beta=0.0,
        use_vllm=False,
        num_iterations=1,
        epsilon=0.2,
        temperature=1.0,
        top_p=1.0,
        learning_rate=5e-5 if shapes.vocab > 1000 else 1e-3,
        lr_scheduler_type="constant",
        warmup_steps=0,
        max_grad_norm=1.0,
        shuffle_dataset=False,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        bf16=(dtype == torch.bfloat16 and device != "cpu"),
        use_cpu=(device == "cpu"),
        seed=seed,
        dataloader_num_workers=0,
        disable_dropout=True,
        gradient_checkpointing=False,
    )  # TRL 1.16 defaults to True; ours keeps activations, so the same work
