"""A NeMo-RL deferred-evaluation run's files, as a submitter has them after training: the training mllog
(NeMo-RL's `mlperf_grpo_logging` with plain mlperf_logging: init, configuration, run_start, one block of
tracked_stats closed at the final weight update, no evaluation and no run_stop) and the checkpoint series.

The configuration is the 6.1.0 closed `qwen35_397b_grpo` one at GBS 256 (16 prompts x 16 generations): the
values NeMo-RL's reference convergence logs state (../shared/corpus/qwen35_397b_grpo_rcp/GBS256), plus the
disclosure keys 6.1.0 made mandatory (numerical precision, config file name), so that the derived log can
pass the compliance checker and the RCP checker. Steps take 60 s; training stops after `final_step`. The
checkpoint series is tests.kit.sample_series's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.kit.sample_series import STEP_MS, T0_MS, update_ms

__all__ = ["GBS", "STEP_MS", "T0_MS", "TRAINING_CONFIG", "update_ms", "write_training_mllog"]
GBS, PROMPTS, GENERATIONS = 256, 16, 16

# (key, value) in the order NeMo-RL logs them (closed division, GBS 256).
TRAINING_CONFIG: tuple[tuple[str, Any], ...] = (
    ("submission_benchmark", "qwen35_397b_grpo"),
    ("submission_org", "recorder tests"),
    ("submission_division", "closed"),
    ("submission_status", "onprem"),
    ("submission_platform", "1xCPU"),
    ("seed", 1652197109),
    ("max_steps", 20),
    ("global_batch_size", GBS),
    ("micro_batch_size", 1),
    ("max_sequence_length", 65536),
    ("train_samples", 10960),
    ("eval_samples", 251),
    ("init_checkpoint_step", 0),
    ("opt_name", "adamw"),
    ("opt_base_learning_rate", 1e-06),
    ("opt_end_learning_rate", 1e-06),
    ("opt_adamw_beta_1", 0.9),
    ("opt_adamw_beta_2", 0.999),
    ("opt_adamw_epsilon", 1e-08),
    ("opt_adamw_weight_decay", 0.0),
    ("opt_gradient_clip_norm", 0.125),
    ("opt_learning_rate_warmup_steps", 0),
    ("opt_learning_rate_decay_steps", 100000),
    ("opt_learning_rate_decay_schedule", "constant"),
    ("tensor_parallelism", 4),
    ("pipeline_parallelism", 2),
    ("context_parallelism", 1),
    ("expert_parallelism", 32),
    ("generation_backend", "vllm"),
    ("generation_tensor_parallelism", 8),
    ("generation_pipeline_parallelism", 1),
    ("generation_expert_parallelism", 8),
    ("generation_training_rollout_temperature", 1.0),
    ("generation_training_rollout_top_p", 1.0),
    ("generation_validation_rollout_temperature", 0.1),
    ("generation_validation_rollout_top_p", 0.95),
    ("num_prompts_per_step", PROMPTS),
    ("num_generations_per_prompt", GENERATIONS),
    ("target_accuracy", 0.69),
    ("lowest_numerical_precision_in_linear", "bfloat16"),
    ("lowest_numerical_precision_in_attn", "bfloat16"),
    ("lowest_numerical_precision_in_comm", "bfloat16"),
    ("config_filename", "grpo_qwen35_397b_deferred.yaml"),
    ("gradient_accumulation_steps", 32),
)


def write_training_mllog(path: Path, final_step: int, times: Callable[[int], int] = update_ms) -> Path:
    """The training side's mllog of a run that stopped after `final_step`, with mlperf_logging's own logger;
    each step's tracked_stats (and the final block_stop) at `times(step)`, its weight update's end."""
    from mlperf_logging.mllog import mllog as reference

    logger = logging.getLogger(f"nemo-training-mllog-{path}")
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = logging.FileHandler(path)
    logger.addHandler(handler)
    log = reference.MLLogger(logger=logger)
    init_ms = T0_MS - 600_000
    log.event(key="cache_clear", value=True, time_ms=init_ms)
    log.start(key="init_start", time_ms=init_ms)
    for key, value in TRAINING_CONFIG:
        log.event(key=key, value=value, time_ms=init_ms + 1)
    log.end(key="init_stop", time_ms=T0_MS)
    log.start(key="run_start", time_ms=T0_MS)
    log.start(key="block_start", metadata={"samples_count": 0, "step": 0}, time_ms=T0_MS)
    for step in range(1, final_step + 1):
        stats = {"reward": 0.5 + step / 100, "step_time": STEP_MS / 1000}
        log.event(
            key="tracked_stats",
            value=stats,
            metadata={"samples_count": step * GBS, "step": step},
            time_ms=times(step),
        )
    log.end(
        key="block_stop",
        metadata={"samples_count": final_step * GBS, "step": final_step},
        time_ms=times(final_step),
    )
    handler.close()
    logger.removeHandler(handler)
    return path
