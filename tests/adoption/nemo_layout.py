"""Writes a checkpoint series in NeMo-RL's deferred-evaluation layout (what its trainer publishes)."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import yaml

PROMPTS, GENERATIONS = 16, 16  # GBS 256 samples: validation start CEIL(2.5 + 3840/256) = 18


def config(prompts: int = PROMPTS, generations: int = GENERATIONS) -> dict[str, Any]:
    return {
        "grpo": {
            "val_start_at": 18,
            "max_num_steps": 20,
            "num_prompts_per_step": prompts,
            "num_generations_per_prompt": generations,
            "seed": 42,
            "deferred_evaluation": {"enabled": True, "threshold": 0.69},
        },
        "policy": {
            "train_global_batch_size": prompts * generations,
            "precision": "bfloat16",
            "generation": {"backend": "vllm"},
            "megatron_cfg": {"enabled": True},
        },
        "logger": {"mlperf": {"target_accuracy": 0.69, "defer_run_stop": True}},
        "checkpointing": {"enabled": True, "save_optimizer": False, "keep_top_k": 2},
    }


@functools.cache
def _tokenizer() -> Any:
    from tests.evaluator import hf_series

    return hf_series.tokenizer()


def _tiny(step: int) -> tuple[Any, Any]:
    """A 16-wide random Llama, its weights differing by step (tests/evaluator/hf_series.py)."""
    from tests.evaluator import hf_series

    tok = _tokenizer()
    return tok, hf_series.model(len(tok), step, hidden_size=16)


WRITE_MS = 30_000  # a checkpoint's files are finished this long after its weight update


def write_checkpoint(
    root: Path, step: int, update_ms: int, *, prompts_per_step: int = PROMPTS, cfg: dict[str, Any] | None = None
) -> Path:
    """`root/step_N` with training_info.json, config.yaml and a tiny Llama's Megatron-Core weights
    (`policy/weights/iter_0000000/`, torch DCP with Megatron's names; tests/formats/fixtures.py), their
    modification times set to WRITE_MS after the weight update (as a save that took that long would leave
    them)."""
    from tests.formats import fixtures

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
