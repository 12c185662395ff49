"""Whether a run's verdict compares with MLPerf results: the one answer every command that prints a verdict
shows (replay, score, eval, evals, report, runs).

A run compares when it is judged by the ruleset's pass target and evaluated as the ruleset evaluates. The
benchmark's evaluation is identified by what it scores, never by how a setting is spelled: the task set by
its content (the spec's sha256, whatever its file name), how many of its tasks, k, and the sampling
(recorder.rules BENCHMARK_EVAL). Both what the run recorded it would do (`config.eval` of its first
run_opened) and what each of its benchmark results says was done (k, tasks, task spec) must be that.

A run evaluated otherwise may be perfectly honest (a quick run on 64 tasks); it is never a benchmark result:
its pass or fail says nothing against the benchmark, and every verdict says NOT COMPARABLE, with why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from recorder.rules import TARGET, eval_deviations, is_standard_target, recorded_target
from recorder.store.kinds import EvalResult, RunOpened

NOT_COMPARABLE = "NOT COMPARABLE"


def config_eval(opened: RunOpened | None) -> Mapping[str, Any] | None:
    """A recorded run's `config.eval` (imports record none: their settings are their evaluations')."""
    config = opened.config if opened is not None else None
    section = config.get("eval") if isinstance(config, Mapping) else None
    return section if isinstance(section, Mapping) else None


def scored_with(result: EvalResult) -> Mapping[str, Any] | None:
    """How our evaluator scored a benchmark result, in `config.eval`'s names; None when the settings are not
    known (the submitter's command, an import's own line)."""
    if result.k is None or result.backend == "command":
        return None
    return {"k": result.k, "samples": result.n, "task_sha256": result.task_sha256}


def why_not_comparable(opened: RunOpened | None, scored: Iterable[Mapping[str, Any] | None] = ()) -> str | None:
    """Why a run is not comparable to MLPerf results, or None when it is. `opened`: its first run_opened;
    `scored`: how each of its benchmark results was scored (`scored_with`)."""
    return why_not_judged(recorded_target(opened), config_eval(opened), scored)


def why_not_judged(
    target: float | None, section: Mapping[str, Any] | None, scored: Iterable[Mapping[str, Any] | None] = ()
) -> str | None:
    """`why_not_comparable` of a run judged by `target` and evaluated with `section` (`config.eval`'s names)."""
    why = [target_reason(target)] if not is_standard_target(target) else []
    return "; ".join(why + evaluated_otherwise(section, scored)) or None


def evaluated_otherwise(
    section: Mapping[str, Any] | None, scored: Iterable[Mapping[str, Any] | None] = ()
) -> list[str]:
    """How the run's evaluation is not the benchmark's, as recorded (`section`: its `config.eval`) and as done
    (`scored`): the part of `why_not_comparable` that is not the target."""
    why = []
    recorded = eval_deviations(section or {})
    if recorded:
        why.append(f"its evaluation is not the benchmark's ({', '.join(recorded)})")
    # what the results show beyond what the config already says (a run scored as it said it would be is one reason)
    done = [
        d for d in dict.fromkeys(d for s in scored if s is not None for d in eval_deviations(s)) if d not in recorded
    ]
    if done:
        why.append(f"its results were scored otherwise than the benchmark ({', '.join(done)})")
    return why


def target_reason(target: float | None) -> str:
    """Why a run judged by `target` is not comparable ('' for the ruleset's own)."""
    return "" if is_standard_target(target) else f"the run's pass target is {target:g}, not the ruleset's {TARGET:g}"


def with_what_judges(why: str, target: float | None, checker: str) -> str:
    """`why` a run is not comparable, followed by what its results pass or fail: a run's own target judges it
    in eval, the history and replay while the `checker` ruleset's checker reads its own; at the ruleset's
    target, a result evaluated otherwise passes or fails nothing against the benchmark."""
    if not is_standard_target(target):
        return (
            f"{why}; eval, the history and replay judge passing by the run's own target, and the {checker} checker "
            "by the ruleset's"
        )
    return f"{why}; its scores pass or fail nothing against the benchmark"
