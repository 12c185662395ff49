"""Writes a checkpoint series in NeMo-RL's deferred-evaluation layout (what its trainer publishes) whose
weights the real megatron-core wrote: the golden dense series' (tests/golden/mcore/dense-tp1, by
tests/fixtures/make_mcore.py). tests.kit.sample_series writes Hugging Face series from the same config.

As NeMo-RL's Megatron worker does, no config.json and no tokenizer are saved: config.yaml names the base
model by local directories (`policy.model_name`, `policy.tokenizer.name`), as NeMo-RL accepts them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml

from tests.kit import mcore_golden
from tests.kit.sample_series import GENERATIONS, PROMPTS, WRITE_MS, config

__all__ = ["GENERATIONS", "PROMPTS", "WRITE_MS", "config", "write_checkpoint"]
SERIES = "dense-tp1"


def base_model(cfg: dict[str, Any]) -> dict[str, Any]:
    """`cfg` naming the golden base model's config and tokenizer directories."""
    policy = dict(cfg.get("policy") or {})
    policy["model_name"] = str(mcore_golden.model_config(SERIES))
    policy["tokenizer"] = {"name": str(mcore_golden.tokenizer())}
    return {**cfg, "policy": policy}


def write_checkpoint(
    root: Path, step: int, update_ms: int, *, prompts_per_step: int = PROMPTS, cfg: dict[str, Any] | None = None
) -> Path:
    """`root/step_N` with training_info.json, config.yaml and megatron-core's weights of a golden step (18 or
    19 by the step's parity, so that consecutive steps differ), their modification times set to WRITE_MS after
    the weight update (as a save that took that long would leave them)."""
    path = root / f"step_{step}"
    golden = mcore_golden.GOLDEN / SERIES / f"step_{18 + step % 2}" / "policy"
    shutil.copytree(golden, path / "policy")
    (path / "config.yaml").write_text(yaml.safe_dump(base_model(cfg or config())))
    (path / "training_info.json").write_text(
        json.dumps(
            {
                "current_step": step,
                "consumed_samples": step * prompts_per_step,
                "training_step_end_time_ms": update_ms,
            }
        )
    )
    written_ns = (update_ms + WRITE_MS) * 1_000_000
    for f in path.rglob("*"):
        if f.is_file():
            f.chmod(0o644)
            os.utime(f, ns=(written_ns, written_ns))
    return path
