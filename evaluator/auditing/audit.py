"""`recorder audit`: re-evaluate the checkpoints that decide a run's score and compare with what was recorded.

Read-only on the run: no event is written and no results.json is touched; the only file written is the
audit's own report, `derived/audit.json` (through the symlink-safe derived writer). Like `recorder eval`, it
refuses a run that fails verify unless forced.

What it proves: the recorded evaluation is reproducible from the recorded checkpoint, with the recorded
settings. What it cannot prove: that the checkpoint came from the recorded training (docs/design.md,
section 11).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from evaluator.attempts import Attempt, attempts, deciding, scored
from evaluator.auditing.reproduction import (
    Difference,
    RecordedEvaluation,
    Status,
    first_difference,
    recorded_evaluation,
)
from evaluator.cluster.workers import Workers, start_workers
from evaluator.committed import CommittedCheckpoint, committed, resolve
from evaluator.errors import CheckpointRefused, MissingEvidenceError, NothingToAuditError, SettingsError
from evaluator.evaluate import sample_and_score
from evaluator.integrity import check_hash, committed_manifest, hash_shards, weights_path
from evaluator.results_files import sample_rows
from evaluator.run_facts import RunFacts, read_facts
from evaluator.scoring import Loading
from evaluator.settings import DEFAULT_BATCH_SIZE, Dtype, short_dtype
from recorder.errors import RecorderError
from recorder.provenance import provenance
from recorder.results.evaluation import SampleRow
from recorder.store.run import RunDir, derived_dir, write_derived
from trainer.policy import CheckpointError

if TYPE_CHECKING:
    from trainer.policy.taskspec import TaskSpec

SCHEMA = "recorder.audit/1"
REPORT = "audit.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditOptions:
    """What `recorder audit` was asked: which steps, and how to run (none of it can change a completion)."""

    steps: tuple[int, ...] | None = None  # None: the steps that decide the score
    workers: int = 1
    ray_address: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    task: Path | None = None  # the task spec the evaluation used, when it was not the run's recorded one
    device: str = "cpu"
    force: bool = False  # audit a run that fails verify

    def __post_init__(self) -> None:
        errors = []
        if self.workers < 1:
            errors.append(f"--workers {self.workers}: at least 1")
        if self.batch_size < 1:
            errors.append(f"--batch-size {self.batch_size}: at least 1")
        if self.steps is not None and not self.steps:
            errors.append("--steps: name at least one step")
        if errors:
            raise SettingsError("invalid options: " + "; ".join(errors))


@dataclass(frozen=True, slots=True, kw_only=True)
class StepAudit:
    """The verdict on one recorded evaluation."""

    step: int
    status: Status
    detail: str  # the first difference, or why the evidence is missing; empty when reproduced
    difference: Difference | None = None
    recorded_accuracy: float | None = None
    recomputed_accuracy: float | None = None
    samples: int = 0  # samples re-generated
    results: str | None = None  # the recorded results.json, relative to the run
    seconds: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditReport:
    """Every audited step, and where the report was written (or why it could not be)."""

    run_id: str
    workers: str
    steps: list[StepAudit]
    unverified: list[str] = field(default_factory=list)  # verify's problems, when audited with --force
    written: str | None = None  # derived/audit.json, relative to the run
    not_written: str = ""  # why derived/audit.json could not be written (the verdict stands)

    @property
    def reproduced(self) -> bool:
        return all(s.status == "reproduced" for s in self.steps)


def parse_steps(text: str) -> tuple[int, ...]:
    """'18,19' -> (18, 19): distinct positive integers."""
    try:
        steps = tuple(int(p) for p in text.split(","))
    except ValueError:
        raise SettingsError(f"--steps {text!r}: use steps like 18,19") from None
    if any(s < 1 for s in steps) or len(set(steps)) != len(steps):
        raise SettingsError(f"--steps {text!r}: distinct positive steps, like 18,19")
    return steps


def chosen(all_attempts: list[Attempt], target: float, steps: tuple[int, ...] | None, run: str) -> list[Attempt]:
    """The attempts to audit: those deciding the score, or each step's first scored attempt for `steps`."""
    done = scored(all_attempts)
    if not done:
        raise NothingToAuditError(f"{run}: no scored evaluation to audit; evaluate it first (`recorder eval {run}`)")
    if steps is None:
        return deciding(all_attempts, target)
    unknown = [s for s in steps if s not in done]
    if unknown:
        raise NothingToAuditError(
            f"--steps: step {unknown[0]} has no scored evaluation in {run} (scored: {', '.join(map(str, done))})"
        )
    return [done[s] for s in steps]


def audit_run(
    run_dir: Path | str | RunDir,
    options: AuditOptions,
    *,
    workers_factory: Callable[[int, str | None], Workers] = start_workers,
    on_step: Callable[[StepAudit], None] | None = None,
) -> AuditReport:
    """Re-evaluate the chosen steps with the run's recorded settings; write nothing but derived/audit.json."""
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    facts = read_facts(run, allow_gaps=True, task=options.task, force=options.force)
    todo = chosen(attempts(facts.events), facts.eval_cfg.target, options.steps, str(run.path))
    commits = {c.step: c for c in committed(facts.events)}
    spec = _load_spec(facts.task)
    verdicts: list[StepAudit] = []
    with ExitStack() as stack:
        workers: list[Workers] = []

        def started() -> Workers:
            if not workers:
                workers.append(workers_factory(options.workers, options.ray_address))
                stack.callback(workers[0].close)
            return workers[0]

        for attempt in todo:
            verdict = _audit_step(facts, attempt, commits, spec, options, started)
            verdicts.append(verdict)
            if on_step is not None:
                on_step(verdict)
        name = workers[0].name if workers else "none"
    report = AuditReport(run_id=facts.run_id, workers=name, steps=verdicts, unverified=facts.unverified)
    return _write(run, report, facts)


def _audit_step(
    facts: RunFacts,
    attempt: Attempt,
    commits: dict[int, CommittedCheckpoint],
    spec: TaskSpec,
    options: AuditOptions,
    workers: Callable[[], Workers],
) -> StepAudit:
    t0 = time.monotonic()
    step = attempt.step
    assert step is not None  # scored attempts have a step
    try:
        recorded = recorded_evaluation(facts.run, attempt)
        if recorded.spec_sha256 != spec.sha256:
            other = Difference(what="task spec sha256", recorded=recorded.spec_sha256, recomputed=spec.sha256)
            why = f"{other} ({facts.task}; an evaluation with another spec is audited with --task SPEC.toml)"
            return _verdict(recorded, "differs", why, other, t0=t0)
        directory = _checked_checkpoint(facts, commits.get(step), step)
        pool = workers()  # started only once a checkpoint is there to re-evaluate
        t0 = time.monotonic()  # the re-evaluation, not the workers' start
        _load(pool, directory, facts, options, recorded, step)
        sampled = sample_and_score(pool, spec, facts.eval_cfg, tasks=None, batch_size=options.batch_size)
    except MissingEvidenceError as e:
        return StepAudit(step=step, status="missing evidence", detail=str(e), recorded_accuracy=attempt.accuracy)
    rows = sample_rows(sampled.samples, sampled.pairs)
    diff = first_difference(recorded, rows, sampled.score)
    if diff is None:
        return _verdict(recorded, "reproduced", "", None, t0=t0, rows=rows, score=sampled.score)
    detail = str(diff)
    if recorded.backend not in (None, "torch"):  # vLLM's kernels give other bits than ours: not a forgery sign
        detail += f" (evaluated with --backend {recorded.backend}; audit re-evaluates with torch)"
    if recorded.device not in (None, options.device):
        detail += f" (evaluated on {recorded.device}, audited on {options.device}: bit for bit needs the same --device)"
    return _verdict(recorded, "differs", detail, diff, t0=t0, rows=rows, score=sampled.score)


def _verdict(
    recorded: RecordedEvaluation,
    status: Status,
    detail: str,
    diff: Difference | None,
    *,
    t0: float,
    rows: Sequence[SampleRow] = (),
    score: float | None = None,
) -> StepAudit:
    return StepAudit(
        step=recorded.step,
        status=status,
        detail=detail,
        difference=diff,
        recorded_accuracy=recorded.accuracy,
        recomputed_accuracy=score,
        samples=len(rows),
        results=recorded.results,
        seconds=time.monotonic() - t0,
    )


def _checked_checkpoint(facts: RunFacts, cp: CommittedCheckpoint | None, step: int) -> Path:
    """The committed checkpoint's directory, its weights' hash checked; MissingEvidenceError when there is no
    commit, or its checkpoint is gone, altered or outside the run."""
    if cp is None:
        raise MissingEvidenceError(f"step {step}: no checkpoint_committed for it: nothing to re-evaluate")
    try:
        directory = resolve(facts.run.path, cp)
        if cp.manifest is None:
            check_hash(cp, weights_path(directory, cp))
        else:  # a sharded or imported checkpoint: every shard its manifest names, where the commit put it
            expected = committed_manifest(cp, directory)
            assert expected is not None
            hash_shards(cp, directory, expected)
    except CheckpointRefused as e:
        raise MissingEvidenceError(f"step {step}: its checkpoint cannot be re-evaluated: {e}") from e
    return directory


def _load(
    pool: Workers, directory: Path, facts: RunFacts, options: AuditOptions, recorded: RecordedEvaluation, step: int
) -> None:
    """Load the weights into every worker, in the dtype the evaluation recorded (Hugging Face checkpoints)."""
    short = short_dtype(recorded.dtype)  # "bf16" as results.json writes it, or a torch name ("bfloat16")
    dtype: Dtype = short if short in get_args(Dtype) else "fp32"  # type: ignore[assignment]
    try:
        pool.load(str(directory), None, Loading(task=str(facts.task), dtype=dtype, device=options.device))
    except CheckpointError as e:
        raise MissingEvidenceError(f"step {step}: its checkpoint cannot be loaded: {e}") from e


def _load_spec(path: Path) -> TaskSpec:
    from trainer.policy.taskspec import load_spec

    return load_spec(path)


def _write(run: RunDir, report: AuditReport, facts: RunFacts) -> AuditReport:
    """derived/audit.json; a run whose derived/ cannot be written keeps its verdict, with the reason."""
    doc = {
        "schema": SCHEMA,
        "run_id": report.run_id,
        "reproduced": report.reproduced,
        "workers": report.workers,
        "task": str(facts.task),
        "unverified": report.unverified,
        "provenance": provenance(),
        "steps": [{k: v for k, v in asdict(s).items() if k != "seconds"} for s in report.steps],
    }
    body = (json.dumps(doc, indent=1, ensure_ascii=False, default=str) + "\n").encode()
    try:
        write_derived(derived_dir(run) / REPORT, body)
    except RecorderError as e:
        return replace(report, not_written=str(e))
    return replace(report, written=f"derived/{REPORT}")
