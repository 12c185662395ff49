"""The benchmark's rule, in one place: MLPerf Training 6.1 `qwen35_397b_grpo` with offline evaluation.

Trainer, evaluator, replay and the importers all import these; none restates them. Everything here is
plain arithmetic on recorded facts, so the core can hold it without importing replay or mlperf-logging.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from recorder.store.kinds import RunOpened

BENCHMARK = "qwen35_397b_grpo"
RULESET = "6.1.0"
# Passing means accuracy > TARGET: the 6.1.0 checker's ATLEAST_ONE_CHECK is `eval_accuracy > 0.69`.
TARGET = 0.69


# The benchmark's evaluation: pass@4 at temperature 0.1 and top_p 0.95 over the 251 validation tasks of the
# shipped addition task spec, whose sha256 (the spec file and its data, trainer/policy/taskspec.py) is this.
EVAL_K = 4
EVAL_SAMPLES = 251
EVAL_TEMPERATURE = 0.1
EVAL_TOP_P = 0.95
EVAL_TASK_SHA256 = "8b420935a17f5c3178dcd70dd7263877d1fa7b210d0f619c632f13c69c4a724f"
BENCHMARK_EVAL: Mapping[str, float | int | str] = {
    "k": EVAL_K,
    "samples": EVAL_SAMPLES,
    "temperature": EVAL_TEMPERATURE,
    "top_p": EVAL_TOP_P,
    "task_sha256": EVAL_TASK_SHA256,
}


def eval_deviations(settings: Mapping[str, Any]) -> list[str]:
    """How evaluation settings (`k`, `samples`, `temperature`, `top_p`, `task_sha256`, as `config.eval`
    names them) differ from the benchmark's: one phrase per setting that is given and differs."""
    out = []
    for name, want in BENCHMARK_EVAL.items():
        got = settings.get(name)
        if got is not None and not _same(got, want):
            out.append(f"{name} {_shown(name, got)}, not {_shown(name, want)}")
    return out


def _shown(name: str, value: object) -> str:
    return f"{value[:16]}..." if name == "task_sha256" and isinstance(value, str) else repr(value)


def _same(a: object, b: object) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, numbers) and isinstance(b, numbers)):
        return a == b
    return float(a) == float(b)


def validation_start_step(global_batch_size: int) -> int:
    """CEIL(2.5 + 3840 / GBS): the first step whose checkpoint must exist and be evaluable.

    Exact arithmetic: 3840/256 is exactly 15, so the answer is 18, never a float's 17.999...
    """
    if global_batch_size <= 0:
        raise ValueError(f"global batch size must be positive, not {global_batch_size}")
    return math.ceil(Fraction(5, 2) + Fraction(3840, global_batch_size))


def samples_after(step: int, global_batch_size: int) -> int:
    """Samples trained after step k: k * GBS (one global batch of rollouts per step)."""
    return step * global_batch_size


def passes(accuracy: float | None, target: float = TARGET) -> bool:
    """Whether an evaluation passes: strictly above the target, as the checker demands."""
    return accuracy is not None and accuracy > target


def finite_score(value: Any) -> float | None:
    """A recorded accuracy as a float, or None when it is no score at all: not a number (a string, a bool,
    null), or not finite (NaN, an infinity, an integer too large for a float). Nothing passes without one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        score = float(value)
    except OverflowError:
        return None
    return score if math.isfinite(score) else None


def passes_sql(accuracy: str, target: str) -> str:
    """`passes` for SQL readers (the history views): the same strict comparison over two SQL expressions."""
    return f"({accuracy} > {target})"


def recorded_target(opened: RunOpened | None) -> float | None:
    """The pass target a run recorded in its run_opened, `target` (read from the config of runs recorded
    before the field: RunOpened.from_event upcasts). None when it recorded none (imported logs)."""
    return None if opened is None or opened.target is None else float(opened.target)


def pass_target(recorded: float | None) -> float:
    """The one target a run's evaluations are judged by, in eval, the history and replay alike: the one it
    recorded, or the ruleset's when it recorded none."""
    return TARGET if recorded is None else recorded


def is_standard_target(target: float | None) -> bool:
    """Whether a run's recorded target is the ruleset's; any other makes the run not comparable."""
    return target is None or target == TARGET


def is_standard_target_sql(target: str) -> str:
    """`is_standard_target` for SQL readers (the history views)."""
    return f"({target} IS NULL OR {target} = {TARGET!r})"


def series_problems(steps: list[int], start: int, final_step: int | None) -> list[str]:
    """What is wrong with the committed steps under the rule; empty when the series is complete.

    The rule: from the validation start on, a checkpoint after every step until training stops.
    `steps` ascending; `final_step` the last step trained (train_stop), when known.
    """
    problems: list[str] = []
    early = [s for s in steps if s < start]
    if early:
        problems.append(f"checkpoints before the validation start {start}: steps {step_ranges(early)}")
    valid = [s for s in steps if s >= start]
    if not valid:
        problems.append(f"no checkpoint at or after the validation start {start}")
        return problems
    if valid[0] != start:
        problems.append(f"the series starts at step {valid[0]}, not at the validation start {start}")
    last = max(valid[-1], final_step or 0)
    missing = sorted(set(range(start, last + 1)) - set(valid))
    if missing:
        problems.append(
            f"missing checkpoints for steps {step_ranges(missing)} (training stopped at step "
            f"{final_step if final_step is not None else 'unknown'})"
        )
    return problems


def step_ranges(steps: list[int]) -> str:
    """[18, 19, 20, 23] -> '18-20, 23'."""
    out: list[str] = []
    i = 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and steps[j + 1] == steps[j] + 1:
            j += 1
        out.append(str(steps[i]) if i == j else f"{steps[i]}-{steps[j]}")
        i = j + 1
    return ", ".join(out)
