"""The `train --set` options as a table, generated from the config's dataclass fields (names, types and
defaults), so the table in docs/cli.md cannot drift from the code: a test compares the two.

Only the meanings are written here; a test also checks that every field has one and that none is left over.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

MEANINGS: dict[str, str] = {
    "seed": "Seed of the model init, the warm-up and every rollout sample",
    "model": "The policy: tiny (from scratch), smollm2-135m (offline package), or a Hugging Face model directory",
    "task": "The built-in addition task, or a task spec file (trainer/policy/taskspec.py): its settings are eval.*'s",
    "device": "auto (cuda when present), cpu, cuda or cuda:N",
    "dtype": "Weights and compute (the optimizer state follows the weights)",
    "rollout": "Rollout backend; auto: vLLM for a pretrained model on a GPU, else the torch sampler",
    "division": "MLPerf division recorded in the mllog",
    "ruleset": "MLPerf Training ruleset the run follows",
    "num_prompts_per_step": "Prompts per step; times the generations, the global batch size",
    "num_generations_per_prompt": "Completions sampled per prompt (the GRPO group)",
    "micro_batch_size": "Sequences per forward/backward pass (gradient accumulation splits the batch)",
    "updates_per_rollout": "Optimizer steps per rollout batch, each on an equal share of it (the ratio clip then acts)",
    "max_steps": "Steps to train; 0: validation start + 1, the rule's recommendation",
    "learning_rate": "AdamW learning rate",
    "adam_beta1": "AdamW beta 1",
    "adam_beta2": "AdamW beta 2",
    "adam_epsilon": "AdamW epsilon",
    "weight_decay": "AdamW weight decay",
    "grad_clip_norm": "Gradient norm clip",
    "clip_epsilon": "GRPO policy-ratio clip",
    "rollout_temperature": "Sampling temperature of training rollouts",
    "rollout_top_p": "Top-p of training rollouts",
    "max_new_tokens": "Tokens generated per training completion",
    "max_sequence_length": "Declared in the mllog (the 6.1.0 checker requires 65536)",
    "threads": "torch intra-op threads",
    "ray_workers": "Rollout actors with --ray",
    "vllm_gpu_memory_utilization": "vLLM's gpu_memory_utilization (rollout=vllm on a GPU)",
    "submission_org": "submission_org in the mllog",
    "submission_platform": "submission_platform in the mllog",
    "config_filename": "config_filename in the mllog (default: the --config file's name)",
    "checkpoint.sync": "true: the loop waits for each save, fsync included",
    "checkpoint.max_pending": "Asynchronous saves in flight before a save blocks the loop",
    "checkpoint.format": "auto (dcp under torchrun, else safetensors), safetensors, or dcp: one shard per rank",
    "eval.k": "pass@k of the offline evaluation",
    "eval.temperature": "Sampling temperature of the evaluation",
    "eval.top_p": "Top-p of the evaluation",
    "eval.target": "Pass target (a value other than 0.69 marks the run NOT COMPARABLE)",
    "eval.max_new_tokens": "Tokens generated per evaluation completion",
    "eval.samples": "Validation tasks scored (mllog eval_samples)",
    "warmup.enabled": "Supervised warm-up before init_start (tiny model; untimed, cached)",
    "warmup.batch_size": "Warm-up batch size",
    "warmup.learning_rate": "Warm-up learning rate",
    "warmup.max_batches": "Most warm-up batches",
    "warmup.check_every": "Dev accuracy measured every this many warm-up batches",
    "warmup.check_every_batch_within": "... and every batch once the last check was this close to the stop",
    "warmup.stop_dev_accuracy": "Warm-up stops at the first check reaching this dev accuracy",
    "warmup.cache_dir": "Where warm-up inits are cached",
    "warmup.shipped": "Use the init shipped with recorder when made for these settings (false: cache or train)",
}


def setting_fields() -> list[tuple[str, str, Any]]:
    """(dotted key, type, default) of every `--set` option, in the config's order; fields the config resolves
    itself (metadata `resolved`: the evaluation's task spec and its sha256) are recorded, never given."""
    from trainer.config import TrainConfig

    out: list[tuple[str, str, Any]] = []

    def walk(cls: type, prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            hint = hints[f.name]
            if f.metadata.get("resolved"):
                continue
            if dataclasses.is_dataclass(hint):
                walk(hint, f"{prefix}{f.name}.")  # type: ignore[arg-type]
            else:
                out.append((prefix + f.name, _type_name(hint), f.default))

    walk(TrainConfig, "")
    return out


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Literal:
        return " \\| ".join(str(a) for a in typing.get_args(hint))
    return str(getattr(hint, "__name__", hint))


def _default(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"{value:g}" if isinstance(value, float) else str(value)


def print_settings() -> None:
    """`train --list-settings`: on a terminal a table fitted to its width, each key whole with its default
    under it and the meaning wrapped at spaces; elsewhere the Markdown table, one setting a line (grep)."""
    from recorder.cli.terminal.output import console

    if not console.is_terminal:
        console.print(settings_markdown(), end="", soft_wrap=True)
        return
    from rich import box

    from recorder.cli.terminal.tables import Col, print_fitted

    cols = [Col("--set key = default", whole=True), Col("type", drop=1, narrow=True), Col("meaning")]
    rows = [
        [f"{key}\n= {_default(default)}", type_name.replace(" \\| ", " | "), MEANINGS.get(key, "")]
        for key, type_name, default in setting_fields()
    ]
    # no outer edge and no rules between columns: at 80 columns every key, type and meaning's word fits
    print_fitted(console, cols, rows, box=box.SIMPLE_HEAD, show_edge=False)


def settings_markdown() -> str:
    """docs/cli.md's table of `--set` options."""
    rows = ["| `--set` key | type | default | meaning |", "|---|---|---|---|"]
    for key, type_name, default in setting_fields():
        rows.append(f"| `{key}` | {type_name} | `{_default(default)}` | {MEANINGS.get(key, '')} |")
    return "\n".join(rows) + "\n"
