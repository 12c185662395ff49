"""Ruleset facts: what each ruleset with an offline-evaluation rule fixes for the benchmark that rule judges,
the facts the offline-evaluation interpretations derive a log from, one row per ruleset version (`FACTS`:
6.1.0 for `qwen35_397b_grpo`). Which rulesets and benchmarks exist is `replay.rulesets` (discovered from the
installed checker); the offline rule applies where a ruleset has a row here, which its `KnownRuleset` carries
(`offline_rule`, set once when the installed rulesets are read), so a newer ruleset gets no facts it did not
state until its row is added. A row states every number it fixes, the validation start included.

Kept as data here (not read from mlperf-logging at derive time) so that `derive` reads events only;
tests/replay/test_checkers.py (test_required_keys_match_the_checker_yaml) checks these lists against the
installed checker's own YAML files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlperf_logging.mllog import constants as C

from recorder import rules

# mlperf_logging.mllog.constants has no name for the per-step statistics key the reference writes.
TRACKED_STATS = "tracked_stats"

# Keys every 6.1.0 division requires once (training_6.1.0/common.yaml), in the order they are emitted
# when the run itself did not record them.
COMMON_REQUIRED: tuple[str, ...] = (
    C.SUBMISSION_BENCHMARK,
    C.SUBMISSION_ORG,
    C.SUBMISSION_DIVISION,
    C.SUBMISSION_PLATFORM,
    C.TRAIN_SAMPLES,
    C.EVAL_SAMPLES,
    C.LOWEST_NUMERICAL_PRECISION_IN_LINEAR,
    C.LOWEST_NUMERICAL_PRECISION_IN_ATTN,
    C.LOWEST_NUMERICAL_PRECISION_IN_COMM,
    C.TENSOR_PARALLELISM,
    C.PIPELINE_PARALLELISM,
    C.CONTEXT_PARALLELISM,
    C.EXPERT_PARALLELISM,
    C.MICRO_BATCH_SIZE,
    C.CONFIG_FILENAME,
)
# closed_common.yaml adds this one.
CLOSED_COMMON_REQUIRED: tuple[str, ...] = (C.GRADIENT_ACCUMULATION_STEPS,)
# closed_qwen35_397b_grpo.yaml and open_qwen35_397b_grpo.yaml (same keys, closed checks their values).
BENCHMARK_REQUIRED: tuple[str, ...] = (
    C.GLOBAL_BATCH_SIZE,
    C.MAX_SEQUENCE_LENGTH,
    C.EVAL_SAMPLES,
    C.INIT_CHECKPOINT_STEP,
    C.MAX_STEPS,
    C.OPT_NAME,
    C.OPT_BASE_LR,
    C.OPT_ADAMW_BETA_1,
    C.OPT_ADAMW_BETA_2,
    C.OPT_ADAMW_EPSILON,
    C.OPT_ADAMW_WEIGHT_DECAY,
    C.OPT_GRADIENT_CLIP_NORM,
    C.OPT_LR_WARMUP_STEPS,
    C.OPT_LR_DECAY_SCHEDULE,
    C.GENERATION_TRAINING_ROLLOUT_TEMPERATURE,
    C.GENERATION_TRAINING_ROLLOUT_TOP_P,
    C.GENERATION_VALIDATION_ROLLOUT_TEMPERATURE,
    C.GENERATION_VALIDATION_ROLLOUT_TOP_P,
    C.NUM_PROMPTS_PER_STEP,
    C.NUM_GENERATIONS_PER_PROMPT,
)


@dataclass(frozen=True)
class RulesetFacts:
    """What one ruleset version fixes for the benchmark its offline-evaluation rule judges."""

    ruleset: str  # the version whose files state these facts: "6.1.0"
    benchmark: str
    target: float  # passing means accuracy > target (the checker's ATLEAST_ONE_CHECK)
    validation_start: Callable[[int], int]  # global batch size -> the first step whose checkpoint must exist
    common_required: tuple[str, ...]
    closed_common_required: tuple[str, ...]
    benchmark_required: tuple[str, ...]

    def validation_start_step(self, global_batch_size: int) -> int:
        """The first step whose checkpoint must exist and be evaluable, as this row states it."""
        return self.validation_start(global_batch_size)

    def samples_after(self, step: int, global_batch_size: int) -> int:
        """Samples after step k (recorder.rules)."""
        return rules.samples_after(step, global_batch_size)

    def required_keys(self, division: str) -> tuple[str, ...]:
        """Every configuration key the checker requires exactly once for `division`, without repeats."""
        closed = self.closed_common_required if division == C.CLOSED else ()
        return tuple(dict.fromkeys(self.common_required + closed + self.benchmark_required))


# training_policies PR #596: offline evaluation starts with v6.1.
FACTS: dict[str, RulesetFacts] = {
    "6.1.0": RulesetFacts(
        ruleset="6.1.0",
        benchmark=rules.BENCHMARK,
        target=rules.TARGET,
        validation_start=rules.validation_start_step,
        common_required=COMMON_REQUIRED,
        closed_common_required=CLOSED_COMMON_REQUIRED,
        benchmark_required=BENCHMARK_REQUIRED,
    ),
}
