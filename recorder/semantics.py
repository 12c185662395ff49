"""Verify the facts, not only the bytes: is the recorded timeline possible, and does its evidence match?

The digest chain has no key: anyone can rewrite a segment and recompute it. So `verify` also checks what
the events mean. Each rule below has a name that every failure carries, with the segment and seq:

- run-id: every event carries the run id of the run's own `run_opened` (never the folder name).
- one-update-per-step: a training session records one `weight_update` per step.
- update-after-run-start: weight updates, commits and evaluations come after `run_start`.
- update-order: within a session, weight updates go up with the step and with time.
- update-before-commit: a commit names its step's weight update (`weight_update_ns`) and comes after it.
- one-commit-per-step: no step is committed twice with different weights.
- commit-inside-run: a commit's path stays inside the run directory.
- commit-sha: the committed weights file has the recorded size and sha256.
- commit-metadata: the weights' own metadata (step, weight update, run id) match the commit.
- commit-files: config.json and tokenizer files hashed into the commit still match.
- eval-names-commit: an evaluation names the path and sha256 of the commit for its step.
- eval-after-commit / eval-after-train-stop: it starts after that commit and after training stopped.
- eval-result-inside-evaluation: a result lies between its evaluation's `eval_start` and its end.
- eval-evidence: an evaluator's result has its `results.json`, with the recorded sha256, and that file
  states the same step, checkpoint, run and score.

A checkpoint file that is missing is a warning (it cannot be checked; nothing can be evaluated from it).
Payloads are read through recorder/kinds.py: one that does not parse fails with rule `payload`.
Imported runs (`provenance.imported_from`) carry the original log as their evidence, not results.json.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from recorder.errors import EventDecodeError
from recorder.events import Event
from recorder.kinds import CheckpointCommitted, EvalResult, EvalStart, Payload, PayloadError, RunOpened
from recorder.problem import Problem
from recorder.reader import run_id_from
from recorder.run import RunDir
from recorder.safetensors_header import HeaderError, read_header

# Kinds the rules read; verify keeps only these in memory.
KINDS = frozenset(
    {"run_opened", "run_start", "weight_update", "checkpoint_committed", "train_stop", "eval_start", "eval_result"}
    | {"eval_stop", "eval_failed"}
)
WEIGHTS_FILE = "model.safetensors"
TRAINER_FORMAT = "safetensors"
RESULTS_LIMIT = 512 * 1024 * 1024  # a results.json larger than this is not read


@dataclass
class Findings:
    """What the rules found: problems (the run fails verify) and warnings (something could not be checked)."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def fail(self, e: Event, rule: str, message: str) -> None:
        self.problems.append(Problem(e.segment, e.seq, message, rule))


P = TypeVar("P", bound=Payload)


def _parsed(cls: type[P], e: Event, found: Findings) -> P | None:
    """`e`'s payload, or None after failing rule `payload` (a rechained segment can hold any data)."""
    try:
        return cls.from_event(e)
    except (PayloadError, EventDecodeError) as err:
        found.fail(e, "payload", str(err).split(": ", 1)[-1])
        return None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def inside(run: RunDir, rel: object) -> Path | None:
    """`rel` resolved inside the run directory (symlinks followed), or None if it is absolute or leaves it."""
    if not isinstance(rel, str) or not rel or PurePosixPath(rel).is_absolute() or Path(rel).is_absolute():
        return None
    root = run.path.resolve()
    target = (root / Path(*PurePosixPath(rel).parts)).resolve()
    return target if target == root or root in target.parents else None


def check_facts(run: RunDir, events: list[Event]) -> Findings:
    """Every rule over the run's events (any order: each rule orders what it needs)."""
    found = Findings()
    by_seq = sorted(events, key=lambda e: (e.segment, e.seq))
    run_id = run_id_from(by_seq) if any(e.kind == "run_opened" for e in by_seq) else None
    if run_id is None:
        if by_seq:  # not a run that replay, score or eval can use: they refuse it for want of run_opened
            found.warnings.append("no run_opened event: the timeline and evidence are not checked")
        return found
    _check_run_id(by_seq, run_id, found)
    run_start = min((e.time_ns for e in by_seq if e.kind == "run_start"), default=None)
    updates = _check_updates(by_seq, run_start, found)
    commits = _check_commits(run, by_seq, run_id, run_start, updates, found)
    _check_evaluations(run, by_seq, run_id, run_start, commits, found)
    return found


def _check_run_id(events: list[Event], run_id: str | None, found: Findings) -> None:
    if run_id is None:
        return
    for e in events:
        if e.run_id != run_id:
            found.fail(e, "run-id", f"run id {e.run_id!r}, but the run's run_opened says {run_id!r}")
            return


def _check_updates(events: list[Event], run_start: int | None, found: Findings) -> dict[tuple[str, int], Event]:
    """(segment, step) -> the weight update; checks one per step per session, order, after run_start."""
    updates: dict[tuple[str, int], Event] = {}
    last: dict[str, Event] = {}
    for e in events:
        if e.kind != "weight_update" or e.step is None:
            continue
        seen = updates.get((e.segment, e.step))
        if seen is not None:
            found.fail(e, "one-update-per-step", f"a second weight_update for step {e.step} (first at seq {seen.seq})")
            continue
        updates[(e.segment, e.step)] = e
        if run_start is not None and e.time_ns < run_start:
            found.fail(e, "update-after-run-start", f"weight_update of step {e.step} is {_ago(run_start, e)} run_start")
        before = last.get(e.segment)
        if before is not None and before.step is not None and (e.step <= before.step or e.time_ns < before.time_ns):
            found.fail(
                e,
                "update-order",
                f"weight_update of step {e.step} follows step {before.step}'s (seq {before.seq}) "
                f"{'at an earlier time' if e.step > before.step else 'with a step not above it'}",
            )
        last[e.segment] = e
    return updates


def _ago(reference: int, e: Event) -> str:
    return f"{(reference - e.time_ns) / 1e9:.3f} s before"


@dataclass(frozen=True)
class Commit:
    """A checkpoint_committed event and its parsed payload."""

    event: Event
    data: CheckpointCommitted


def _check_commits(
    run: RunDir,
    events: list[Event],
    run_id: str | None,
    run_start: int | None,
    updates: dict[tuple[str, int], Event],
    found: Findings,
) -> dict[int, Commit]:
    """step -> its (first) commit; checks each commit's timeline and files."""
    commits: dict[int, Commit] = {}
    for e in events:
        if e.kind != "checkpoint_committed" or e.step is None:
            continue
        d = _parsed(CheckpointCommitted, e, found)
        if d is None:
            continue
        seen = commits.get(e.step)
        if seen is not None and (seen.data.sha256, seen.data.path) != (d.sha256, d.path):
            found.fail(
                e,
                "one-commit-per-step",
                f"step {e.step} committed again with other weights "
                f"(first at {seen.event.segment} seq {seen.event.seq})",
            )
        commits.setdefault(e.step, Commit(e, d))
        if run_start is not None and e.time_ns < run_start:
            found.fail(
                e, "update-after-run-start", f"checkpoint_committed of step {e.step} is {_ago(run_start, e)} run_start"
            )
        update = updates.get((e.segment, e.step))
        if update is not None:
            if d.weight_update_ns != update.time_ns:
                found.fail(
                    e,
                    "update-before-commit",
                    f"weight_update_ns {d.weight_update_ns} is not the time of step "
                    f"{e.step}'s weight_update (seq {update.seq}, {update.time_ns})",
                )
            elif e.time_ns < update.time_ns:
                found.fail(e, "update-before-commit", f"committed {_ago(update.time_ns, e)} its weight update")
        _check_commit_files(run, Commit(e, d), run_id, found)
    return commits


def _check_commit_files(run: RunDir, commit: Commit, run_id: str | None, found: Findings) -> None:
    e, d = commit.event, commit.data
    if d.format != TRAINER_FORMAT:
        return  # adapters' formats (directories, indexes) are checked when evaluated
    directory = inside(run, d.path)
    if directory is None:
        found.fail(e, "commit-inside-run", f"checkpoint path {d.path!r} leaves the run directory")
        return
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        found.warnings.append(
            f"{e.segment} seq {e.seq}: step {e.step}'s {d.path}/{WEIGHTS_FILE} is missing: not checked"
        )
        return
    size = weights.stat().st_size
    if size != d.bytes:
        found.fail(e, "commit-sha", f"{weights.name} of step {e.step} has {size} bytes, the commit says {d.bytes}")
        return
    if sha256_file(weights) != d.sha256:
        found.fail(e, "commit-sha", f"sha256 of step {e.step}'s {weights.name} is not the committed one")
        return
    _check_metadata(weights, commit, run_id, found)
    for name, sha in sorted((d.files or {}).items()):
        path = inside(run, f"{d.path}/{name}")
        if path is None or not path.is_file() or sha256_file(path) != sha:
            found.fail(e, "commit-files", f"step {e.step}'s {name} is missing or not the committed one")


def _check_metadata(weights: Path, commit: Commit, run_id: str | None, found: Findings) -> None:
    e = commit.event
    try:
        meta = read_header(weights).metadata
    except HeaderError as err:
        found.fail(e, "commit-metadata", str(err))
        return
    expect = {"step": str(e.step), "weight_update_ns": str(commit.data.weight_update_ns)}
    if run_id is not None and "run_id" in meta:
        expect["run_id"] = run_id
    for key, value in expect.items():
        if key in meta and meta[key] != value:
            found.fail(e, "commit-metadata", f"the weights' metadata says {key} {meta[key]!r}, the commit {value!r}")
            return


def _imported(events: list[Event], found: Findings) -> bool:
    e = next((e for e in events if e.kind == "run_opened"), None)
    opened = _parsed(RunOpened, e, found) if e is not None else None
    return opened is not None and bool(opened.provenance.get("imported_from"))


def _check_evaluations(
    run: RunDir,
    events: list[Event],
    run_id: str | None,
    run_start: int | None,
    commits: dict[int, Commit],
    found: Findings,
) -> None:
    imported = _imported(events, found)
    stops = [e.time_ns for e in events if e.kind == "train_stop"]
    # (segment, step) -> its eval_start not yet ended: one session may evaluate several checkpoints at once
    # (one per worker, evaluator/sweep.py), so a segment's evaluations can interleave.
    open_eval: dict[tuple[str, int | None], Event] = {}
    for e in events:
        commit = commits.get(e.step) if e.step is not None else None
        if e.kind == "eval_start":
            open_eval[(e.segment, e.step)] = e
            if not imported and (start := _parsed(EvalStart, e, found)) is not None:
                _check_eval_start(e, start, commit, run_start, stops, found)
        elif e.kind in ("eval_stop", "eval_failed"):
            open_eval.pop((e.segment, e.step), None)
        elif e.kind == "eval_result" and not imported:
            if (e.segment, e.step) not in open_eval:
                found.fail(
                    e, "eval-result-inside-evaluation", f"eval_result of step {e.step} outside an evaluation of it"
                )
            if (result := _parsed(EvalResult, e, found)) is not None:
                _check_evidence(run, e, result, run_id, commit, found)


def _check_eval_start(
    e: Event, d: EvalStart, commit: Commit | None, run_start: int | None, stops: list[int], found: Findings
) -> None:
    if commit is None:
        found.fail(e, "eval-names-commit", f"evaluation of step {e.step}, which has no checkpoint_committed")
        return
    c = commit.data
    if (d.sha256, d.checkpoint) != (c.sha256, c.path):
        found.fail(
            e,
            "eval-names-commit",
            f"evaluation of step {e.step} names checkpoint {d.checkpoint!r} sha256 "
            f"{str(d.sha256)[:16]}..., the run committed {c.path!r} {c.sha256[:16]}...",
        )
    committed_at = commit.event.time_ns
    if e.time_ns < committed_at:
        found.fail(e, "eval-after-commit", f"evaluation of step {e.step} starts {_ago(committed_at, e)} its commit")
    if run_start is not None and e.time_ns < run_start:
        found.fail(e, "update-after-run-start", f"evaluation of step {e.step} starts {_ago(run_start, e)} run_start")
    if stops and e.time_ns < min(stops):
        found.fail(e, "eval-after-train-stop", f"evaluation of step {e.step} starts {_ago(min(stops), e)} train_stop")


def _check_evidence(
    run: RunDir, e: Event, d: EvalResult, run_id: str | None, commit: Commit | None, found: Findings
) -> None:
    path = inside(run, d.results)
    if path is None or not path.is_file():
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: its results.json ({d.results!r}) is missing")
        return
    if path.stat().st_size > RESULTS_LIMIT or sha256_file(path) != d.results_sha256:
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} is not the recorded file")
        return
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python parses
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} is not JSON")
        return
    for message in _evidence_disagrees(doc if isinstance(doc, dict) else {}, e, run_id, commit):
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.results} {message}")
        return


def _evidence_disagrees(doc: dict[str, Any], e: Event, run_id: str | None, commit: Commit | None) -> list[str]:
    out = []
    if doc.get("step") != e.step:
        out.append(f"is about step {doc.get('step')!r}")
    checkpoint = doc.get("checkpoint")
    checkpoint = checkpoint if isinstance(checkpoint, dict) else {}
    if commit is not None and checkpoint.get("sha256") not in (None, commit.data.sha256):
        out.append("scored other weights than the commit's")
    if run_id is not None and doc.get("run_id") not in (None, run_id):
        out.append(f"belongs to run {doc.get('run_id')!r}")
    try:
        value = e.value
    except EventDecodeError:
        value = None
    if e.key == "accuracy" and "score" in doc and not _same_number(doc.get("score"), value):
        out.append(f"states score {doc.get('score')!r}, the event {value!r}")
    return out


def _same_number(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-12)
