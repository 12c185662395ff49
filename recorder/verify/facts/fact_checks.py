"""Verify the facts, not only the bytes: is the recorded timeline possible, and does its evidence match?

The digest chain has no key: anyone can rewrite a segment and recompute it. So `verify` also checks what
the events mean. Each rule below has a name that every failure carries, with the segment and seq:

- run-id: every event carries the run id of the run's own `run_opened` (never the folder name).
- one-update-per-step: a training session records one `weight_update` per step.
- update-after-run-start: weight updates, commits and evaluations come after `run_start`.
- update-order: within a session, weight updates go up with the step and with time.
- update-before-commit: a commit names its step's weight update (`weight_update_ns`) and comes after it.
- one-commit-per-step: no step is committed twice with different weights.
- commit-inside-run: a commit's path stays inside the run directory (an imported torch DCP series: relative).
- commit-sha: the committed weights file has the recorded size and sha256 (a sharded checkpoint, or an
  imported series wherever it lies, torch DCP or NeMo-RL's Megatron-Core: every shard its manifest names,
  and the manifest's root is the sha256; imported Hugging Face weights: the tree digest of their directory;
  a Trainer callback's adapter or index: that one file), whatever the format, evaluated or not.
- eval-precision: an evaluation in bf16 or in the dtype the run's rollouts were generated in.
- commit-metadata: the weights' own metadata (step, weight update, run id) match the commit.
- commit-files: config.json and tokenizer files hashed into the commit still match.
- eval-names-commit: an evaluation names the path and sha256 of the commit for its step.
- eval-after-commit / eval-after-train-stop: it starts after that commit and after training stopped.
- eval-result-inside-evaluation: a result lies between its evaluation's `eval_start` and its end.
- eval-evidence: an evaluator's result has its `results.json`, with the recorded sha256, and that file
  states the same step, checkpoint, run and score.
- eval-settings: it scored with the k, task count and task spec the run recorded
(recorder/verify/facts/eval_settings.py).
- benchmark-eval: a run that claims the benchmark was evaluated with the ruleset's settings (the same file).

A checkpoint file that is missing is a warning (it cannot be checked; nothing can be evaluated from it).
Payloads are read through recorder/store/kinds.py: one that does not parse fails with rule `payload`.
Imported runs (`provenance.imported_from`) carry the original log as their evidence, not results.json.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from recorder.checkpoints.formats import recorded_format
from recorder.checkpoints.hugging_face.safetensors_header import HeaderError, read_header
from recorder.evaluations import BENCHMARK_METRIC, ZERO_SHOT_WRITER
from recorder.rules import recorded_target, validation_start_step
from recorder.store.catalogue import may_write, records_timing_of
from recorder.store.events import Event
from recorder.store.kinds import CheckpointCommitted, EvalResult, EvalStart, RunOpened
from recorder.store.reader import run_id_from
from recorder.store.run import RunDir
from recorder.store.run_files import inside, normalized, sha256_file, tree_digest
from recorder.verify.facts.clocks import check_wall_clock
from recorder.verify.facts.eval_settings import (
    RecordedEval,
    benchmark_section,
    check_benchmark_config,
    check_benchmark_result,
    check_eval_config,
    check_eval_settings,
)
from recorder.verify.facts.evidence import RESULTS_LIMIT, check_evidence
from recorder.verify.facts.sessions import check_clocks, check_opened, check_sessions, check_steps
from recorder.verify.facts.timeline_checks import check_run_start, check_samples, check_trainer_timeline, step_timings
from recorder.verify.findings import Findings, parsed
from recorder.verify.writers import check_writers, imported, run_writer

__all__ = ["KINDS", "RESULTS_LIMIT", "Findings", "check_facts", "for_rules", "inside", "kept", "sha256_file"]

# Kinds the rules read; verify keeps only these in memory (one step_metrics per step: small).
KINDS = frozenset(
    {"run_opened", "run_start", "weight_update", "checkpoint_committed", "train_stop", "eval_start", "eval_result"}
    | {"eval_stop", "eval_failed", "step_metrics", "mllog_config", "block_start", "block_stop", "rank_step"}
    | {"segment_closed"}
)
# Kinds whose step the rules read, but not their data: kept without it (step_metrics: with only the
# durations the timeline rules read), so memory stays bounded by the events' count, not by what a trainer
# logged in them. An event of a kind its writer may not record is kept the same way, whatever its kind.
STEP_ONLY = frozenset({"step_metrics", "rank_step"})


def kept(kind: str, writer: str) -> bool:
    """Whether verify keeps an event of `kind` by `writer` for the rules."""
    return kind in KINDS or not may_write(writer, kind)


def for_rules(e: Event) -> Event:
    """`e` as the rules keep it: a step_metrics with only its durations; a kind in STEP_ONLY, or one the rules
    keep only for its writer, without its data and value."""
    if e.kind == "step_metrics":
        return replace(e, data_json=json.dumps(step_timings(e)), value_json=None)
    return replace(e, data_json="{}", value_json=None) if e.kind in STEP_ONLY or e.kind not in KINDS else e


def check_facts(run: RunDir, events: list[Event]) -> Findings:
    """Every rule over the run's events (any order: each rule orders what it needs)."""
    found = Findings()
    by_seq = sorted(events, key=lambda e: (e.segment, e.seq))
    check_writers(by_seq, found)
    run_id = run_id_from(by_seq) if any(e.kind == "run_opened" for e in by_seq) else None
    if run_id is None:
        if by_seq:  # not a run that replay, score or eval can use: they refuse it for want of run_opened
            found.warnings.append("no run_opened event: the timeline and evidence are not checked")
        return found
    _check_run_id(by_seq, run_id, found)
    was_imported = imported(by_seq, found)
    opened = _opened(by_seq)
    check_steps(by_seq, found)
    check_opened(sorted(by_seq, key=lambda e: (e.time_ns, e.segment, e.seq)), run_id, found)
    check_run_start(by_seq, found)
    if not was_imported:  # an imported log's times and steps are the log's own, whatever they are
        check_clocks(by_seq, found)
        check_wall_clock(by_seq, found)
        check_sessions(by_seq, found)
        check_samples(by_seq, opened.global_batch_size if opened is not None else None, found)
        check_trainer_timeline(by_seq, opened, found)
        if opened is not None:
            check_eval_config(opened, [e for e in by_seq if e.kind == "mllog_config"], found, _first_opened(by_seq))
            check_benchmark_config(opened, found, _first_opened(by_seq))
    run_start = min((e.time_ns for e in by_seq if e.kind == "run_start"), default=None)
    for e in by_seq:
        if e.kind == "train_stop" and run_start is not None and e.time_ns < run_start:
            found.fail(e, "update-after-run-start", f"train_stop is {_ago(run_start, e)} run_start")
    updates = _check_updates(by_seq, run_start, found)
    commits = _check_commits(run, by_seq, run_id, run_start, updates, found)
    if not was_imported:
        _check_evaluations(run, by_seq, run_id, run_start, commits, found)
    else:  # the log's own evaluations are its evidence; ours of its checkpoints still keep the rule's precision
        for e in by_seq:
            if e.kind == "eval_result" and e.writer == "evaluator" and (r := parsed(EvalResult, e, found)):
                _check_precision(e, r, commits.get(e.step) if e.step is not None else None, found)
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
        d = parsed(CheckpointCommitted, e, found)
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
        if update is None and any(step == e.step for _, step in updates):
            found.fail(e, "update-before-commit", f"step {e.step} is committed in a segment that did not train it")
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
        check_commit_files(run, Commit(e, d), run_id, found)
    return commits


def check_commit_files(run: RunDir, commit: Commit, run_id: str | None, found: Findings) -> None:
    """Rules commit-inside-run, commit-sha, commit-files and commit-metadata for one commit, whatever its format
    (its row of recorder.checkpoints.formats says how): every file a score may rest on is rechecked each time."""
    e, d = commit.event, commit.data
    row = recorded_format(d.format)
    if row.files == "shards":
        _check_shards(run, commit, found)
        return
    if row.files == "imported-shards":
        _check_imported_shards(run, commit, found)
        return
    directory = inside(run, d.path)
    if directory is None or not normalized(d.path):
        found.fail(
            e,
            "commit-inside-run",
            f"checkpoint path {d.path!r} leaves the run directory or is not a plain relative path",
        )
        return
    weights = directory / row.weights_file
    if not weights.is_file():
        found.warnings.append(
            f"{e.segment} seq {e.seq}: step {e.step}'s {d.path}/{row.weights_file} is missing: not checked"
        )
        return
    size = weights.stat().st_size
    if size != d.bytes:
        found.fail(e, "commit-sha", f"{weights.name} of step {e.step} has {size} bytes, the commit says {d.bytes}")
        return
    if sha256_file(weights) != d.sha256:
        found.fail(e, "commit-sha", f"sha256 of step {e.step}'s {weights.name} is not the committed one")
        return
    if row.files == "weights-file":  # the trainer's own file records its step and update time
        _check_metadata(weights, commit, run_id, found)
    for name, sha in sorted((d.files or {}).items()):
        path = inside(run, f"{d.path}/{name}")
        if path is None or not path.is_file() or sha256_file(path) != sha:
            found.fail(e, "commit-files", f"step {e.step}'s {name} is missing or not the committed one")


def _check_shards(run: RunDir, commit: Commit, found: Findings) -> None:
    """Rules commit-inside-run and commit-sha for the trainer's sharded checkpoint: every shard its manifest
    names is there with its size and sha256, and the manifest's root is the commit's sha256."""
    e, d = commit.event, commit.data
    directory = inside(run, d.path)
    if directory is None or not normalized(d.path):
        found.fail(e, "commit-inside-run", f"checkpoint path {d.path!r} leaves the run directory or is not plain")
        return
    _check_manifest(commit, lambda rel: inside(run, f"{d.path}/{rel}"), found)
    for name, sha in sorted((d.files or {}).items()):
        path = inside(run, f"{d.path}/{name}")
        if path is None or not path.is_file() or sha256_file(path) != sha:
            found.fail(e, "commit-files", f"step {e.step}'s {name} is missing or not the committed one")


def _check_imported_shards(run: RunDir, commit: Commit, found: Findings) -> None:
    """Rule commit-sha for an imported series (torch DCP, NeMo-RL): it stays where the job wrote it, so its
    recorded path may lead outside the run; every shard its manifest names must still be there, inside its
    weights directory, with its size and sha256; a commit without a manifest (Hugging Face weights, an import
    without fingerprints), the tree digest of its weights directory."""
    e, d = commit.event, commit.data
    if PurePosixPath(d.path).is_absolute() or Path(d.path).is_absolute():
        found.fail(e, "commit-inside-run", f"checkpoint path {d.path!r} is not relative to the run directory")
        return
    directory = (run.path / Path(*PurePosixPath(d.path).parts)).resolve()
    if not directory.is_dir():
        found.warnings.append(f"{e.segment} seq {e.seq}: step {e.step}'s imported {directory} is missing: not checked")
        return
    where = recorded_format(d.format).weights_dir
    weights = (directory / where).resolve() if where else directory
    if d.manifest is None:
        _check_tree(commit, weights, where or ".", found)
    else:

        def shard(rel: str) -> Path | None:
            path = (weights / rel).resolve()
            return path if weights in path.parents else None

        _check_manifest(commit, shard, found, f"{where}/" if where else "")
    _check_loaded_files(run, commit, found)


def _check_tree(commit: Commit, weights: Path, shown: str, found: Findings) -> None:
    """Rule commit-sha for weights committed as one tree digest: every file under `weights`, hashed again."""
    e, d = commit.event, commit.data
    if not weights.is_dir():
        found.fail(e, "commit-sha", f"step {e.step}'s {shown} is missing")
        return
    digest, size = tree_digest(weights)
    if (digest, size) != (d.sha256, d.bytes):
        found.fail(
            e,
            "commit-sha",
            f"step {e.step}'s files under {shown} are not the committed ones (their tree digest differs: "
            f"{size} bytes, the commit says {d.bytes})",
        )


def _check_loaded_files(run: RunDir, commit: Commit, found: Findings) -> None:
    """Rule commit-files for an imported checkpoint: each file loading read besides its weights (config,
    tokenizer, a NeMo-RL step's config.yaml; a path from the checkpoint directory, which may lead into the
    run it came from) still has the committed sha256."""
    e, d = commit.event, commit.data
    if not d.files or PurePosixPath(d.path).is_absolute() or Path(d.path).is_absolute():
        return
    directory = (run.path / Path(*PurePosixPath(d.path).parts)).resolve()
    for name, sha in sorted(d.files.items()):
        path = (directory / name).resolve()
        if not path.is_file() or sha256_file(path) != sha:
            found.fail(e, "commit-files", f"step {e.step}'s {name} is missing or not the committed one")


def _check_manifest(commit: Commit, locate: Callable[[str], Path | None], found: Findings, shown: str = "") -> None:
    """Every shard the commit's manifest names (found by `locate`, None: not where it may be) has its size and
    sha256, and the manifest's root is the commit's sha256; a shard is named as `shown` + its path."""
    e, d = commit.event, commit.data
    shards = list((d.manifest or {}).get("shards") or [])
    lines = "".join(f"{s.get('sha256')}  {s.get('path')}\n" for s in sorted(shards, key=lambda s: str(s.get("path"))))
    if not shards or hashlib.sha256(lines.encode()).hexdigest() != d.sha256:
        found.fail(e, "commit-sha", f"step {e.step}'s manifest is missing or its root is not the commit's sha256")
        return
    for shard in shards:
        path = locate(str(shard.get("path")))
        if path is None or not path.is_file():
            found.fail(e, "commit-sha", f"step {e.step}'s shard {shown}{shard.get('path')} is missing")
        elif path.stat().st_size != shard.get("bytes") or sha256_file(path) != shard.get("sha256"):
            found.fail(e, "commit-sha", f"step {e.step}'s shard {shown}{shard.get('path')} is not the committed one")


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


def _stops(events: list[Event]) -> list[int]:
    """When the run's writer recorded training stopped."""
    owner = run_writer(events) or ""
    return [e.time_ns for e in events if e.kind == "train_stop" and records_timing_of(e.writer, owner)]


def _first_opened(events: list[Event]) -> Event:
    return next(e for e in events if e.kind == "run_opened")


def _opened(events: list[Event]) -> RunOpened | None:
    e = next((e for e in events if e.kind == "run_opened"), None)
    return parsed(RunOpened, e, Findings()) if e is not None else None  # a bad payload fails elsewhere


def _validation_start(opened: RunOpened | None) -> int | None:
    gbs = opened.global_batch_size if opened is not None else None
    return validation_start_step(gbs) if gbs is not None and gbs > 0 else None


@dataclass(frozen=True)
class _RunFacts:
    """What every evaluation is checked against."""

    run: RunDir
    run_id: str
    run_start: int | None
    stops: list[int]
    commits: dict[int, Commit]
    validation_start: int | None
    recorded: RecordedEval | None  # how the run said it is evaluated (None: it did not say)
    claimed: bool  # its config.eval claims the benchmark's evaluation (rule benchmark-eval)
    target: float | None  # its recorded pass target


def _check_evaluations(
    run: RunDir,
    events: list[Event],
    run_id: str,
    run_start: int | None,
    commits: dict[int, Commit],
    found: Findings,
) -> None:
    """Rules eval-*: each benchmark evaluation names its step's commit, after it and after training, from the
    validation start; its result lies inside it, is a possible score, the only one of its step, and has
    evidence; every evaluation of the run scores with one task spec, the one with the settings the run recorded."""
    opened = _opened(events)
    facts = _RunFacts(
        run,
        run_id,
        run_start,
        _stops(events),
        commits,
        _validation_start(opened),
        RecordedEval.from_config(opened.config) if opened is not None else None,
        opened is not None and benchmark_section(opened) is not None,
        recorded_target(opened),
    )
    # (segment, step) -> its eval_start not yet ended: one session may evaluate several checkpoints at once
    # (one per worker, evaluator/cluster/sweep.py), so a segment's evaluations can interleave.
    open_eval: dict[tuple[str, int | None], Event] = {}
    results: dict[int, Event] = {}
    spec: tuple[Event, str] | None = None
    for e in events:
        if e.writer == ZERO_SHOT_WRITER:
            continue
        if e.kind == "eval_start":
            if (unended := open_eval.get((e.segment, e.step))) is not None:
                found.fail(
                    e,
                    "one-evaluation-open",
                    f"eval_start of step {e.step} while its evaluation begun at seq {unended.seq} has not ended",
                )
            open_eval[(e.segment, e.step)] = e
            if (start := parsed(EvalStart, e, found)) is not None:
                _check_eval_start(e, start, facts, found)
                if start.task_sha256 is not None:
                    spec = spec or (e, start.task_sha256)
                    if start.task_sha256 != spec[1]:
                        found.fail(
                            e,
                            "one-task-spec",
                            f"evaluation of step {e.step} scores with another task spec than "
                            f"{spec[0].segment} seq {spec[0].seq} ({start.task_sha256[:16]}..., not {spec[1][:16]}...)",
                        )
        elif e.kind in ("eval_stop", "eval_failed"):
            begun = open_eval.pop((e.segment, e.step), None)
            if begun is not None and e.time_ns < begun.time_ns:
                found.fail(
                    e, "eval-result-inside-evaluation", f"{e.kind} of step {e.step} is dated before its eval_start"
                )
        elif e.kind == "eval_result":
            begun = open_eval.get((e.segment, e.step))
            if begun is None:
                found.fail(
                    e, "eval-result-inside-evaluation", f"eval_result of step {e.step} outside an evaluation of it"
                )
            elif e.time_ns < begun.time_ns:
                found.fail(
                    e, "eval-result-inside-evaluation", f"eval_result of step {e.step} is dated before its eval_start"
                )
            if not e.key:
                found.fail(
                    e,
                    "eval-result-key",
                    f"eval_result of step {e.step} without a key: a result names its metric "
                    f"({BENCHMARK_METRIC!r} for the benchmark's score)",
                )
            if e.key == BENCHMARK_METRIC and e.step is not None:
                _check_score(e, results, found)
            if (result := parsed(EvalResult, e, found)) is not None:
                commit = commits.get(e.step) if e.step is not None else None
                _check_precision(e, result, commit, found)
                check_evidence(run, e, result, run_id, commit.data.sha256 if commit else None, found)
                if e.key == BENCHMARK_METRIC and facts.recorded is not None:
                    check_eval_settings(e, result, facts.recorded, found)
                if e.key == BENCHMARK_METRIC:
                    check_benchmark_result(e, result, facts.claimed, facts.target, found)


_DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _check_precision(e: Event, result: EvalResult, commit: Commit | None, found: Findings) -> None:
    """Rule eval-precision: the rule evaluates checkpoints in BF16 or in the exact format of the rollouts
    (the dtype the run trained and sampled in, as its commit records)."""
    if result.dtype is None or commit is None:
        # not recorded (the submitter's command, an import, an evaluation before dtypes were recorded), or no
        # commit to compare with (rule eval-names-commit says so; no advice about a --dtype never used)
        return
    rollout = commit.data.dtype
    rollout = _DTYPE_NAMES.get(rollout or "", rollout)
    if result.dtype != "bf16" and result.dtype != rollout:
        found.fail(
            e,
            "eval-precision",
            f"step {e.step} was evaluated in {result.dtype}, neither bf16 nor the rollouts' {rollout or 'unrecorded'} "
            "dtype: evaluate it again without --dtype (the rule's precision is the default)",
        )


def _check_score(e: Event, results: dict[int, Event], found: Findings) -> None:
    """Rules eval-value (a score is a number in [0, 1]) and one-result-per-step (which of two would count?)."""
    assert e.step is not None
    try:
        value = e.value
    except ValueError:
        value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and 0 <= value <= 1):
        found.fail(e, "eval-value", f"the accuracy of step {e.step} is {value!r}: not a number in [0, 1]")
    first = results.setdefault(e.step, e)
    if first is not e:
        found.fail(
            e,
            "one-result-per-step",
            f"a second accuracy for step {e.step} (the first at {first.segment} seq {first.seq}): which one counts?",
        )


def _check_eval_start(e: Event, d: EvalStart, facts: _RunFacts, found: Findings) -> None:
    commit = facts.commits.get(e.step) if e.step is not None else None
    if e.step is not None and facts.validation_start is not None and e.step < facts.validation_start:
        found.fail(
            e,
            "eval-from-validation-start",
            f"evaluation of step {e.step}, before the validation start step {facts.validation_start}",
        )
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
    run_start = facts.run_start
    if run_start is not None and e.time_ns < run_start:
        found.fail(e, "update-after-run-start", f"evaluation of step {e.step} starts {_ago(run_start, e)} run_start")
    if not facts.stops:
        found.fail(e, "eval-after-train-stop", f"evaluation of step {e.step} of a run whose training never stopped")
    elif e.time_ns < min(facts.stops):
        found.fail(
            e, "eval-after-train-stop", f"evaluation of step {e.step} starts {_ago(min(facts.stops), e)} train_stop"
        )
