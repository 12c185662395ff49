"""Where a step of bench/trainer_vs_trl.py goes at the bench's shapes, in CPU seconds (one thread), cheaply.

    python bench/trainer_phases.py [--layers 30]

The parts, on one SmolLM2-135M-shaped random model, batch 8 prompts x 8 generations: our rollout
(`generate_ids`: static cache, hashed noise, token choice on the device) and Hugging Face's `generate` (TRL's
rollout), each for 1 and 5 new tokens (the difference is 4 decode steps), and one forward + backward of a
training micro-batch (the same arithmetic in both trainers). CPU time, so the estimate holds up on a loaded
machine better than wall time; it runs in a few minutes where the full bench takes many. The last line is
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


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

    from trainer.grpo import token_logprobs
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
