"""Checkpoint overhead: mean training-step time with asynchronous, synchronous and no checkpointing.

The three modes train the same config in the same process: each runs blocks of consecutive steps (so a
background save overlaps that mode's own next steps, as in a real run), in two rounds of opposite order so
machine drift hits all modes alike. Steps that save are numbered from the validation start on, steps that
do not save before it. Prints the mean step time per mode and the overhead ratios against `none` (target: async <= 5%).

    python bench/checkpoint.py                                    # the default tiny model
    python bench/checkpoint.py --hidden 1024 --layers 8 --prompts 1  # a model whose save outlasts a step
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=12, help="measured steps per mode")
    ap.add_argument("--block", type=int, default=4, help="consecutive steps per mode per turn")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=16, help="prompts per step (16 generations each)")
    ap.add_argument("--dir", type=Path, default=None, help="where the runs go (default: a temp dir)")
    args = ap.parse_args()

    import torch

    from trainer.config import load_config
    from trainer.loop import GRPOTrainer
    from trainer.policy.model import ModelConfig

    torch.set_num_threads(1)
    model_cfg = ModelConfig(
        hidden_size=args.hidden,
        num_layers=args.layers,
        num_heads=max(1, args.hidden // 32),
        intermediate_size=4 * args.hidden,
    )
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-ckpt-"))
    keep = args.dir is not None
    modes = {"none": None, "async": "false", "sync": "true"}
    trainers = {}
    for mode, sync in modes.items():
        sets = [
            "warmup.enabled=false",
            f"num_prompts_per_step={args.prompts}",
            "micro_batch_size=16",
            f"checkpoint.sync={sync or 'false'}",
        ]
        t = GRPOTrainer(load_config(sets=sets), root=root, run_id=f"bench-{mode}", model_cfg=model_cfg)
        t.setup()
        trainers[mode] = t
    start = trainers["none"].cfg.validation_start
    times: dict[str, list[float]] = {m: [] for m in modes}
    saves: list[float] = []
    next_step = {m: (1 if m == "none" else start) for m in modes}  # `none` stays before the validation start
    # Modes take turns in blocks of consecutive steps: within a block a background save overlaps that mode's
    # own next steps (as in a real run); alternating the order each round spreads machine drift over all modes.
    order = list(modes)
    for i in range(-(-args.steps // args.block)):
        for mode in order if i % 2 == 0 else reversed(order):
            t = trainers[mode]
            for _ in range(args.block + (1 if i == 0 else 0)):
                r = t.train_step(next_step[mode])
                if next_step[mode] not in (1, start):  # each mode's very first step warms caches: not measured
                    times[mode].append(r.step_s)
                next_step[mode] += 1
            t.ckpt.drain()  # this mode's pending writes finish before the next mode's block
    for t in trainers.values():
        t.ckpt.close()
        saves += [(c.save_end_ns - c.save_begin_ns) / 1e9 for c in t.summary.checkpoints]
        t.cleanup("completed", "")
    params = sum(p.numel() for p in trainers["none"].model.parameters())
    mean = {m: statistics.mean(v) for m, v in times.items()}
    print(
        f"model: {params / 1e6:.1f}M parameters ({params * 4 / 1e6:.0f} MB float32), "
        f"global batch {args.prompts * 16}, {len(times['none'])} measured steps per mode in blocks of {args.block}"
        + (f"; runs under {root}" if keep else "")
    )
    print(f"mean save (begin to durable, both modes): {statistics.mean(saves):.3f} s")
    for m in modes:
        print(f"  {m:5s} mean step {mean[m]:.3f} s  (median {statistics.median(times[m]):.3f})")
    for m in ("async", "sync"):
        print(f"overhead {m}: {mean[m] / mean['none'] - 1:+.1%} of step time")
    print(f"save / step (none): {statistics.mean(saves) / mean['none']:.2f}")
    if not keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
