"""Every rule verify names, with what it refuses in one line: the one list the code, the docs and the tests
read. A rule is named here before any check may fail with it (`rule` raises on an unknown name), and the rule
table in docs/integrity.md is generated from this list (`python -m recorder.verify.check_table`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Check:
    """A named verify check (its name is the rule a failure cites): its layer (`bytes`, `trust`, `facts`,
    `derived`), and what it refuses."""

    name: str
    layer: str
    refuses: str
    only_recorded: bool = False  # an imported log's own times and steps are the log's: checked on our writers only
    breach: bool = False  # what it refuses is how the run was done against the benchmark's rule, not altered bytes


_CHECKS = (
    Check("signature", "bytes", "a bad signature"),
    Check("segment-name", "bytes", "a segment file named other than its writer names it"),
    Check(
        "signed-run",
        "trust",
        "in a signed run or under trusted keys, a segment not signed by the run's (or a trusted) key",
    ),
    Check(
        "signed-set",
        "trust",
        "a signed run whose signed-segments list is missing, not its key's, or names segments deleted or cut",
    ),
    Check(
        "adopted-segment",
        "trust",
        "a segment left open by a killed writer and adopted on resume that changed after its adoption, or "
        "whose adopted events do not end at its writer's last chain_signed",
    ),
    Check("payload", "facts", "an event whose data does not parse as its kind's payload"),
    Check("kind-writer", "facts", "an event of a kind its writer may not record (the catalogue's `writers`)"),
    Check("run-writer", "facts", "a run_start, weight update, commit or train_stop not from the run's writer"),
    Check("imported-from", "facts", "`imported_from` stated by a run_opened that is not the importer's"),
    Check("run-id", "facts", "an event of another run id than the run's own `run_opened`"),
    Check("time-range", "facts", "an event dated before 1970, from 2100, or more than a day after now", True),
    Check("mono-order", "facts", "a segment whose monotonic clock goes back", True),
    Check("wall-order", "facts", "an event dated more than 0.5 s before an earlier event of its segment", True),
    Check("clock-agreement", "facts", "wall times that fall behind the monotonic clock (0.5 s + 0.1 % allowed)", True),
    Check("step-range", "facts", "a step below 0 or from 2**31"),
    Check("one-run-opened", "facts", "a second `run_opened` that is not a resume, or one that changes the benchmark"),
    Check(
        "session-steps", "facts", "a trainer session whose updates are not 1, 2, 3, ..., or lack their metrics", True
    ),
    Check("session-overlap", "facts", "two trainer sessions of one run that overlap in time", True),
    Check("train-stop-order", "facts", "`train_stop` before its session's last weight update", True),
    Check("one-run-start", "facts", "a second `run_start`"),
    Check(
        "run-start-first", "facts", "a step's event (block_start, update, metrics, rank step) dated before `run_start`"
    ),
    Check("step-samples", "facts", "a step fact whose samples_count is not step x global batch size", True),
    Check(
        "step-window", "facts", "a weight update dated sooner after the previous step than its generation took", True
    ),
    Check(
        "save-window",
        "facts",
        "a save outside its step: before its update, ending before it began, or blocking too long",
        True,
    ),
    Check("train-stop-recorded", "facts", "a closed trainer session without `train_stop`, or completed short", True),
    Check("one-update-per-step", "facts", "a second `weight_update` for one step"),
    Check("update-after-run-start", "facts", "a weight update, stop or evaluation dated before `run_start`"),
    Check("update-order", "facts", "weight updates whose times do not rise with their steps"),
    Check("update-before-commit", "facts", "a checkpoint committed before its weight update"),
    Check("one-commit-per-step", "facts", "a second `checkpoint_committed` for one step"),
    Check("commit-inside-run", "facts", "a checkpoint path outside the run directory, or not a plain path"),
    Check("commit-sha", "facts", "a weights file or shard whose size or sha256 is not the committed one"),
    Check("commit-metadata", "facts", "weights whose stored step, weight-update time or run id differ from the commit"),
    Check("commit-files", "facts", "a committed config or tokenizer file that is missing or changed"),
    Check("eval-names-commit", "facts", "an evaluation of a step that has no committed checkpoint"),
    Check(
        "truncated-segment",
        "facts",
        "an open trainer segment missing the commit or train_stop that a later evaluation relied on",
    ),
    Check("eval-after-commit", "facts", "an evaluation that starts before its checkpoint's commit"),
    Check("eval-after-train-stop", "facts", "an evaluation that starts before `train_stop`, or of a run never stopped"),
    Check("eval-result-inside-evaluation", "facts", "a result or stop outside its evaluation"),
    Check(
        "eval-precision",
        "facts",
        "an evaluation in neither bf16 nor the dtype the run's rollouts were made in",
        breach=True,
    ),
    Check("one-evaluation-open", "facts", "an `eval_start` of a step whose evaluation in that segment has not ended"),
    Check("eval-result-key", "facts", "an `eval_result` without a key (the benchmark's is `accuracy`)"),
    Check("eval-value", "facts", "an accuracy that is not a finite number in [0, 1]"),
    Check("one-result-per-step", "facts", "a second benchmark accuracy for one step"),
    Check("eval-from-validation-start", "facts", "an evaluation of a step before the validation start"),
    Check("one-task-spec", "facts", "evaluations of one run scored with different task specs"),
    Check("eval-settings", "facts", "an evaluation whose k, task count or task spec differ from the run's"),
    Check(
        "benchmark-eval",
        "facts",
        "a run claiming the benchmark (target 0.69, the 251 tasks of its task set, known by content) evaluated "
        "otherwise than the ruleset: pass@4, temperature 0.1, top_p 0.95",
    ),
    Check("eval-config", "facts", "a `config.eval` that differs from the run's own mllog_config lines or target", True),
    Check("eval-evidence", "facts", "a results.json missing, altered, or stating another step, score or setting"),
    Check("derived-scores", "derived", "a row of derived/scores.jsonl that the events do not derive"),
)

CHECKS: dict[str, Check] = {r.name: r for r in _CHECKS}


def rule(name: str) -> str:
    """`name`, checked to be a registered rule (an unregistered name is a bug, caught by the first test)."""
    if name not in CHECKS:
        raise KeyError(f"verify rule {name!r} is not in recorder/verify/registry.py")
    return name
