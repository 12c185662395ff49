"""How a run said it is to be evaluated, and rule eval-settings: every benchmark evaluation of it did so.

`recorder train` records its resolved config in `run_opened.data.config`; its `eval` section fixes what the
score means: pass@k with `k` samples per task, over the first `samples` tasks of one task spec, whose sha256
(the spec file and its data) is `task_sha256` (trainer/config.py resolve_task). An evaluation with a larger
k, fewer tasks or an easier spec scores another benchmark, however honest each of its events is, and the
one-task-spec rule cannot see it when every evaluation of the run was done the same way.

Rule eval-config holds `config.eval` itself to what the run also recorded for the mllog: its
`mllog_config` lines `generation_validation_rollout_temperature`, `generation_validation_rollout_top_p`
and `eval_samples` (trainer/mllog_keys.py writes them from the same config), and the pass target to
`run_opened.target`. A config.eval rewritten to sample hotter, or more often, than the lines the run
submitted say, describes another benchmark.

Rule benchmark-eval holds a run that claims the benchmark to the ruleset's evaluation (recorder.rules
BENCHMARK_EVAL): a run whose target is the ruleset's and whose config.eval scores the built-in task's 251
validation tasks must score them pass@4 at temperature 0.1 and top_p 0.95 with the shipped spec, and each
of its benchmark results (and any result over those 251 tasks at that target) pass@4 over them. A run that
does not claim it (another target, task or count of tasks) is shown NOT COMPARABLE wherever it is scored.

Imported runs record no such section (their config is the foreign trainer's): `recorder eval --task` gives
their settings, and only one-task-spec holds them together. A run recorded before `task_sha256` existed is
checked on k and samples only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from recorder.rules import EVAL_SAMPLES, EVAL_TASK_SHA256, TARGET, eval_deviations, is_standard_target, recorded_target
from recorder.store.events import Event
from recorder.store.kinds import EvalResult, RunOpened
from recorder.verify.findings import Findings

BENCHMARK_EVAL_RULE = "benchmark-eval"


@dataclass(frozen=True, slots=True)
class RecordedEval:
    """`run_opened.data.config.eval` as far as the score depends on it."""

    k: int
    samples: int
    task: str | None  # the spec file a run on a spec trained on; None: the built-in addition task
    task_sha256: str | None  # None: recorded before the field

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> RecordedEval | None:
        """The recorded settings, or None when the config has no `eval` section of `recorder train`'s."""
        section = config.get("eval")
        if not isinstance(section, Mapping):
            return None
        k, samples, task, sha = (section.get(key) for key in ("k", "samples", "task", "task_sha256"))
        if _count(k) and _count(samples):
            return cls(k, samples, task if isinstance(task, str) else None, sha if isinstance(sha, str) else None)
        return None


def _count(v: object) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def check_eval_settings(e: Event, result: EvalResult, recorded: RecordedEval, found: Findings) -> None:
    """Rule eval-settings: a benchmark result of our evaluator (it records k) scored pass@k with the run's k,
    over its `samples` tasks, with its task spec. The submitter's command (no k) is its own evaluation."""
    if result.k is None or result.backend == "command":
        return
    why = []
    if result.k != recorded.k:
        why.append(f"pass@{result.k}, not pass@{recorded.k}")
    if result.n != recorded.samples:
        why.append(f"{result.n} tasks, not {recorded.samples}")
    if recorded.task_sha256 is not None and result.task_sha256 != recorded.task_sha256:
        spec = recorded.task or "the built-in addition task"
        why.append(f"task spec {str(result.task_sha256)[:16]}..., not {spec} ({recorded.task_sha256[:16]}...)")
    if why:
        found.fail(
            e,
            "eval-settings",
            f"evaluation of step {e.step} scores {'; '.join(why)}: not the evaluation the run recorded "
            "(run_opened config.eval)",
        )


# config.eval key -> the mllog_config key the trainer records from it
MLLOG_OF_EVAL = {
    "temperature": "generation_validation_rollout_temperature",
    "top_p": "generation_validation_rollout_top_p",
    "samples": "eval_samples",
}


def check_eval_config(opened: RunOpened, configs: list[Event], found: Findings, at: Event) -> None:
    """Rule eval-config: `config.eval` (of `at`, the run's first run_opened) agrees with the run's own
    mllog_config lines (the first of each key) and its recorded target."""
    section = opened.config.get("eval")
    if not isinstance(section, Mapping):
        return
    lines: dict[str, Any] = {}
    for e in configs:
        if e.key is not None and e.key not in lines:
            try:
                lines[e.key] = e.value
            except ValueError:  # not JSON: rule payload's
                continue
    why = [
        f"eval.{name} {section.get(name)!r}, the mllog line {key} {lines[key]!r}"
        for name, key in MLLOG_OF_EVAL.items()
        if key in lines and not _same(section.get(name), lines[key])
    ]
    target = section.get("target")
    if target is not None and opened.target is not None and not _same(target, opened.target):
        why.append(f"eval.target {target!r}, run_opened's target {opened.target!r}")
    if why:
        found.fail(at, "eval-config", f"config.eval is not what the run recorded: {'; '.join(why)}")


def _same(a: object, b: object) -> bool:
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, numbers) and isinstance(b, numbers)):
        return a == b
    return float(a) == float(b)


def benchmark_section(opened: RunOpened) -> Mapping[str, Any] | None:
    """The run's `config.eval` when it claims the benchmark: the ruleset's target, scored over the 251
    validation tasks of the benchmark's task set, known by its content (the spec's sha256, whatever the file is
    called: a renamed copy claims it too; a run recorded before the hash, by naming the built-in task); None
    otherwise (no section, or another target, task set or count)."""
    config = opened.config
    section = config.get("eval") if isinstance(config, Mapping) else None
    if not isinstance(section, Mapping) or not is_standard_target(recorded_target(opened)):
        return None
    sha = section.get("task_sha256")
    the_set = sha == EVAL_TASK_SHA256 if sha is not None else section.get("task") is None
    if not the_set or not _same(section.get("samples"), EVAL_SAMPLES):
        return None
    return section


def check_benchmark_config(opened: RunOpened, found: Findings, at: Event) -> None:
    """Rule benchmark-eval on `config.eval` (of `at`, the run's first run_opened)."""
    section = benchmark_section(opened)
    why = eval_deviations(section) if section is not None else []
    if why:
        found.fail(
            at,
            BENCHMARK_EVAL_RULE,
            f"the run claims the benchmark (target {TARGET:g}, the {EVAL_SAMPLES} validation tasks of the "
            f"benchmark's task spec, by its sha256) but config.eval evaluates with {'; '.join(why)}: that scores "
            "another benchmark",
        )


def check_benchmark_result(e: Event, result: EvalResult, claimed: bool, target: float | None, found: Findings) -> None:
    """Rule benchmark-eval on a benchmark result of our evaluator: in a run that claims the benchmark, or
    scored over the benchmark's tasks at its target, it is pass@4 over the 251 tasks of the shipped spec."""
    if result.k is None or result.backend == "command":
        return
    on_the_set = result.n == EVAL_SAMPLES and result.task_sha256 in (None, EVAL_TASK_SHA256)
    if not (claimed or (on_the_set and is_standard_target(target))):
        return
    why = eval_deviations({"k": result.k, "samples": result.n, "task_sha256": result.task_sha256})
    if why:
        found.fail(
            e,
            BENCHMARK_EVAL_RULE,
            f"evaluation of step {e.step} scores the benchmark with {'; '.join(why)}: not the ruleset's evaluation",
        )
