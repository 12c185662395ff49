"""Our GRPO trainer against TRL's GRPOTrainer in one process, taking turns, on the same work.

    python bench/trainer_vs_trl.py --device cpu [--steps 1 --warmup 1] [--alone]

Both sides get a SmolLM2-135M-shaped Llama with the same random weights, the same word-level tokenizer,
prompts, reward (bench/gpu_workload.py) and optimizer settings (bench/gpu_trl.py): 8 prompts x 8
generations, 64 new tokens, vocabulary 49152. TRL trains in `trainer.train()`; after each of its steps a
callback runs one of ours, so the two alternate and share whatever else loads the machine.

Measured per side: completion tokens per second (completion tokens of the timed steps over their time),
seconds per step, and peak RSS (the process's resident set sampled every 5 ms during that side's steps,
after handing freed memory back with malloc_trim, so neither side inherits the other's transient peak).
Both models are built before either side steps, so every peak holds both sets of weights. What one side
keeps between its steps (its AdamW moments, gradients, caches: the RSS it leaves behind, after a trim) is not
the other side's, so each side's peak is its raw peak minus what the other side held at that moment, as if
it ran alone in a process that also holds the other's weights. Without this the side that steps second
pays for the first side's optimizer state (about 1 GB at this size). Raw peaks are printed too, and the
transient (peak minus the RSS when the step began). `sampler_overhead`: the share of our decode steps spent in
`choose_tokens` (the hashed noise plus the token choice): its time over its time plus the one-token model
calls' (CPU timings: on a GPU the calls are asynchronous and these would need a sync).

CPU seconds per step are printed beside wall seconds: on a loaded machine wall time is mostly waiting, and
with one thread a side's CPU seconds are close to its wall time on a quiet core.

Defaults: one untimed step per side, then one timed step per side (about 6 minutes on 2 CPU cores; the
budget is 10). A trainer's speed is its steady state, and TRL's first step is not one: with TRL alone
in its process it ran 2-14% faster than its later steps in three runs (86.7 s then 100-102 s; 103.3 s then
109.5 and 100.8 s; 75.4 s then 85.1 and 85.3 s: bench/README.md).
Without the warm-up, TRL's timed step would be that first one while ours follows a TRL step; with it, each
timed step is a steady-state step that follows one of the other side's.

`--alone` is a cross-check, not the bench itself: TRL's side, then ours, each in a fresh process of its own
with the same flags (and only its own model), so that neither pays for the other's memory traffic. Over a
few steps (`--alone --steps 3`) it gives each trainer's steady state as it would run by itself.

Where each side's timed steps go is printed as a table (bench/trainer_phases.py's StepPhases: generation and
its decode forwards, scoring, forward and loss, backward, optimizer, the rest), with the kernels computed with.

The last line is one JSON object: ours_tokens_per_s, trl_tokens_per_s, ratio, ours_peak_rss_mb,
trl_peak_rss_mb, sampler_overhead, steps, phases, kernels (and a few more keys).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_workload import FULL, TINY, Shapes

SHAPES = replace(FULL, prompts=8, generations=8, prompt_tokens=16, completion_tokens=64, micro_batch=16)


class RssPeak:
    """The process's peak resident set while active, sampled from /proc/self/statm by a thread."""

    def __init__(self, every_s: float = 0.005) -> None:
        import os

        self.page = os.sysconf("SC_PAGE_SIZE")
        self.every_s = every_s
        self.peak = 0
        self.start = 0
        self._active = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def begin(self) -> None:
        _trim()
        self.start = self.rss()
        self.peak = max(self.peak, self.start)
        self._active.set()

    def end(self) -> None:
        self._active.clear()
        self.peak = max(self.peak, self.rss())

    def _sample(self) -> None:
        while True:
            self._active.wait()
            self.peak = max(self.peak, self.rss())
            time.sleep(self.every_s)


class SamplerTimer:
    """Times our decode steps' two parts: the one-token model call (forward hooks) and `choose_tokens`.
    On the CPU the sampler decodes blocks of rows in parallel threads: both sums add up every thread's time
    (their ratio is the share of the work, as on one thread)."""

    def __init__(self, model: Any) -> None:
        import trainer.policy.sampling as sampling

        self.choose_s = self.forward_s = 0.0
        self.active = False
        self._lock = threading.Lock()
        self._started = threading.local()  # each sampling thread's forward start
        inner = sampling.choose_tokens

        def before(module: Any, args: Any, kwargs: Any) -> None:
            self._started.t = time.perf_counter()

        def after(module: Any, args: Any, kwargs: Any, out: Any) -> None:
            if self.active and kwargs.get("input_ids") is not None and kwargs["input_ids"].shape[1] == 1:
                with self._lock:  # decode steps only, not the prefill
                    self.forward_s += time.perf_counter() - self._started.t

        model.register_forward_pre_hook(before, with_kwargs=True)
        model.register_forward_hook(after, with_kwargs=True)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            out = inner(*args, **kwargs)
            if self.active:
                with self._lock:
                    self.choose_s += time.perf_counter() - t
            return out

        sampling.choose_tokens = timed  # _decode_loop looks it up at each call


def _trim() -> None:
    """Give freed heap back to the OS (glibc keeps it otherwise, and RSS would carry one side's peak)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=1, help="timed steps per side")
    ap.add_argument("--warmup", type=int, default=1, help="untimed steps per side first")
    ap.add_argument("--tiny", action="store_true", help="tiny shapes (a smoke test, not a measurement)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--layers", type=int, default=0, help="fewer decoder layers (0: SmolLM2-135M's 30): not the spec")
    ap.add_argument(
        "--alone",
        action="store_true",
        help="a cross-check, not the bench itself: each side in its own process, one after the other",
    )
    ap.add_argument("--side", choices=SIDES, default="both", help=argparse.SUPPRESS)  # one side of --alone
    args = ap.parse_args()
    if args.alone:
        print(json.dumps(alone(sys.argv[1:])))
        return
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    shapes = replace(TINY, completion_tokens=8) if args.tiny else SHAPES
    if args.layers:
        shapes = replace(shapes, layers=args.layers)
    with tempfile.TemporaryDirectory(prefix="trainer-vs-trl-") as tmp:
        result = compare(
            shapes, steps=args.steps, warmup=args.warmup, device=args.device, workdir=Path(tmp), side=args.side
        )
    print(json.dumps(result))


SIDES = ("both", "ours", "trl")


def alone(argv: list[str]) -> dict[str, Any]:
    """TRL's side, then ours, each in a fresh process of its own with the same flags (`--side`). -> both
    summaries merged, with the ratio of their tokens per second."""
    import subprocess

    flags = [a for a in argv if a != "--alone"]
    merged: dict[str, Any] = {}
    for side in ("trl", "ours"):
        print(f"-- {side} alone", flush=True)
        cmd = [sys.executable, str(Path(__file__).resolve()), *flags, "--side", side]
        done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
        print(done.stdout, end="", flush=True)
        if done.returncode != 0:
            raise SystemExit(f"{side} alone exited {done.returncode}: {' '.join(cmd)}")
        part = json.loads(done.stdout.strip().splitlines()[-1])
        merged |= part | {"phases": merged.get("phases", {}) | part.get("phases", {})}
    merged["ratio"] = merged["ours_tokens_per_s"] / merged["trl_tokens_per_s"]
    print(f"alone, each side in its own process: ratio ours/TRL tokens/s {merged['ratio']:.2f}")
    return merged


def compare(
    shapes: Shapes, *, steps: int, warmup: int, device: str, workdir: Path, side: str = "both"
) -> dict[str, Any]:
    """TRL's steps with one of ours after each (`side` both), or one side's steps alone. -> the summary (also
    printed as a table)."""
    import torch
    from gpu_ours import bench_trainer
    from gpu_trl import grpo_config, prompt_dataset
    from gpu_workload import build_hf_tokenizer, build_model, trl_reward
    from trainer_phases import StepPhases, kernels_used
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    total = warmup + steps
    rss = RssPeak()
    tok = build_hf_tokenizer(shapes)
    runs_ours, runs_trl = side in ("both", "ours"), side in ("both", "trl")
    ours = None
    if runs_ours:
        ours = bench_trainer(
            shapes,
            model=build_model(shapes, dtype=torch.float32, device=device, seed=0),
            tok=tok,
            steps=total,
            device=device,
            dtype=torch.float32,
            workdir=workdir,
            seed=0,
            mode="none",
        )
    sampler = SamplerTimer(ours.model) if ours is not None else None
    phases = StepPhases()
    ours_steps: list[Any] = []
    trl_s: list[float] = []
    cpu_s: dict[str, list[float]] = {"ours": [], "trl": []}
    trl_logs: list[dict[str, float]] = []
    peaks: dict[str, list[tuple[int, int, int]]] = {"ours": [], "trl": []}  # (raw peak, transient, other's held)
    held = {"ours": 0, "trl": 0}  # RSS each side has left behind after its steps so far

    def step_done(side: str, other: str) -> None:
        rss.end()
        peaks[side].append((rss.peak, rss.peak - rss.start, held[other]))
        _trim()
        held[side] += rss.rss() - rss.start

    def ours_step() -> None:
        assert ours is not None and sampler is not None
        rss.peak = 0
        rss.begin()
        sampler.active = timed = len(ours_steps) >= warmup
        cpu, decode_s = time.process_time(), sampler.forward_s
        phases.side = "ours"
        r = ours.train_step(len(ours_steps) + 1)
        cpu_s["ours"].append(time.process_time() - cpu)
        ours_steps.append(r)
        phases.add("generation", r.generation_s)
        phases.add("decode forward", (sampler.forward_s - decode_s) / torch.get_num_threads())
        phases.add("forward and loss", r.train_s - phases.step.get("backward", 0.0) - phases.step.get("optimizer", 0.0))
        phases.step_done(r.step_s, timed=timed)
        phases.side = None
        sampler.active = False
        step_done("ours", "trl")

    class Turns(TrainerCallback):  # type: ignore[misc]
        def on_step_begin(self, a: Any, state: Any, control: Any, **kw: Any) -> None:
            rss.peak = 0
            rss.begin()
            phases.side = "trl"
            self.t, self.cpu = time.perf_counter(), time.process_time()

        def on_step_end(self, a: Any, state: Any, control: Any, **kw: Any) -> None:
            trl_s.append(time.perf_counter() - self.t)
            cpu_s["trl"].append(time.process_time() - self.cpu)
            generated = phases.step.pop("generate and score", 0.0)
            phases.add("scoring", generated - phases.step.get("generation", 0.0))
            phases.step_done(trl_s[-1], timed=len(trl_s) > warmup)
            phases.side = None
            step_done("trl", "ours")
            if runs_ours:
                ours_step()

        def on_log(self, a: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                trl_logs.append(dict(logs))

    if runs_trl:
        peer = GRPOTrainer(
            model=build_model(shapes, dtype=torch.float32, device=device, seed=0),
            reward_funcs=trl_reward,
            args=grpo_config(shapes, steps=total, device=device, dtype=torch.float32, workdir=workdir, seed=0),
            train_dataset=prompt_dataset(shapes, total, 0),
            processing_class=tok,
            callbacks=[Turns()],
        )
        peer._generate = phases.timed(peer._generate, "generation")
        peer._generate_and_score_completions = phases.timed(peer._generate_and_score_completions, "generate and score")
        peer.compute_loss = phases.timed(peer.compute_loss, "forward and loss")
        phases.time_decode_forwards(peer.model, during=lambda: phases.side == "trl")
        peer.train()
    else:
        for _ in range(total):
            ours_step()
    if ours is not None:
        ours.cleanup("completed", "")
    for side, seconds in (("ours", [r.step_s for r in ours_steps]), ("TRL", trl_s)):
        if seconds:  # every step, so that a first step unlike the later ones shows
            shown = [f"{s:.1f}" for s in seconds]
            print(f"{side} s per step: warm-up {', '.join(shown[:warmup]) or '-'}; timed {', '.join(shown[warmup:])}")
    cpu = {side: sum(v[warmup:]) / len(v[warmup:]) for side, v in cpu_s.items() if v}
    result = summarize(shapes, ours_steps[warmup:], trl_s[warmup:], trl_logs[warmup:], peaks, sampler, warmup, cpu)
    kernels = kernels_used()
    print("kernels: " + ", ".join(f"{k} {v}" for k, v in kernels.items()))
    return result | {"phases": phases.table(), "kernels": kernels}


def summarize(
    shapes: Shapes,
    ours: list[Any],
    trl_s: list[float],
    trl_logs: list[dict[str, float]],
    peaks: dict[str, list[tuple[int, int, int]]],
    sampler: SamplerTimer | None,
    warmup: int,
    cpu_s_per_step: dict[str, float],
) -> dict[str, Any]:
    """The table and the JSON summary from the timed steps of the sides that ran."""
    mb = 1 << 20
    rows: dict[str, dict[str, float]] = {}
    if ours:
        tokens, seconds = sum(r.tokens for r in ours), sum(r.step_s for r in ours)
        rows["ours"] = {"tokens_per_s": tokens / seconds, "s_per_step": seconds / len(ours)}
    if trl_s:
        tokens = sum(log["completions/mean_length"] * shapes.global_batch for log in trl_logs)
        rows["trl"] = {"tokens_per_s": tokens / sum(trl_s), "s_per_step": sum(trl_s) / len(trl_s)}
    for side, row in rows.items():
        timed = peaks[side][warmup:]
        row["peak_rss_mb"] = max(p - other for p, _, other in timed) / mb
        row["raw_peak_rss_mb"] = max(p for p, _, _ in timed) / mb
        row["transient_rss_mb"] = max(t for _, t, _ in timed) / mb
        row["cpu_s_per_step"] = cpu_s_per_step[side]
    print(
        f"{'':6} {'tokens/s':>10} {'s/step':>8} {'CPU s/step':>11} {'peak RSS MB':>12} {'raw peak MB':>12} "
        f"{'transient MB':>13}"
    )
    for side, r in rows.items():
        print(
            f"{'TRL' if side == 'trl' else side:6} {r['tokens_per_s']:10.1f} {r['s_per_step']:8.2f} "
            f"{r['cpu_s_per_step']:11.2f} {r['peak_rss_mb']:12.0f} {r['raw_peak_rss_mb']:12.0f} "
            f"{r['transient_rss_mb']:13.0f}"
        )
    result = {f"{side}_{key}": value for side, r in rows.items() for key, value in r.items()}
    if "ours" in rows and "trl" in rows:
        result["ratio"] = rows["ours"]["tokens_per_s"] / rows["trl"]["tokens_per_s"]
        print(f"ratio ours/TRL tokens/s: {result['ratio']:.2f}")
    if ours and sampler is not None:
        gen_s, choose_s = sum(r.generation_s for r in ours), sampler.choose_s
        print(
            f"our generation {gen_s / len(ours):.2f} s/step, token choice {choose_s / len(ours):.2f} s (summed over "
            "the sampling threads)"
        )
        result |= {
            "ours_generation_s_per_step": gen_s / len(ours),
            "sampler_overhead": choose_s / (choose_s + sampler.forward_s),
            "decode_forward_s_per_step": sampler.forward_s / len(ours),
            "token_choice_s_per_step": choose_s / len(ours),
        }
    result["steps"] = len(ours) or len(trl_s)
    return result


if __name__ == "__main__":
    main()
