"""Writes a checkpoint series in NeMo-RL's deferred-evaluation layout (what its trainer publishes) with a tiny
Llama's Megatron-Core weights; tests.kit.sample_series writes the Hugging Face ones, from the same config."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import yaml

from tests.kit import sample_series
from tests.kit.sample_series import GENERATIONS, PROMPTS, WRITE_MS, config

__all__ = ["GENERATIONS", "PROMPTS", "WRITE_MS", "config", "write_checkpoint"]


@functools.cache
def _tokenizer() -> Any:
    return sample_series.tokenizer()


def _tiny(step: int) -> tuple[Any, Any]:
    """A 16-wide random Llama, its weights differing by step (tests/kit/sample_series.py)."""
    tok = _tokenizer()
    return tok, sample_series.model(len(tok), step, hidden_size=16)


def write_checkpoint(
    root: Path, step: int, update_ms: int, *, prompts_per_step: int = PROMPTS, cfg: dict[str, Any] | None = None
) -> Path:
    """`root/step_N` with training_info.json, config.yaml and a tiny Llama's Megatron-Core weights
    (`policy/weights/iter_0000000/`, torch DCP with Megatron's names; tests/checkpoints/fixtures.py), their
    modification times set to WRITE_MS after the weight update (as a save that took that long would leave
    them)."""
    from tests.checkpoints import fixtures

    path = root / f"step_{step}"
    tok, model = _tiny(step)
    fixtures.write_mcore_weights(path, tok, model)
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
