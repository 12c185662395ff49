"""Synthetic runs for demos and tests, recorded through the real LogWriter with explicit times: the one
run builder of the project (replay's golden cases, docs/design.md's worked example, the history's and the
evaluator's test runs all come from `record_run`).

Timeline (seconds after run_start): step k's weight update at 60 k plus 2 s for every earlier checkpoint
(each save blocks the loop 2 s, from the weight update); its step_metrics 2 s after the update; its
checkpoint (steps from the validation start) commits 30 s after the update. Evaluations start at
`eval_start_s`, one after another, each `eval_s` long, its result 1 s before its stop.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from recorder.rules import pass_target
from recorder.rules import validation_start_step as validation_start
from recorder.store.kinds import (
    BlockStart,
    BlockStop,
    CheckpointCommitted,
    EvalResult,
    EvalStart,
    EvalStop,
    InitStart,
    InitStop,
    MllogConfig,
    RunOpened,
    RunStart,
    StepMetrics,
    TrainStatus,
    TrainStop,
    WeightUpdate,
)
from recorder.store.log import LogWriter
from recorder.store.run import RunDir

S = 1_000_000_000
T0_S = 1_780_000_000
T0 = T0_S * S

# The 6.1.0 closed-division configuration at GBS 256 (closed_qwen35_397b_grpo.yaml, common.yaml).
CLOSED_256: dict[str, object] = {
    "submission_benchmark": "qwen35_397b_grpo",
    "submission_org": "recorder-demo",
    "submission_division": "closed",
    "submission_status": "research",
    "submission_platform": "2xCPU",
    "global_batch_size": 256,
    "max_sequence_length": 65536,
    "train_samples": 5120,
    "eval_samples": 251,
    "init_checkpoint_step": 0,
    "max_steps": 20,
    "opt_name": "adamw",
    "opt_base_learning_rate": 1e-6,
    "opt_adamw_beta_1": 0.9,
    "opt_adamw_beta_2": 0.999,
    "opt_adamw_epsilon": 1e-8,
    "opt_adamw_weight_decay": 0.0,
    "opt_gradient_clip_norm": 0.125,
    "opt_learning_rate_warmup_steps": 0,
    "opt_learning_rate_decay_schedule": "constant",
    "generation_training_rollout_temperature": 1.0,
    "generation_training_rollout_top_p": 1.0,
    "generation_validation_rollout_temperature": 0.1,
    "generation_validation_rollout_top_p": 0.95,
    "num_prompts_per_step": 16,
    "num_generations_per_prompt": 16,
    "gradient_accumulation_steps": 1,
    "lowest_numerical_precision_in_linear": "bfloat16",
    "lowest_numerical_precision_in_attn": "bfloat16",
    "lowest_numerical_precision_in_comm": "fp32",
    "tensor_parallelism": 1,
    "pipeline_parallelism": 1,
    "context_parallelism": 1,
    "expert_parallelism": 1,
    "micro_batch_size": 16,
    "config_filename": "configs/qwen35_grpo_tiny.toml",
}


# (run, step, weight update ns) -> checkpoint_committed fields replacing the defaults' sha256, bytes,
# fingerprint, format and dtype: the evaluator's tests write real tiny checkpoints through it.
CheckpointData = Callable[[RunDir, int, int], Mapping[str, Any]]


def eval_settings(target: float, samples: int = 251, max_new_tokens: int = 5) -> dict[str, object]:
    """The evaluation settings a run records (trainer/config.py EvalSettings' defaults), with its target."""
    return {
        "k": 4,
        "temperature": 0.1,
        "top_p": 0.95,
        "target": target,
        "max_new_tokens": max_new_tokens,
        "samples": samples,
    }


def _default_metrics(step: int) -> StepMetrics:
    return StepMetrics(loss=0.5, reward=0.25)


def record_run(
    root: Path,
    run_id: str | None = None,
    *,
    gbs: int = 3840,
    steps: int = 6,
    evals: Sequence[tuple[int, float]] = (),
    eval_start_s: int | None = None,
    eval_s: int = 60,
    closed: bool = False,
    last_metrics_s: int | None = None,
    skip_weight_update: Sequence[int] = (),
    extra_results: Sequence[tuple[int, float]] = (),
    evaluator_segments: int = 1,
    reverse_configs: bool = False,
    target: float | None = None,
    eval_samples: int = 251,
    eval_max_new_tokens: int = 5,
    t0_ns: int = T0,
    opened_at_start: bool = False,
    step_metrics: Callable[[int], StepMetrics] = _default_metrics,
    checkpoint_steps: Sequence[int] | None = None,
    checkpoint_paths: Mapping[int, str] | None = None,
    checkpoint_data: CheckpointData | None = None,
    stopped: bool = True,
    stop_status: TrainStatus = "completed",
) -> RunDir:
    """Record a run; `evals` are (step, accuracy) in the order they were performed.

    `target`: a pass target recorded in run_opened with the evaluation settings (`eval_samples` tasks,
    `eval_max_new_tokens`), as `recorder train --set eval.target` records it; None records none (the
    ruleset's applies). `t0_ns`: the run_start time; `opened_at_start`: run_opened stamped then, not 10 s
    before. `checkpoint_steps`: the committed steps (default: from the validation start on), at
    `checkpoint_paths` (default checkpoints/step_NNNNNNN). `stopped=False`: training never stopped (no
    block_stop, no train_stop).
    """
    run = RunDir.create(root, run_id)
    vs = validation_start(gbs)
    saved = set(checkpoint_steps) if checkpoint_steps is not None else set(range(vs, steps + 1))
    division = "closed" if closed else "open"
    # Checkpoint files are written before the writer opens: writing them takes real time, which the
    # segment's monotonic clock would count against the synthetic wall times.
    updates = {step: t0_ns + (60 * step + 2 * len(saved & set(range(1, step)))) * S for step in range(1, steps + 1)}
    files = {step: checkpoint_data(run, step, updates[step]) for step in saved if step <= steps and checkpoint_data}
    with LogWriter(run, "trainer", clock=lambda: t0_ns) as w:
        opened = RunOpened(
            benchmark="qwen35_397b_grpo",
            ruleset="6.1.0",
            division=division,
            global_batch_size=gbs,
            target=target,
            config={} if target is None else {"eval": eval_settings(target, eval_samples, eval_max_new_tokens)},
            provenance={},
            resumed_from=None,
        )
        w.append(opened, time_ns=t0_ns if opened_at_start else t0_ns - 10 * S)
        w.append(InitStart(), time_ns=t0_ns - 10 * S)
        if closed:
            items = list(CLOSED_256.items())
            for key, value in reversed(items) if reverse_configs else items:
                w.append(MllogConfig(), key=key, value=value, time_ns=t0_ns - 5 * S)
        w.append(InitStop(), time_ns=t0_ns)
        w.append(RunStart(), time_ns=t0_ns)
        w.append(BlockStart(), step=1, samples_count=0, time_ns=t0_ns)
        for step in range(1, steps + 1):
            update = updates[step]
            if step not in skip_weight_update:
                w.append(WeightUpdate(), step=step, samples_count=step * gbs, time_ns=update)
            if step in saved:
                committed = CheckpointCommitted(
                    path=(checkpoint_paths or {}).get(step, f"checkpoints/step_{step:07d}"),
                    sha256="",
                    bytes=0,
                    weight_update_ns=update,
                    save_begin_ns=update,
                    save_end_ns=update + 30 * S,
                    blocked_ns=2 * S,
                    fingerprint={},
                    format="safetensors",
                    dtype="bfloat16",
                )
                committed = dataclasses.replace(committed, **files.get(step, {}))
                w.append(committed, step=step, samples_count=step * gbs, time_ns=update + 30 * S)
            metrics_at = t0_ns + last_metrics_s * S if (step == steps and last_metrics_s) else update + 2 * S
            w.append(step_metrics(step), step=step, samples_count=step * gbs, time_ns=metrics_at)
        end = t0_ns + (60 * steps + 2 * len(saved & set(range(1, steps + 1)))) * S
        if stopped:
            w.append(BlockStop(), step=steps, samples_count=steps * gbs, time_ns=end)
            w.append(TrainStop(status=stop_status, reason=""), step=steps, samples_count=steps * gbs, time_ns=end)
    # Evaluations start after training stopped (default 400 s, later if training ran longer).
    start_s = eval_start_s if eval_start_s is not None else max(400, (end - t0_ns) // S + 30)
    record_evals(run, evals, gbs, start_s, eval_s, segments=evaluator_segments, target=target)
    if extra_results:
        with LogWriter(run, "evaluator", clock=lambda: T0) as w:
            for i, (step, acc) in enumerate(extra_results):
                at = T0 + (start_s + 1000 + 60 * i) * S
                w.append(EvalResult(), step=step, samples_count=step * gbs, key="accuracy", value=acc, time_ns=at)
    return run


def _worked_example_metrics(step: int) -> StepMetrics:
    return StepMetrics(loss=0.0, reward=0.5, checkpoint_block_s=2.0 if step >= 18 else 0.0)


def record_worked_example(root: Path, run_id: str | None = None, t0_ns: int = T0) -> RunDir:
    """docs/design.md section 5's run without its evaluations: GBS 256 (validation start 18), 20 steps of
    60 s, saves blocking 2 s and committing 30 s after their weight update."""
    return record_run(
        root,
        run_id,
        gbs=256,
        steps=20,
        t0_ns=t0_ns,
        opened_at_start=True,
        step_metrics=_worked_example_metrics,
    )


def record_evals(
    run: RunDir,
    evals: Sequence[tuple[int, float]],
    gbs: int,
    start_s: int,
    each_s: int,
    segments: int = 1,
    target: float | None = None,
) -> None:
    """Evaluations in the order given, split over `segments` evaluator sessions."""
    if not evals:
        return
    per = math.ceil(len(evals) / segments)
    for part in range(0, len(evals), per):
        with LogWriter(run, "evaluator", clock=lambda: T0) as w:
            for i in range(part, min(part + per, len(evals))):
                step, acc = evals[i]
                at = T0 + (start_s + each_s * i) * S
                sc = step * gbs
                start = EvalStart(checkpoint=f"checkpoints/step_{step:07d}", sha256="", worker=0)
                w.append(start, step=step, samples_count=sc, time_ns=at)
                rel, sha = write_evidence(run, w.run_id, step, acc, i)
                w.append(
                    EvalResult(
                        metric="pass@4", n=251, k=4, target=pass_target(target), results=rel, results_sha256=sha
                    ),
                    step=step,
                    samples_count=sc,
                    key="accuracy",
                    value=acc,
                    time_ns=at + (each_s - 1) * S,
                )
                w.append(
                    EvalResult(results=rel, results_sha256=sha),
                    step=step,
                    samples_count=sc,
                    key="arc_easy",
                    value=0.25,
                    time_ns=at + (each_s - 1) * S,
                )  # a zero-shot task: ignored by the benchmark derivation
                w.append(EvalStop(), step=step, samples_count=sc, time_ns=at + each_s * S)


def write_evidence(run: RunDir, run_id: str, step: int, accuracy: float, tag: object) -> tuple[str, str]:
    """A results file for one synthetic evaluation (no per-sample rows: nothing can re-evaluate it, but
    `verify` finds the evidence the events name): (its path in the run, its sha256) for eval_result."""
    rel = f"derived/evals/step_{step:07d}/synthetic-{tag}.json"
    body = json.dumps({"run_id": run_id, "step": step, "score": accuracy, "synthetic": True}).encode()
    path = run.path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    return rel, hashlib.sha256(body).hexdigest()


def _evals(text: str) -> list[tuple[int, float]]:
    try:
        return [(int(step), float(acc)) for step, acc in (item.split(":") for item in text.split(",") if item)]
    except ValueError:
        raise SystemExit(f"--evals: expected STEP:ACCURACY,... (e.g. 19:0.72,18:0.70), got {text!r}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description="Record a synthetic run with evaluations, for `recorder replay`.")
    parser.add_argument("--root", type=Path, default=Path("runs"))
    parser.add_argument("--run-id", default=None)
    parser.add_argument("--gbs", type=int, default=256)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument(
        "--evals",
        default="19:0.72,18:0.70,20:0.71",
        help="evaluations in the order performed, STEP:ACCURACY,... (default: docs/design.md's example)",
    )
    parser.add_argument("--eval-start-s", type=int, default=1300)
    parser.add_argument(
        "--closed", action="store_true", help="record the 6.1.0 closed-division configuration (GBS 256)"
    )
    parser.add_argument(
        "--target", type=float, default=None, help="record this pass target (as `recorder train --set eval.target`)"
    )
    parser.add_argument(
        "--live", action="store_true", help="leave an evaluator segment open, as a writer still running leaves it"
    )
    args = parser.parse_args()
    run = record_run(
        args.root,
        args.run_id or f"demo-{args.gbs}",
        gbs=args.gbs,
        steps=args.steps,
        evals=_evals(args.evals),
        eval_start_s=args.eval_start_s,
        closed=args.closed,
        target=args.target,
    )
    if args.live:  # an evaluation under way: the process ends without closing it, as a running writer's is
        at = T0 + (args.eval_start_s + 60 * len(_evals(args.evals)) + 60) * S  # after the recorded evaluations
        start = EvalStart(checkpoint=f"checkpoints/step_{args.steps:07d}", sha256="", worker=0)
        LogWriter(run, "evaluator", clock=lambda: at).append(
            start, step=args.steps, samples_count=args.steps * args.gbs
        )
    print(f"recorded {run.path}; next: recorder replay {run.path} --compare")


if __name__ == "__main__":
    main()
