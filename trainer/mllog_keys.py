"""The mllog configuration keys the 6.1.0 compliance checker requires, from a TrainConfig.

The list follows mlperf_logging/compliance_checker/training_6.1.0: common.yaml (submission_*, train/eval
samples, precision and parallelism disclosures, micro_batch_size, config_filename), closed_common.yaml
(gradient_accumulation_steps; recorded for both divisions) and {open,closed}_qwen35_397b_grpo.yaml.
cache_clear is not here: replay emits it with init_start.
"""

from __future__ import annotations

from typing import Any

from mlperf_logging.mllog import constants as C

from recorder.rules import BENCHMARK
from trainer.config import TrainConfig


def mllog_config_items(cfg: TrainConfig, *, precision: str = "fp32") -> list[tuple[str, Any]]:
    """(key, value) pairs in the order they are recorded; precision is the lowest used (the tiny model
    trains and samples in float32)."""
    gbs = cfg.global_batch_size
    return [
        (C.SUBMISSION_ORG, cfg.submission_org),
        (C.SUBMISSION_PLATFORM, cfg.submission_platform),
        (C.SUBMISSION_DIVISION, cfg.division),
        (C.SUBMISSION_BENCHMARK, BENCHMARK),
        (C.SUBMISSION_STATUS, "research"),
        (C.GLOBAL_BATCH_SIZE, gbs),
        (C.TRAIN_SAMPLES, cfg.max_steps * gbs),
        (C.EVAL_SAMPLES, cfg.eval.samples),
        (C.MAX_SEQUENCE_LENGTH, cfg.max_sequence_length),
        ("init_checkpoint_step", 0),
        ("max_steps", cfg.max_steps),
        (C.OPT_NAME, "adamw"),
        (C.OPT_BASE_LR, cfg.learning_rate),
        ("opt_adamw_beta_1", cfg.adam_beta1),
        ("opt_adamw_beta_2", cfg.adam_beta2),
        ("opt_adamw_epsilon", cfg.adam_epsilon),
        ("opt_adamw_weight_decay", cfg.weight_decay),
        ("opt_gradient_clip_norm", cfg.grad_clip_norm),
        (C.OPT_LR_WARMUP_STEPS, 0),
        (C.OPT_LR_DECAY_SCHEDULE, "constant"),
        ("generation_training_rollout_temperature", cfg.rollout_temperature),
        ("generation_training_rollout_top_p", cfg.rollout_top_p),
        ("generation_validation_rollout_temperature", cfg.eval.temperature),
        ("generation_validation_rollout_top_p", cfg.eval.top_p),
        ("num_prompts_per_step", cfg.num_prompts_per_step),
        ("num_generations_per_prompt", cfg.num_generations_per_prompt),
        (C.GRADIENT_ACCUMULATION_STEPS, cfg.gradient_accumulation_steps),
        ("micro_batch_size", cfg.micro_batch_size),
        ("lowest_numerical_precision_in_linear", precision),
        ("lowest_numerical_precision_in_attn", precision),
        ("lowest_numerical_precision_in_comm", precision),
        ("tensor_parallelism", 1),
        ("pipeline_parallelism", 1),
        ("context_parallelism", 1),
        ("expert_parallelism", 1),
        ("config_filename", cfg.config_filename),
    ]
