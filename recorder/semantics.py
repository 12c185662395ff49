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
Imported runs (`provenance.imported_from`) carry the original log as their evidence, not results.json.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from recorder.events import Event
from recorder.problem import Problem
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


def recorded_run_id(events: Iterable[Event]) -> str | None:
    """The run id the run's first `run_opened` carries (None when there is none)."""
    return next((e.run_id for e in events if e.kind == "run_opened"), None)


def check_facts(run: RunDir, events: list[Event]) -> Findings:
    """Every rule over the run's events (any order: each rule orders what it needs)."""
    found = Findings()
    by_seq = sorted(events, key=lambda e: (e.segment, e.seq))
    run_id = recorded_run_id(sorted(by_seq, key=lambda e: e.time_ns))
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


def _check_commits(
    run: RunDir,
    events: list[Event],
    run_id: str | None,
    run_start: int | None,
    updates: dict[tuple[str, int], Event],
    found: Findings,
) -> dict[int, Event]:
    """step -> its (first) commit; checks each commit's timeline and files."""
    commits: dict[int, Event] = {}
    for e in events:
        if e.kind != "checkpoint_committed" or e.step is None:
            continue
        d = e.data
        seen = commits.get(e.step)
        if seen is not None and (seen.data.get("sha256"), seen.data.get("path")) != (d.get("sha256"), d.get("path")):
            found.fail(
                e,
                "one-commit-per-step",
                f"step {e.step} committed again with other weights (first at {seen.segment} seq {seen.seq})",
            )
        commits.setdefault(e.step, e)
        if run_start is not None and e.time_ns < run_start:
            found.fail(
                e, "update-after-run-start", f"checkpoint_committed of step {e.step} is {_ago(run_start, e)} run_start"
            )
        update = updates.get((e.segment, e.step))
        if update is not None:
            if d.get("weight_update_ns") != update.time_ns:
                found.fail(
                    e,
                    "update-before-commit",
                    f"weight_update_ns {d.get('weight_update_ns')} is not the time of step "
                    f"{e.step}'s weight_update (seq {update.seq}, {update.time_ns})",
                )
            elif e.time_ns < update.time_ns:
                found.fail(e, "update-before-commit", f"committed {_ago(update.time_ns, e)} its weight update")
        _check_commit_files(run, e, run_id, found)
    return commits


def _check_commit_files(run: RunDir, e: Event, run_id: str | None, found: Findings) -> None:
    d = e.data
    if d.get("format") != TRAINER_FORMAT:
        return  # adapters' formats (directories, indexes) are checked when evaluated
    directory = inside(run, d.get("path"))
    if directory is None:
        found.fail(e, "commit-inside-run", f"checkpoint path {d.get('path')!r} leaves the run directory")
        return
    weights = directory / WEIGHTS_FILE
    if not weights.is_file():
        found.warnings.append(
            f"{e.segment} seq {e.seq}: step {e.step}'s {d.get('path')}/{WEIGHTS_FILE} is missing: not checked"
        )
        return
    size = weights.stat().st_size
    if d.get("bytes") is not None and size != d.get("bytes"):
        found.fail(
            e, "commit-sha", f"{weights.name} of step {e.step} has {size} bytes, the commit says {d.get('bytes')}"
        )
        return
    if sha256_file(weights) != d.get("sha256"):
        found.fail(e, "commit-sha", f"sha256 of step {e.step}'s {weights.name} is not the committed one")
        return
    _check_metadata(weights, e, run_id, found)
    for name, sha in sorted((d.get("files") or {}).items()):
        path = inside(run, f"{d.get('path')}/{name}")
        if path is None or not path.is_file() or sha256_file(path) != sha:
            found.fail(e, "commit-files", f"step {e.step}'s {name} is missing or not the committed one")


def _check_metadata(weights: Path, e: Event, run_id: str | None, found: Findings) -> None:
    try:
        meta = read_header(weights).metadata
    except HeaderError as err:
        found.fail(e, "commit-metadata", str(err))
        return
    expect = {"step": str(e.step), "weight_update_ns": str(e.data.get("weight_update_ns"))}
    if run_id is not None and "run_id" in meta:
        expect["run_id"] = run_id
    for key, value in expect.items():
        if key in meta and meta[key] != value:
            found.fail(e, "commit-metadata", f"the weights' metadata says {key} {meta[key]!r}, the commit {value!r}")
            return


def _imported(events: list[Event]) -> bool:
    opened = next((e for e in events if e.kind == "run_opened"), None)
    return opened is not None and bool((opened.data.get("provenance") or {}).get("imported_from"))


def _check_evaluations(
    run: RunDir,
    events: list[Event],
    run_id: str | None,
    run_start: int | None,
    commits: dict[int, Event],
    found: Findings,
) -> None:
    imported = _imported(events)
    stops = [e.time_ns for e in events if e.kind == "train_stop"]
    # (segment, step) -> its eval_start not yet ended: one session may evaluate several checkpoints at once
    # (one per worker, evaluator/sweep.py), so a segment's evaluations can interleave.
    open_eval: dict[tuple[str, int | None], Event] = {}
    for e in events:
        if e.kind == "eval_start":
            open_eval[(e.segment, e.step)] = e
            _check_eval_start(e, commits.get(e.step) if e.step is not None else None, run_start, stops, imported, found)
        elif e.kind in ("eval_stop", "eval_failed"):
            open_eval.pop((e.segment, e.step), None)
        elif e.kind == "eval_result":
            if not imported and (e.segment, e.step) not in open_eval:
                found.fail(
                    e, "eval-result-inside-evaluation", f"eval_result of step {e.step} outside an evaluation of it"
                )
            if not imported:
                _check_evidence(run, e, run_id, commits.get(e.step) if e.step is not None else None, found)


def _check_eval_start(
    e: Event, commit: Event | None, run_start: int | None, stops: list[int], imported: bool, found: Findings
) -> None:
    if imported:
        return
    if commit is None:
        found.fail(e, "eval-names-commit", f"evaluation of step {e.step}, which has no checkpoint_committed")
        return
    d, c = e.data, commit.data
    if (d.get("sha256"), d.get("checkpoint")) != (c.get("sha256"), c.get("path")):
        found.fail(
            e,
            "eval-names-commit",
            f"evaluation of step {e.step} names checkpoint {d.get('checkpoint')!r} sha256 "
            f"{str(d.get('sha256'))[:16]}..., the run committed {c.get('path')!r} {str(c.get('sha256'))[:16]}...",
        )
    if e.time_ns < commit.time_ns:
        found.fail(e, "eval-after-commit", f"evaluation of step {e.step} starts {_ago(commit.time_ns, e)} its commit")
    if run_start is not None and e.time_ns < run_start:
        found.fail(e, "update-after-run-start", f"evaluation of step {e.step} starts {_ago(run_start, e)} run_start")
    if stops and e.time_ns < min(stops):
        found.fail(e, "eval-after-train-stop", f"evaluation of step {e.step} starts {_ago(min(stops), e)} train_stop")


def _check_evidence(run: RunDir, e: Event, run_id: str | None, commit: Event | None, found: Findings) -> None:
    d = e.data
    path = inside(run, d.get("results"))
    if path is None or not path.is_file():
        found.fail(
            e, "eval-evidence", f"eval_result of step {e.step}: its results.json ({d.get('results')!r}) is missing"
        )
        return
    if path.stat().st_size > RESULTS_LIMIT or sha256_file(path) != d.get("results_sha256"):
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.get('results')} is not the recorded file")
        return
    try:
        doc = json.loads(path.read_bytes())
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python parses
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.get('results')} is not JSON")
        return
    for message in _evidence_disagrees(doc if isinstance(doc, dict) else {}, e, run_id, commit):
        found.fail(e, "eval-evidence", f"eval_result of step {e.step}: {d.get('results')} {message}")
        return


def _evidence_disagrees(doc: dict[str, Any], e: Event, run_id: str | None, commit: Event | None) -> list[str]:
    out = []
    if doc.get("step") != e.step:
        out.append(f"is about step {doc.get('step')!r}")
    checkpoint = doc.get("checkpoint")
    checkpoint = checkpoint if isinstance(checkpoint, dict) else {}
    if commit is not None and checkpoint.get("sha256") not in (None, commit.data.get("sha256")):
        out.append("scored other weights than the commit's")
    if run_id is not None and doc.get("run_id") not in (None, run_id):
        out.append(f"belongs to run {doc.get('run_id')!r}")
    value = e.value
    if e.key == "accuracy" and "score" in doc and not _same_number(doc.get("score"), value):
        out.append(f"states score {doc.get('score')!r}, the event {value!r}")
    return out


def _same_number(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        return False
    return math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-12)
