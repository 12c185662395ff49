"""The whole `recorder zero-shot` command that evaluates the checkpoints an interrupted one left: its PATHs
and every setting it ran with, each as the option that says it (a setting an environment variable gave
included), so that the line runs as it is in another shell."""

from __future__ import annotations

import shlex
from pathlib import Path

from evaluator.zero_shot.options import MAX_GAP, ZeroShotOptions
from evaluator.zero_shot.task_sources import TASKS


def rerun_command(paths: list[Path], options: ZeroShotOptions) -> str:
    """`recorder zero-shot PATH... --option value ...`, shell-quoted, settings at their defaults left out."""
    o, code = options, options.code
    given: list[tuple[str, object]] = [
        ("--tasks", ",".join(o.tasks) if o.tasks != TASKS else None),
        ("--limit", o.limit),
        ("--task-source", ",".join(f"{t}={d.path}" + (f":{d.name}" if d.name else "") for t, d in o.sources.items())),
        ("--hf-cache", o.hf_cache),
        ("--data-dir", o.data_dir),
        ("--holdout", o.holdout if o.holdout != "on" else None),
        ("--holdout-max-gap", o.max_gap if o.max_gap != MAX_GAP else None),
        ("--holdout-data", o.holdout_data),
        ("--train-world-size", o.train_world_size),
        ("--model-code", code.root),
        ("--model-factory", code.factory),
        ("--holdout-fn", code.holdout_fn),
        ("--epoch", o.epoch),
        ("--config-dir", o.config_dir),
        ("--tokenizer", o.tokenizer),
        ("--dtype", o.dtype if o.dtype != "fp32" else None),
        ("--device", o.device if o.device != "auto" else None),
        ("--batch-size", o.batch_size if o.batch_size != 32 else None),
        ("--nproc", o.processes),
        ("--workers", o.workers),
        ("--ray-address", o.ray_address),
        ("-o", o.out),
        ("--task", o.task),
    ]
    words = ["recorder", "zero-shot", *map(str, paths)]
    for option, value in given:
        if value is not None and value != "":
            words += [option, str(value)]
    words += ["--online"] if o.online else []
    words += ["--log-samples"] if o.log_samples else []
    words += ["--moe-capacity"] if not o.skip_capacity else []
    return " ".join(shlex.quote(w) for w in words)
