"""One zero-shot session: the run's checkpoints, checked as the benchmark evaluator checks them, scored on
lm-eval tasks, recorded as eval events (writer "harness", key = task name) with a results.json each.

Everything but the scoring is the evaluator's: checkpoint discovery from checkpoint_committed events, the
session lock, sha256 and fingerprint checks (evaluate.integrity), eval_start/eval_result/eval_stop or
eval_failed (evaluate.evaluate_checkpoint), closing attempts a killed session left open. A step is skipped
when an earlier harness session already scored every task asked for; otherwise only the missing tasks run.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from evaluator.attempts import HARNESS_WRITER, attempts
from evaluator.cluster.workers import Workers, start_workers
from evaluator.committed import CommittedCheckpoint, resolve
from evaluator.evaluate import Context, WrittenResults, evaluate_checkpoint, integrity, scored_checkpoint
from evaluator.harness.errors import HarnessOptionsError, HarnessUnavailableError
from evaluator.harness.lm_eval_run import quiet, sample_row, simple_evaluate
from evaluator.harness.taskset import TaskData, data_dir, resolve_tasks
from evaluator.order import arrange
from evaluator.results_files import results_dir, sha256_text, write_results
from evaluator.run_facts import read_facts
from evaluator.session import StepOutcome, close_interrupted, session_lock
from evaluator.settings import Options
from recorder.provenance import provenance
from recorder.results.document import ResultsDocError
from recorder.results.harness import HarnessInfo, HarnessResults, HarnessSettings, HarnessTask
from recorder.store.events import Event
from recorder.store.kinds import EvalResult, EvalStart
from recorder.store.log import LogWriter
from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir

if TYPE_CHECKING:
    pass  # imports lm-eval: only once it is known to be there

HARNESS: Final = "lm-eval"


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessOptions:
    """What a zero-shot session does: the tasks, where their data lies, and at most `examples` examples per
    task (a smoke test, not a score). `evaluation` is how, with the evaluator's own options (order, limit,
    batch size, workers, gaps, fingerprint; `all` does not apply: every checkpoint asked for is scored, as a
    zero-shot session has no target)."""

    tasks: list[str]
    data_dir: Path | None = None
    examples: int | None = None
    evaluation: Options = field(default_factory=Options)
    task_data: tuple[TaskData, ...] = ()  # tasks already resolved (any data source): `tasks`/`data_dir` unused
    task: Path | None = None  # the task spec an imported series was fingerprinted with (read_facts' `task`)


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessSummary:
    run_id: str
    segment: str | None
    tasks: list[TaskData]
    outcomes: list[StepOutcome]
    closed: list[str] = field(default_factory=list)
    remaining: list[int] = field(default_factory=list)

    @property
    def failures(self) -> list[StepOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]


def scored_tasks(events: list[Event]) -> dict[int, set[str]]:
    """{step: tasks scored by a harness session that reached eval_stop}."""
    stopped = {(e.segment, e.step) for e in events if e.writer == HARNESS_WRITER and e.kind == "eval_stop"}
    out: dict[int, set[str]] = {}
    for e in events:
        if (
            e.writer == HARNESS_WRITER
            and e.kind == "eval_result"
            and e.step is not None
            and e.key
            and (e.segment, e.step) in stopped
        ):
            out.setdefault(e.step, set()).add(e.key)
    return out


def evaluate_harness(
    run_dir: Path | str | RunDir,
    options: HarnessOptions,
    *,
    workers_factory: Callable[[int, str | None], Workers] = start_workers,
    clock: Callable[[], int] = time.time_ns,
    on_outcome: Callable[[StepOutcome], None] | None = None,
) -> HarnessSummary:
    """Score the run's checkpoints on `options.tasks`; returns what happened (also when some failed)."""
    try:
        import lm_eval  # noqa: F401
    except ImportError as e:
        raise HarnessUnavailableError(f"--harness lm-eval needs lm-eval: pip install -e '.[harness]' ({e})") from e
    if options.examples is not None and options.examples < 1:
        raise HarnessOptionsError(f"examples={options.examples}: at least 1 (or None for every example)")
    tasks = list(options.task_data) or resolve_tasks(options.tasks, data_dir(options.data_dir))
    # No hub is reachable: make sure neither datasets nor huggingface_hub tries (local JSON files only).
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    how = options.evaluation
    with session_lock(run):
        facts = read_facts(run, allow_gaps=how.allow_gaps, force=how.force, task=options.task)
        steps = arrange(sorted(facts.candidates), how.order)
        done = scored_tasks(facts.events)
        stale = [a for a in attempts(facts.events, writer=HARNESS_WRITER) if a.open]
        todo = {s: [t for t in tasks if t.name not in done.get(s, set())] for s in steps}
        if not any(todo.values()) and not stale:
            return HarnessSummary(
                run_id=recorded_run_id(run),
                segment=None,
                tasks=tasks,
                outcomes=[_scored_before(run, facts.events, s, "all tasks scored") for s in steps],
            )
        outcomes: list[StepOutcome] = []
        remaining: list[int] = []
        with ExitStack() as stack:
            workers: Workers | None = None
            if any(todo.values()):  # started before the segment opens: workers that cannot start leave no segment
                workers = workers_factory(how.workers, how.ray_address)
                stack.callback(workers.close)
            writer = stack.enter_context(LogWriter(run, HARNESS_WRITER, clock=clock))
            closed = [close_interrupted(writer, a, facts) for a in stale]
            ctx = None
            if workers is not None:
                ctx = Context(facts=facts, options=how, writer=writer, workers=workers, clock=clock)
            for step in steps:
                if not todo[step]:
                    outcome = _scored_before(run, facts.events, step, "all tasks scored earlier")
                elif how.limit is not None and sum(o.status != "skipped" for o in outcomes) >= how.limit:
                    remaining.append(step)
                    continue
                else:
                    assert ctx is not None  # a step with tasks to do started the workers
                    outcome = _evaluate_step(ctx, facts.candidates[step], todo[step], options)
                outcomes.append(outcome)
                if on_outcome is not None:
                    on_outcome(outcome)
            return HarnessSummary(
                run_id=recorded_run_id(run),
                segment=writer.segment,
                tasks=tasks,
                outcomes=outcomes,
                closed=closed,
                remaining=remaining,
            )


def _scored_before(run: RunDir, events: list[Event], step: int, reason: str) -> StepOutcome:
    """A step every task asked for was scored at by an earlier session: skipped, with the document of the
    newest results.json its eval_result events name (None when that file is gone or is not the one the
    events recorded: its sha256 differs)."""
    named = [e for e in events if e.writer == HARNESS_WRITER and e.kind == "eval_result" and e.step == step and e.data]
    document, results = None, None
    if named:
        data = named[-1].data
        path = run.path / str(data.get("results"))
        try:
            body = path.read_bytes()
            if hashlib.sha256(body).hexdigest() == data.get("results_sha256"):
                document, results = HarnessResults.from_json(body), str(data.get("results"))
        except (OSError, ResultsDocError):
            document = None
    return StepOutcome(step=step, status="skipped", reason=reason, document=document, results=results)


def _evaluate_step(
    ctx: Context, cp: CommittedCheckpoint, tasks: list[TaskData], options: HarnessOptions
) -> StepOutcome:
    def score(c: Context, checkpoint: CommittedCheckpoint, t0: float) -> WrittenResults:
        return _score(c, checkpoint, t0, tasks, options)

    start = EvalStart(harness=HARNESS, tasks=tuple(t.name for t in tasks))
    r = evaluate_checkpoint(ctx, cp, score=score, start=start)
    if r.reason:
        return StepOutcome(step=cp.step, status="failed", reason=r.reason, error=r.error, seconds=r.seconds)
    doc = r.document if isinstance(r.document, HarnessResults) else None
    return StepOutcome(
        step=cp.step, status="scored", scores=r.scores, results=r.results, document=doc, seconds=r.seconds
    )


def _score(
    ctx: Context, cp: CommittedCheckpoint, t0: float, tasks: list[TaskData], options: HarnessOptions
) -> WrittenResults:
    import lm_eval

    from evaluator.harness.adapter import CheckpointLM

    start_ns = ctx.clock()
    digest, fp, timings = integrity(ctx, cp)  # loads the checkpoint on every worker
    workers = ctx.workers
    t = time.monotonic()
    with quiet():
        lm = CheckpointLM(workers.harness, batch_size=options.evaluation.batch_size)
        out = simple_evaluate(lm_eval, lm, tasks, limit=options.examples)  # stderr is not recorded here
    timings["score_s"] = time.monotonic() - t
    if out is None:
        raise RuntimeError("lm_eval.simple_evaluate returned nothing (not rank 0?)")
    per_task, results = {}, []
    for task in tasks:
        metrics = out["results"][task.name]
        value = float(metrics[f"{task.metric},none"])
        n = int(out["n-samples"][task.name]["effective"])
        per_task[task.name] = HarnessTask(
            metric=task.metric,
            score=value,
            n=n,
            of=int(out["n-samples"][task.name]["original"]),
            metrics={
                k.removesuffix(",none"): v for k, v in metrics.items() if k.endswith(",none") and isinstance(v, float)
            },
            version=out["versions"].get(task.name),
            data_file=str(task.data),
            data_files=tuple(str(f) for f in task.files) or None,
            data_sha256=task.data_sha256,
            content_sha256=task.content_sha256,
            config_sha256=sha256_text(task.config.read_text()),
            samples=tuple(sample_row(s) for s in out["samples"][task.name]),
        )
        results.append((task.name, value, EvalResult(metric=task.metric, n=n, harness=HARNESS, num_fewshot=0)))
    timings["total_s"] = time.monotonic() - t0
    max_length, encoding = _model_notes(resolve(ctx.facts.run.path, cp))
    doc = HarnessResults(
        run_id=ctx.writer.run_id,
        step=cp.step,
        samples_count=cp.samples_count,
        harness=HarnessInfo(
            name=HARNESS,
            version=out.get("lm_eval_version"),
            num_fewshot=0,
            scoring="sum log-likelihood of each continuation; acc_norm divides it by the "
            "continuation's length in bytes",
        ),
        scores={name: d.score for name, d in per_task.items()},
        settings=HarnessSettings(
            batch_size=options.evaluation.batch_size,
            examples_limit=options.examples,
            max_length=max_length,
            encoding=encoding,
            workers=workers.name,
        ),
        checkpoint=scored_checkpoint(cp, digest),
        fingerprint=fp,
        provenance=provenance(),
        timings={"start_ns": start_ns, "end_ns": ctx.clock(), **{k: round(v, 6) for k, v in timings.items()}},
        evaluator_segment=ctx.writer.segment,
        tasks=per_task,
    )
    segment = ctx.writer.segment.removesuffix(".arrows")
    path = results_dir(ctx.facts.run, cp.step, "harness", segment) / "results.json"
    sha = write_results(path, doc)
    return WrittenResults(doc, path, sha, results)


def _model_notes(directory: Path) -> tuple[int | None, str]:
    """(max_length, encoding), from the checkpoint's files (the workers hold the model, not the driver)."""
    import json

    from evaluator.harness.loglik import encoding_note
    from recorder.checkpoints.hugging_face.hf_checkpoint import find_dirs

    if not (directory / "config.json").is_file():  # a Hugging Face layout (NeMo-RL's policy/weights/, ...)
        dirs = find_dirs(directory)
        config = json.loads((dirs.model / "config.json").read_text())
        return config.get("max_position_embeddings"), encoding_note(False)
    config = json.loads((directory / "config.json").read_text())
    tokenizer = directory / "tokenizer.json"
    char = tokenizer.is_file() and json.loads(tokenizer.read_text()).get("type") == "char"
    return config.get("max_position_embeddings"), encoding_note(char)
