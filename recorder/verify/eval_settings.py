"""How a run said it is to be evaluated, and rule eval-settings: every benchmark evaluation of it did so.

`recorder train` records its resolved config in `run_opened.data.config`; its `eval` section fixes what the
score means: pass@k with `k` samples per task, over the first `samples` tasks of one task spec, whose sha256
(the spec file and its data) is `task_sha256` (trainer/config.py resolve_task). An evaluation with a larger
k, fewer tasks or an easier spec scores another benchmark, however honest each of its events is, and the
one-task-spec rule cannot see it when every evaluation of the run was done the same way.

Imported runs record no such section (their config is the foreign trainer's): `recorder eval --task` gives
their settings, and only one-task-spec holds them together. A run recorded before `task_sha256` existed is
checked on k and samples only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from recorder.events import Event
from recorder.kinds import EvalResult
from recorder.verify.findings import Findings


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
