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
from collections.abc import Iterator
from typing import Any

from recorder.errors import EventDecodeError
from recorder.events import Event
from recorder.kinds import EvalResult
from recorder.run import RunDir
from recorder.run_files import inside, sha256_file
from recorder.verify.findings import Findings
from recorder.verify.results_stream import ResultsFormatError, SampleTally, read_results

RESULTS_LIMIT = 512 * 1024 * 1024  # a results.json larger than this is not read


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
    if path is None or not path.is_file():
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: its results.json ({d.results!r}) is missing")
        return
    if path.stat().st_size > RESULTS_LIMIT or sha256_file(path) != d.results_sha256:
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} is not the recorded file")
        return
    try:
        with open(path, "rb") as f:  # streamed: memory stays bounded whatever the file's size
            doc, tally = read_results(f)
    except ResultsFormatError as why:
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} {why}")
        return
    except (ValueError, RecursionError):  # a UnicodeDecodeError; RecursionError: nested deeper than Python parses
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} is not JSON")
        return
    doc = doc if isinstance(doc, dict) else {}
    for message in _disagreements(doc, tally, e, d, run_id, committed_sha256):
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} {message}")
        return


def _disagreements(
    doc: dict[str, Any],
    tally: SampleTally | None,
    e: Event,
    d: EvalResult,
    run_id: str | None,
    committed_sha256: str | None,
) -> Iterator[str]:
    if doc.get("step") != e.step:
        yield f"is about step {doc.get('step')!r}"
    checkpoint = doc.get("checkpoint")
    checkpoint = checkpoint if isinstance(checkpoint, dict) else {}
    if committed_sha256 is not None and checkpoint.get("sha256") not in (None, committed_sha256):
        yield "scored other weights than the commit's"
    if run_id is not None and doc.get("run_id") not in (None, run_id):
        yield f"belongs to run {doc.get('run_id')!r}"
    try:
        value = e.value
    except EventDecodeError:
        value = None
    if e.key == "accuracy" and "score" in doc and not _same_number(doc.get("score"), value):
        yield f"states score {doc.get('score')!r}, the event {value!r}"
    task = doc.get("task")
    spec = task.get("spec_sha256") if isinstance(task, dict) else None
    if d.task_sha256 is not None and spec is not None and spec != d.task_sha256:
        yield "names another task spec than the event"
    for name, recorded in (("n_tasks", d.n), ("k", d.k)):
        if recorded is not None and name in doc and doc[name] != recorded:
            yield f"states {name} {doc[name]!r}, the event {recorded!r}"
    yield from _tally(doc, tally)


def _tally(doc: dict[str, Any], tally: SampleTally | None) -> Iterator[str]:
    """The tally and the per-sample outcomes must be possible and add up to the score."""
    n, passed = doc.get("n_tasks"), doc.get("tasks_passed")
    if n is not None and not (_count(n) and n > 0):
        yield f"states n_tasks {n!r}: not a positive count"
        return
    if passed is not None and not (_count(passed) and isinstance(n, int) and passed <= n):
        yield f"states tasks_passed {passed!r} of n_tasks {n!r}"
        return
    if tally is not None:
        yield from _samples(tally, doc)


def _samples(tally: SampleTally, doc: dict[str, Any]) -> Iterator[str]:
    n, passed, k, score = doc.get("n_tasks"), doc.get("tasks_passed"), doc.get("k"), doc.get("score")
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


def _count(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _same_number(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-12)
