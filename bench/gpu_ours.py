"""Our trainer's GRPO step at the bench's shapes, driven through its public functions.

`trainer.loop.GRPOTrainer.train_step` cannot be called as is: it hardwires the built-in addition task and
its exact-answer reward (a random 49152-word model never scores, so nothing would train) and builds every
tensor on the CPU. So `step` below makes the same calls in the same order as train_step (rollout,
group_advantages, build_batch, micro-batched token_logprobs + clipped_policy_loss, clip, AdamW, checkpoint
save) with the bench's prompts and reward, and moves the update batch to the model's device.

Generation is trainer.rollout.TorchRollout -> trainer.policy.sampling.generate_ids, unchanged. That sampler builds
its inputs and its Exp(1) noise [B, T, V] (float64) on the CPU and picks tokens there, so the model is
wrapped in `OnDevice` (on the CPU too, so the CPU test covers that path), which moves each call's inputs to
the model's device and the last-position logits back: that cost is part of what the bench measures.

The checkpoint writer fingerprints each snapshot on its shadow model with CPU tensors (a CUDA shadow raises
in its background thread, which then dies and leaves the loop blocked on the next save), so it is given a
float32 CPU copy of the model as its template: its shadow runs on the CPU, in its background thread.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

from gpu_workload import Shapes, reward_text


class OnDevice:
    """Lets the CPU-side sampler drive a model on another device (inputs there, logits back)."""

    def __init__(self, model: Any) -> None:
        import inspect

        self.model = model
        self.device = next(model.parameters()).device
        params = inspect.signature(model.forward).parameters
        self._inner_cache = "cache" if "cache" in params else "past_key_values"
        self.training = model.training

    def eval(self) -> OnDevice:
        self.model.eval()
        self.training = False
        return self

    def train(self, mode: bool = True) -> OnDevice:
        self.model.train(mode)
        self.training = mode
        return self

    def get_output_embeddings(self) -> Any:
        return self.model.get_output_embeddings()

    def forward(self, *, cache: Any = None, **kwargs: Any) -> Any:
        """Named `cache` so the sampler passes transformers 5's argument name; forwarded under the model's."""
        from types import SimpleNamespace

        moved = {k: v.to(self.device) if hasattr(v, "to") and hasattr(v, "device") else v for k, v in kwargs.items()}
        res = self.model(**moved, **{self._inner_cache: cache})
        return SimpleNamespace(logits=res.logits.float().cpu(), cache=getattr(res, self._inner_cache))

    __call__ = forward


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def step(
    model: Any,
    optimizer: Any,
    rollout: Any,
    tok: Any,
    prompts: list[str],
    seeds: list[int],
    shapes: Shapes,
    device: str,
    ckpt: Any,
    step_no: int,
) -> dict[str, Any]:
    """One GRPO step (generation, update, optional checkpoint). -> timings and training facts."""
    import torch

    from trainer.grpo import build_batch, clipped_policy_loss, group_advantages, token_logprobs

    synchronize(device)
    t0 = time.perf_counter()
    completions = rollout.generate(prompts, seeds, temperature=1.0, top_p=1.0, max_new_tokens=shapes.completion_tokens)
    t1 = time.perf_counter()
    rewards = torch.tensor([reward_text(tok.decode(c)) for c in completions])
    advantages = group_advantages(rewards, shapes.generations).to(device)  # [B*G]
    batch = build_batch([[tok.bos_id, *tok.encode(p)] for p in prompts], completions, tok.pad_id)
    inputs, targets, mask = (x.to(device) for x in (batch.inputs, batch.targets, batch.mask))
    total_tokens = int(batch.mask.sum())
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for start in range(0, len(prompts), shapes.micro_batch):
        stop = start + shapes.micro_batch
        logp = token_logprobs(model(input_ids=inputs[start:stop]).logits, targets[start:stop])
        loss = clipped_policy_loss(logp, logp.detach(), advantages[start:stop], mask[start:stop], 0.2, total_tokens)
        loss.backward()
        loss_sum += float(loss.detach())
    grad_norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    optimizer.step()
    synchronize(device)
    update_ns = time.time_ns()
    t2 = time.perf_counter()
    blocked_s = ckpt.save(model, step=step_no, weight_update_ns=update_ns) / 1e9 if ckpt is not None else 0.0
    synchronize(device)
    t3 = time.perf_counter()
    completion_tokens = sum(len(c) for c in completions)
    return {
        "step_s": t3 - t0,
        "generation_s": t1 - t0,
        "update_s": t2 - t1,
        "checkpoint_block_s": blocked_s,
        "loss": loss_sum,
        "reward": float(rewards.mean()),
        "grad_norm": grad_norm,
        "completion_tokens": completion_tokens,
        "train_tokens": total_tokens,
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
    from gpu_workload import build_hf_tokenizer, build_model, prompt_texts

    from trainer.checkpoint import CheckpointWriter
    from trainer.policy.sampling import sample_seed
    from trainer.policy.tokenizer import HFTokenizer
    from trainer.rollout import TorchRollout

    hf_tok = build_hf_tokenizer(shapes)
    tok = HFTokenizer(hf_tok)
    model = build_model(shapes, dtype=dtype, device=device, seed=seed)
    before = {k: v.detach().float().cpu().clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5 if shapes.vocab > 1000 else 1e-3)
    rollout = TorchRollout(OnDevice(model), tok)  # wrapped on the CPU too, so the CPU test runs the GPU path
    ckpt = None
    committed: list[Any] = []
    if mode != "none":
        # The writer's shadow fingerprints with CPU tensors, so it must live on the CPU; float32 there, since
        # CPU bf16 matmuls can be many times slower and the fingerprint's value is not what is measured.
        template = copy.deepcopy(model).to("cpu", torch.float32)
        ckpt = CheckpointWriter(
            workdir / f"ours-{mode}", template, tok, sync=(mode == "sync"), on_commit=committed.append, max_pending=2
        )
        del template
    texts = prompt_texts(shapes, warmup + steps, seed)
    records = []
    for i in range(warmup + steps):
        if deadline is not None and i > warmup and time.perf_counter() > deadline:
            break  # at least one timed step is in; the rest would overrun the bench's budget
        prompts = [p for p in texts[i * shapes.prompts : (i + 1) * shapes.prompts] for _ in range(shapes.generations)]
        seeds = [sample_seed(seed, i + 1, p, g) for p in range(shapes.prompts) for g in range(shapes.generations)]
        records.append(step(model, optimizer, rollout, tok, prompts, seeds, shapes, device, ckpt, i + 1))
    drain_s = 0.0
    if ckpt is not None:
        t = time.perf_counter()
        ckpt.close()  # every write durable before the numbers are trusted
        drain_s = time.perf_counter() - t
    changed = any(not torch.equal(before[k], v.detach().float().cpu()) for k, v in model.state_dict().items())
    timed = records[warmup:]
    return _summary(
        timed,
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
