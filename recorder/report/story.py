"""What happened to a run, in words: the sentences at the top of its report.

A reviewer reads these before any table. Each sentence states a recorded fact or a score replay wrote;
none is inferred beyond what the events and `derived/scores.jsonl` say.
"""

from __future__ import annotations

from typing import Any

from recorder.report.long_series import first_steps
from recorder.report.page_data import RunFacts
from recorder.rules import TARGET


def _steps(steps: list[int], count: int | None = None) -> str:
    """The first eight steps, and how many there are (`count`, when `steps` holds only the first ones)."""
    count = len(steps) if count is None else count
    return ", ".join(str(s) for s in steps[:8]) + (f", ... ({count} in all)" if count > 8 else "")


def _evaluated(f: RunFacts) -> str:
    scored = [e for e in f.evals if e["value"] is not None]
    if not scored:
        return ""
    best = (min if f.lower_is_better else max)(scored, key=lambda e: e["value"])  # by the benchmark's direction
    return (
        f"{len(scored)} checkpoint(s) evaluated (steps {_steps([e['step'] for e in scored])}); "
        f"the best scored {best['value']:.4f} at step {best['step']}"
    )


def _training(f: RunFacts) -> str:
    stop = f.train_stop
    steps = f.facts.get("steps")
    saved = f.checkpoints.num_rows
    saves = (
        f"checkpoints saved at steps {_steps(first_steps(f.checkpoints), saved)}" if saved else "no checkpoint saved"
    )
    if stop is None:
        if f.open_segments:
            return (
                f"Training is still being written ({f.open_segments} open segment(s)): {steps} steps so far, {saves}."
            )
        return f"Training recorded no train_stop (the trainer died?): {steps} steps, {saves}."
    status = stop["status"] or "unknown"
    reason = f" ({stop['reason']})" if stop["reason"] else ""
    if status == "completed":
        return f"Training completed {stop['step']} steps; {saves}."
    return f"Training was {status} at step {stop['step']}{reason}; {saves}."


def _score(f: RunFacts, row: dict[str, Any] | None) -> str:
    name = f.mllog_name
    if row is None:
        return f"No {name} score was written."
    if row["status"] == "success":
        return (
            f"Converged ({name}): step {row['passing_step']}'s checkpoint passes the target "
            f"({f.goal_text}); run_stop at {row['minutes']:.3f} minutes."
        )
    if row["status"] == "aborted":
        return (
            f"Did not converge ({name}): no evaluated checkpoint passes the target ({f.goal_text}); run_stop "
            f"has status aborted at {row['minutes']:.3f} minutes, so the run scores nothing."
        )
    return f"Not scored ({name}): {row['why']}."


def what_happened(f: RunFacts) -> list[str]:
    """The run's story, most important first: trust marks, outcome, training, evaluation."""
    out: list[str] = []
    if f.verify_problems:
        out.append(
            f"UNVERIFIED: the run fails `recorder verify` ({f.verify_problems[0]}"
            f"{f'; and {len(f.verify_problems) - 1} more' if len(f.verify_problems) > 1 else ''}); "
            "nothing below is evidence."
        )
    if f.resumed:
        out.append(f"RESUMED: {'; '.join(f.resumed)}. Its history is kept, but it is not a valid timed MLPerf run.")
    if f.not_comparable:
        targets = ", ".join(str(t) for t in f.not_comparable)
        out.append(f"NOT COMPARABLE: judged by pass target {targets}, not the ruleset's {TARGET}.")
    if f.other_evaluation:
        other = "; ".join(f.other_evaluation)
        out.append(f"NOT COMPARABLE: {other}; its scores pass nothing.")
    stopped_early = f.train_stop is not None and f.train_stop["status"] != "completed"
    if stopped_early:  # the reason nothing else happened comes first
        out.append(_training(f))
    out.append(_score(f, f.headline) + (f" ({f.proof}.)" if f.proof else ""))
    if f.imported_from:
        out.append(f"Imported from {f.imported_from}: the original mllog lines, scored as recorded.")
    elif not stopped_early:
        out.append(_training(f))
    evaluated = _evaluated(f)
    failed = [e for e in f.evals if e["status"] == "failed"]
    if evaluated:
        out.append(evaluated + ".")
    elif not f.imported_from:
        out.append("No checkpoint has been evaluated: `recorder eval RUN_DIR` evaluates them.")
    if failed:
        out.append(f"{len(failed)} evaluation(s) failed: step {failed[0]['step']}: {failed[0]['reason']}.")
    return out
