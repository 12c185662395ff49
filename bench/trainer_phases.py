"""Where a step of bench/trainer_vs_trl.py goes at the bench's shapes, in CPU seconds (one thread), cheaply.

    python bench/trainer_phases.py [--layers 30]

The parts, on one SmolLM2-135M-shaped random model, batch 8 prompts x 8 generations: our rollout
(`generate_ids`: static cache, hashed noise, token choice on the device) and Hugging Face's `generate` (TRL's
rollout), each for 1 and 5 new tokens (the difference is 4 decode steps), and one forward + backward of a
training micro-batch (the same arithmetic in both trainers). CPU time, so the estimate holds up on a loaded
machine better than wall time; it runs in a few minutes where the full bench takes many. The last line is
one JSON object.

`StepPhases` is the other half: the wall seconds of each part of the bench's own steps, measured inside
bench/trainer_vs_trl.py for both trainers (its phase table).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


PHASES = ("generation", "scoring", "forward and loss", "backward", "optimizer", "other")
DECODE = "decode forward"  # a part of generation


class StepPhases:
    """Wall seconds of each part of a training step, per trainer, from wrappers around the calls both make.

    - generation: our sampler (`StepResult.generation_s`) or TRL's `_generate` (transformers `generate`);
      within it, decode forward: the model's one-token calls (hooks; on our side, where the sampling threads
      each decode their rows, their summed seconds over the number of threads);
    - scoring: TRL's `_generate_and_score_completions` beyond generation (rewards, advantages, old
      log-probs when it computes them); ours scores inside its update (counted under forward and loss);
    - backward: `torch.autograd.backward` (both trainers reach it through `Tensor.backward`); optimizer: the
      optimizer's `step` (torch's global step hooks); forward and loss: TRL's `compute_loss`, and on our side
      the update less its backward and optimizer (our fused head computes its input gradients in the
      forward, so some of the backward's arithmetic is counted here);
    - other: the step less all of these (TRL's accelerate, logging and callbacks; our refit and bookkeeping).

    Only the main thread's calls are timed, and only while `side` names a trainer."""

    def __init__(self) -> None:
        import torch
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self.side: str | None = None
        self.step: dict[str, float] = {}  # the step in progress
        self.total: dict[str, dict[str, float]] = {}
        self.steps: dict[str, int] = {}
        self._optimizer_began = 0.0
        inner_backward = torch.autograd.backward

        def backward(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return inner_backward(*args, **kwargs)
            finally:
                self.add("backward", time.perf_counter() - t)

        torch.autograd.backward = backward  # Tensor.backward looks it up at each call
        register_optimizer_step_pre_hook(self._optimizer_pre)
        register_optimizer_step_post_hook(self._optimizer_post)

    def _optimizer_pre(self, *_: Any) -> None:
        self._optimizer_began = time.perf_counter()

    def _optimizer_post(self, *_: Any) -> None:
        self.add("optimizer", time.perf_counter() - self._optimizer_began)

    def add(self, phase: str, seconds: float) -> None:
        if self.side is not None and threading.current_thread() is threading.main_thread():
            self.step[phase] = self.step.get(phase, 0.0) + seconds

    def timed(self, call: Callable[..., Any], phase: str) -> Callable[..., Any]:
        """`call`, with its wall seconds added to `phase` of the current side."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.add(phase, time.perf_counter() - t)

        return wrapper

    def time_decode_forwards(self, model: Any, during: Callable[[], bool]) -> None:
        """Add `model`'s one-token forward calls made while `during()` to decode forward (main thread)."""
        began: list[float] = []

        def before(module: Any, args: Any, kwargs: Any) -> None:
            began[:] = [time.perf_counter()]

        def after(module: Any, args: Any, kwargs: Any, out: Any) -> None:
            ids = kwargs.get("input_ids")
            if during() and began and ids is not None and ids.shape[1] == 1:
                self.add(DECODE, time.perf_counter() - began[0])

        model.register_forward_pre_hook(before, with_kwargs=True)
        model.register_forward_hook(after, with_kwargs=True)

    def step_done(self, step_s: float, *, timed: bool) -> None:
        """Close the current side's step (its seconds: `step_s`): what no phase took is other. A step that is
        not timed (a warm-up) is dropped."""
        assert self.side is not None
        step, self.step = self.step, {}
        if not timed:
            return
        step["other"] = step_s - sum(step.get(p, 0.0) for p in PHASES if p != "other")
        total = self.total.setdefault(self.side, {})
        for phase, seconds in step.items():
            total[phase] = total.get(phase, 0.0) + seconds
        self.steps[self.side] = self.steps.get(self.side, 0) + 1

    def table(self) -> dict[str, dict[str, float]]:
        """Seconds per step of each phase, per side (also printed)."""
        per_step = {side: {p: s / self.steps[side] for p, s in row.items()} for side, row in self.total.items()}
        sides = list(per_step)
        print(f"{'wall s per step':18}" + "".join(f"{'TRL' if s == 'trl' else s:>10}" for s in sides))
        for phase in (PHASES[0], DECODE, *PHASES[1:]):
            label = f"  {phase}" if phase == DECODE else phase
            print(f"{label:18}" + "".join(f"{per_step[s].get(phase, 0.0):10.2f}" for s in sides))
        return per_step


def kernels_used() -> dict[str, str]:
    """The kernel set this process computes with (trainer.policy.kernels.kernel_set) and the CPU's vector
    extensions as the kernel reports them."""
    from trainer.policy.kernels import kernel_set

    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((set(line.split()) for line in f if line.startswith("flags")), set())
    except OSError:
        pass
    simd = " ".join(sorted(f for f in flags if f in {"avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"}))
    return kernel_set() | {"cpu_flags": simd or "unknown"}


def cpu_seconds(work: Callable[[], Any]) -> float:
    t = time.process_time()
    work()
    return time.process_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", type=int, default=30)
    args = ap.parse_args()
    import torch
    from gpu_workload import BOS, build_hf_tokenizer, build_model, prompt_texts
    from trainer_vs_trl import SHAPES

    from trainer.learning.grpo import token_logprobs
    from trainer.policy.sampling import generate_ids
    from trainer.policy.tokenizer import HFTokenizer

    torch.set_num_threads(1)
    shapes = replace(SHAPES, layers=args.layers)
    model = build_model(shapes, dtype=torch.float32, device="cpu", seed=0).eval()
    hf = build_hf_tokenizer(shapes)
    prompts = [t for t in prompt_texts(shapes, 1, 0)[: shapes.prompts] for _ in range(shapes.generations)]
    seeds = list(range(len(prompts)))
    encoded = hf([f"{BOS} {p}" for p in prompts], return_tensors="pt", padding=True, padding_side="left")
    out: dict[str, float] = {}
    for n in (1, 5):
        out[f"ours_generate_{n}"] = cpu_seconds(
            lambda n=n: generate_ids(
                model, HFTokenizer(hf), prompts, temperature=1.0, top_p=1.0, max_new_tokens=n, seeds=seeds
            )
        )
        out[f"hf_generate_{n}"] = cpu_seconds(
            lambda n=n: model.generate(
                **encoded, do_sample=True, max_new_tokens=n, min_new_tokens=n, top_k=0, top_p=1.0, pad_token_id=0
            )
        )
    model.train()
    ids = torch.randint(4, shapes.vocab, (shapes.micro_batch, shapes.prompt_tokens + shapes.completion_tokens))
    out["train_micro_batch"] = cpu_seconds(
        lambda: token_logprobs(model(input_ids=ids[:, :-1]).logits, ids[:, 1:]).sum().backward()
    )
    decode = {side: (out[f"{side}_generate_5"] - out[f"{side}_generate_1"]) / 4 for side in ("ours", "hf")}
    new = shapes.completion_tokens
    micro_batches = shapes.global_batch // shapes.micro_batch
    for side in ("ours", "hf"):
        out[f"{side}_decode_token"] = decode[side]
        out[f"{side}_rollout"] = out[f"{side}_generate_1"] + (new - 1) * decode[side]
    update = micro_batches * out["train_micro_batch"]
    out["update"] = update
    out["estimated_ratio"] = (out["hf_rollout"] + update) / (out["ours_rollout"] + update)
    print(f"rollout of {new} tokens: ours {out['ours_rollout']:.1f} s, generate {out['hf_rollout']:.1f} s (CPU)")
    print(f"update ({micro_batches} micro-batches): {update:.1f} s; step ratio without TRL's extras: "
          f"{out['estimated_ratio']:.2f}")  # fmt: skip
    print(json.dumps({**out, "layers": args.layers}))


if __name__ == "__main__":
    main()
