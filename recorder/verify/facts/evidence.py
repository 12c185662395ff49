"""Rule `eval-evidence`: an evaluator's result has its results.json, and that file agrees with the event and
with itself.

A rechained segment can state any score, and a results.json can be rewritten with its sha256 recorded
again, so the file is read as a claim to check: the same step, checkpoint, run, task spec, n, k and score
as the event; a tally (`tasks_passed` of `n_tasks`) that is possible; and per-sample outcomes, where it
lists them, that add up to that tally and that score (each task sampled the same number of times, no
(task, sample) twice). What this cannot catch: outcomes rewritten consistently; `recorder audit`
re-evaluates for that.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TypeGuard

from recorder.errors import EventDecodeError
from recorder.results.claims import EvaluationClaims
from recorder.store.events import Event
from recorder.store.kinds import EvalResult
from recorder.store.run import RunDir
from recorder.store.run_files import inside, sha256_file
from recorder.verify.findings import Findings
from recorder.verify.results_stream import ResultsFormatError, SampleTally, read_results

RESULTS_LIMIT = 512 * 1024 * 1024  # a results.json larger than this is not read
EVIDENCE_GONE = (
    "its results.json ({!r}) is missing: the score cannot be rechecked (derived/evals/ is evidence, not rebuilt "
    "from the events: restore it from a copy of the run)"
)


def check_evidence(
    run: RunDir,
    e: Event,
    d: EvalResult,
    run_id: str | None,
    committed_sha256: str | None,
    found: Findings,
) -> None:
    """Fail rule `eval-evidence` at `e` for the first way its results.json does not back it."""
    path = inside(run, d.results)
    if path is not None and d.results is not None and _evidence_folder_gone(run, d.results):
        # derived/evals/ removed as a whole (`rm -rf RUN/derived`): evidence, not a cache, so no replay
        # rebuilds it and the score cannot be rechecked; one file gone from a folder that is there is ALTERED
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {EVIDENCE_GONE.format(d.results)}", missing=True)
        return
    if path is None or not path.is_file():
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: its results.json ({d.results!r}) is missing")
        return
    if path.stat().st_size > RESULTS_LIMIT or sha256_file(path) != d.results_sha256:
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} is not the recorded file")
        return
    try:
        with open(path, "rb") as f:  # streamed: memory stays bounded whatever the file's size
            claims, tally = read_results(f)
    except ResultsFormatError as why:
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} {why}")
        return
    except (ValueError, RecursionError):  # a UnicodeDecodeError; RecursionError: nested deeper than Python parses
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} is not JSON")
        return
    for message in _disagreements(claims, tally, e, d, run_id, committed_sha256):
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} {message}")
        return


def _evidence_folder_gone(run: RunDir, results: str) -> bool:
    """Whether the folder holding every results file (`derived/evals/`, the first two parts of `results`) is
    missing from the run altogether."""
    parts = PurePosixPath(results).parts
    return len(parts) > 2 and not os.path.lexists(run.path.joinpath(*parts[:2]))


def _disagreements(
    doc: EvaluationClaims,
    tally: SampleTally | None,
    e: Event,
    d: EvalResult,
    run_id: str | None,
    committed_sha256: str | None,
) -> Iterator[str]:
    if doc.step != e.step:
        yield f"is about step {doc.step!r}"
    if committed_sha256 is not None and doc.checkpoint_sha256 not in (None, committed_sha256):
        yield "scored other weights than the commit's"
    if run_id is not None and doc.run_id not in (None, run_id):
        yield f"belongs to run {doc.run_id!r}"
    try:
        value = e.value
    except EventDecodeError:
        value = None
    if e.key == "accuracy" and "score" in doc.stated and not _same_number(doc.score, value):
        yield f"states score {doc.score!r}, the event {value!r}"
    spec = doc.task_spec_sha256
    if d.task_sha256 is not None and spec is not None and spec != d.task_sha256:
        yield "names another task spec than the event"
    for name, stated, recorded in (("n_tasks", doc.n_tasks, d.n), ("k", doc.k, d.k)):
        if recorded is not None and name in doc.stated and stated != recorded:
            yield f"states {name} {stated!r}, the event {recorded!r}"
    yield from _tally(doc, tally)


def _tally(doc: EvaluationClaims, tally: SampleTally | None) -> Iterator[str]:
    """The tally and the per-sample outcomes must be possible and add up to the score."""
    n, passed = doc.n_tasks, doc.tasks_passed
    if n is not None and not (_count(n) and n > 0):
        yield f"states n_tasks {n!r}: not a positive count"
        return
    if passed is not None and not (_count(passed) and isinstance(n, int) and passed <= n):
        yield f"states tasks_passed {passed!r} of n_tasks {n!r}"
        return
    if tally is not None:
        yield from _samples(tally, doc)


def _samples(tally: SampleTally, doc: EvaluationClaims) -> Iterator[str]:
    n, passed, k, score = doc.n_tasks, doc.tasks_passed, doc.k, doc.score
    if tally.bad_index:
        yield "lists a sample without integer task and sample indices"
        return
    if tally.twice is not None:
        yield f"lists task {tally.twice[0]} sample {tally.twice[1]} more than once"
        return
    per_task = tally.per_task
    if isinstance(n, int) and len(per_task) != n:
        yield f"lists samples of {len(per_task)} tasks, but states n_tasks {n}"
        return
    sizes = set(per_task.values())
    if len(sizes) != 1 or (isinstance(k, int) and min(sizes) < k):
        yield f"lists {min(sizes)} to {max(sizes)} samples per task: not the same number, at least k ({k!r}), each"
        return
    if sizes != {k} or not isinstance(n, int):
        return  # more samples than k: pass@k is the unbiased estimate, not a count of solved tasks
    solved = len(tally.solved)
    if passed is not None and solved != passed:
        yield f"lists {solved} tasks with a correct sample, but states tasks_passed {passed}"
    elif isinstance(score, (int, float)) and not _same_number(score, solved / n):
        yield f"states score {score!r}, but its samples solve {solved} of {n} tasks"


def _count(x: object) -> TypeGuard[int]:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _same_number(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-12)
