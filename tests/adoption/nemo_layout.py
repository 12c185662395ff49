"""Writes a checkpoint series in NeMo-RL's deferred-evaluation layout (what its trainer publishes) with MCore-like
weight files; evaluator.sample_series writes the Hugging Face ones, from the same config."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from evaluator.sample_series import GENERATIONS, PROMPTS, WRITE_MS, config

__all__ = ["GENERATIONS", "PROMPTS", "WRITE_MS", "config", "write_checkpoint"]


def write_checkpoint(
    root: Path, step: int, update_ms: int, *, prompts_per_step: int = PROMPTS, cfg: dict[str, Any] | None = None
) -> Path:
    """`root/step_N` with training_info.json, config.yaml and two MCore-like weight files, their modification
    times set to WRITE_MS after the weight update (as a save that took that long would leave them)."""
    path = root / f"step_{step}"
    weights = path / "policy" / "weights"
    weights.mkdir(parents=True)
    (weights / ".metadata").write_bytes(b"mcore-dist-metadata step %d" % step)
    (weights / "__0_0.distcp").write_bytes(bytes(range(256)) * (step % 7 + 1))
    (path / "config.yaml").write_text(yaml.safe_dump(cfg or config()))
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
            os.utime(f, ns=(written_ns, written_ns))
    return path
