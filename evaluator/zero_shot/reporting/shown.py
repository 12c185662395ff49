"""What a zero-shot result may show, and how: each task's score only when its data is the task's own content
(evaluator.harness.task_content), a smoke test (`--limit`) marked as one, and a score outside its metric's
range refused altogether. `recorder collect` and zero-shot's own table both show results through here."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluator.harness.task_content import judge
from evaluator.harness.taskset import METRICS
from evaluator.zero_shot.options import MAX_GAP, MAX_GAP_CEILING
from recorder.results.zero_shot import ZeroShotDocument, ZeroShotResults

NOT_TASK = "not-task"  # the cell of a score on data that is not the task's
UNIT_RANGE = (0.0, 1.0)
RANGES = {"acc": UNIT_RANGE, "acc_norm": UNIT_RANGE}  # every metric the zero-shot tasks report is a fraction


@dataclass(frozen=True, slots=True)
class ShownResult:
    """One result as shown: each task's cell, the average of the scores shown, the note (smoke test, test
    data, not the task) and one line per task whose data is not the task, saying why."""

    doc: ZeroShotDocument
    cells: dict[str, str]
    average: str
    note: str
    not_task: list[str] = field(default_factory=list)


UNSIGNED = "unsigned"  # the note of a result no key signed, shown without --trust
KEY_NOT_CHECKED = "key not checked"  # the note of a signed result shown without --trust
AUTHORSHIP = {
    UNSIGNED: "unsigned: no key signed it and no --trust key was given: its digest says only that nothing changed "
    "since whoever wrote it computed it (anyone who can write its results.json can edit the scores and recompute it)",
    KEY_NOT_CHECKED: "key not checked: signed, but no --trust key was given to check its key against",
}


def authorship(doc: ZeroShotDocument) -> str:
    """How far a result shown without trusted keys is vouched for: unsigned, or signed by a key not checked."""
    binding = doc.binding
    return UNSIGNED if binding is None or binding.signature is None else KEY_NOT_CHECKED


def shown(
    doc: ZeroShotDocument, pins: Mapping[tuple[str, str], frozenset[str]], *, unchecked: bool = False
) -> ShownResult:
    """`doc` as the table shows it, its tasks' data judged against the known content (`pins` added);
    `unchecked`: shown without trusted keys, its note says so (unsigned, or key not checked)."""
    cells: dict[str, str] = {}
    values: list[float] = []
    test_data: list[str] = []
    not_task: list[str] = []
    for name, score in doc.scores.items():
        task = _task(doc, name)
        judged = judge(name, task.get("version"), task.get("content_sha256"), pins)
        if judged.known == "not the task":
            cells[name] = NOT_TASK
            not_task.append(f"not the task: {doc.label} {name}: {judged.why}")
            continue
        if judged.known == "test data":
            test_data.append(name)
        cells[name] = f"{score:.4f}"
        values.append(score)
    average = f"{sum(values) / len(values):.4f}" if values and not not_task else "-"
    # "smoke test" alone: the limit is in results.json, and a longer note would push the table into blocks
    notes = ["smoke test"] if smoke_test(doc) is not None else []
    every = len(test_data) == len(doc.scores)
    notes += ["test data" + ("" if every else f" ({' '.join(test_data)})")] if test_data else []
    notes += ["not the task"] if not_task else []
    notes += [gap] if (gap := wider_gap(doc)) else []
    notes += [code] if (code := outside_the_install(doc)) else []
    notes += [authorship(doc)] if unchecked else []
    return ShownResult(doc, cells, average, ", ".join(notes), not_task)


def wider_gap(doc: ZeroShotDocument) -> str | None:
    """ "holdout gap G" when the holdout check let a gap other than the default through (--holdout-max-gap),
    else None: a reader compares such a row knowing its weights were held to another tolerance."""
    gap = doc.holdout.get("max_gap")
    return None if gap is None or gap == MAX_GAP else f"holdout gap {gap:g}"


def outside_the_install(doc: ZeroShotDocument) -> str | None:
    """ "N module file(s) outside the install" when the scoring process imported module files no installed
    distribution vouches for, or ones changed since install (results.json's provenance.environment): code that
    ran beside the scoring and that neither git nor the install records. Else None."""
    if not isinstance(doc, ZeroShotResults):
        return None
    environment = doc.provenance.get("environment")
    if not isinstance(environment, Mapping):
        return None
    files = [f for key in ("unrecorded", "changed") for f in environment.get(key) or [] if isinstance(f, str)]
    return f"{len(files)} module file(s) outside the install" if files else None


def smoke_test(doc: ZeroShotDocument) -> int | None:
    """The examples limit the result was scored with (`--limit N`: a smoke test, not a score), else None."""
    limit = doc.settings.limit
    return limit if isinstance(limit, int) else None


def out_of_range(doc: ZeroShotDocument) -> str | None:
    """Why `doc` holds a value no metric can take (a score outside its metric's range, a stderr or a loss
    that is negative or not finite), or None."""
    for name, score in doc.scores.items():
        metric = _task(doc, name).get("metric") or METRICS.get(name)  # a task's metric is the task's
        low, high = RANGES.get(str(metric), (math.nan, math.nan))
        if not (isinstance(score, (int, float)) and low <= score <= high):
            where = f"[{low:g}, {high:g}]" if metric in RANGES else f"none known for metric {metric!r}"
            return f"{name}'s {metric} {score!r} is outside its range {where}: not a score"
    for name in doc.scores:
        stderr = _task(doc, name).get("stderr")
        if stderr is not None and not (isinstance(stderr, (int, float)) and 0 <= stderr < math.inf):
            return f"{name}'s stderr {stderr!r} is not a standard error: not a score"
    return _holdout_out_of_range(doc.holdout)


def _holdout_out_of_range(holdout: Mapping[str, Any]) -> str | None:
    """Why the holdout record cannot stand behind the scores: a loss that is no loss, a tolerance outside
    --holdout-max-gap's range (0 to MAX_GAP_CEILING), a check said failed or a gap past its tolerance."""
    for key in ("recomputed", "logged"):
        loss = holdout.get(key)
        if loss is not None and not (_number(loss) and 0 <= loss < math.inf):
            return f"holdout loss {loss!r} is not a loss: not a score"
    gap, tolerance = holdout.get("gap"), holdout.get("max_gap")
    if tolerance is not None and not (_number(tolerance) and 0 <= tolerance <= MAX_GAP_CEILING):
        return f"holdout max_gap {tolerance!r} is outside 0 to {MAX_GAP_CEILING}: the check held nothing"
    if gap is not None and not (_number(gap) and _number(tolerance) and 0 <= gap <= tolerance):
        return f"holdout gap {gap!r} is past its max_gap {tolerance!r}: not a score"
    if "passed" in holdout and holdout["passed"] is not True:
        return "its holdout check did not pass: not a score"
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def newest_per_checkpoint(docs: Sequence[ZeroShotDocument]) -> list[ZeroShotDocument]:
    """The newest result (by its finish time) of each checkpoint, in the order they came: a checkpoint is its
    label and its path, so another run's checkpoint of the same name is never passed over as an older result."""
    newest: dict[tuple[str, str], ZeroShotDocument] = {}
    for doc in docs:
        key = checkpoint_key(doc)
        if key not in newest or doc.finished >= newest[key].finished:
            newest[key] = doc
    return list(newest.values())


def checkpoint_key(doc: ZeroShotDocument) -> tuple[str, str]:
    """What tells one checkpoint's results from another's: its label and the path it was scored at."""
    return doc.label, doc.checkpoint.path


def row_names(docs: Sequence[ZeroShotDocument]) -> list[str]:
    """Each row's checkpoint name: its label, followed by its path where the rows hold another checkpoint of
    the same label (results written before labels named their run), so that no row can pass for another's."""
    paths: dict[str, set[str]] = {}
    for doc in docs:
        paths.setdefault(doc.label, set()).add(doc.checkpoint.path)
    return [f"{d.label} ({d.checkpoint.path})" if len(paths[d.label]) > 1 else d.label for d in docs]


def _task(doc: ZeroShotDocument, name: str) -> Mapping[str, Any]:
    """A task's record as a mapping (a recorder step's is a HarnessTask)."""
    task: Any = doc.tasks.get(name)
    if task is None:
        return {}
    if isinstance(doc, ZeroShotResults):
        return task if isinstance(task, Mapping) else {}
    record: Mapping[str, Any] = task.to_dict()
    return record
