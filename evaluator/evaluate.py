"""Evaluating one checkpoint: eval_start, checks, pass@k, results.json, then eval_result and eval_stop,
or eval_failed. The checks come before any scoring: a refused checkpoint is never scored.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.cluster.workers import Workers
from evaluator.committed import CommittedCheckpoint, resolve
from evaluator.errors import (
    CheckpointRefused,
    EvaluationCrashed,
    EvaluationsInterrupted,
    HashMismatchError,
    UnloadableCheckpointError,
)
from evaluator.integrity import (
    check_fingerprint,
    check_hash,
    committed_manifest,
    fingerprint_texts,
    hash_shards,
    recorded_fingerprint,
    weights_path,
)
from evaluator.passk import SEED_DOMAIN, pass_at_k, sample_plan
from evaluator.results_files import Sample, results_dir, sample_rows, task_set_sha256, write_results
from evaluator.scoring import Generation, Loading
from evaluator.settings import Dtype, Options, RunEvalConfig, eval_dtype, rule_precision, short_dtype
from evaluator.vllm_engine.vllm_backend import VllmWorkers
from recorder.checkpoints.formats import recorded_format
from recorder.interrupts import deferred_interrupts
from recorder.provenance import provenance
from recorder.results.document import Document
from recorder.results.evaluation import (
    CommandResults,
    CommitRecord,
    PassAtKResults,
    SamplingSettings,
    ScoredCheckpoint,
    TaskSet,
)
from recorder.rules import passes
from recorder.store.kinds import EvalFailed, EvalResult, EvalStart, EvalStop
from recorder.store.log import LogWriter
from trainer.policy import CheckpointError
from trainer.policy.errors import ModelCodeError, ShardMismatchError, UnsafeMetadataError

# Input no checkpoint of the session can be evaluated with (a hostile .metadata, model code that cannot be
# used): recorded as the checkpoint's eval_failed, then the session stops with exit 2.
ABORTS = (UnsafeMetadataError, ModelCodeError)

if TYPE_CHECKING:
    from evaluator.run_facts import RunFacts
    from recorder.checkpoints.manifest import Manifest
    from trainer.policy.taskspec import TaskSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What every checkpoint evaluation of one session shares."""

    facts: RunFacts
    options: Options
    writer: LogWriter
    workers: Workers
    clock: Callable[[], int]

    @property
    def spec(self) -> TaskSpec:
        """The task spec scored (loaded once per session)."""
        return _load_spec(str(self.facts.task))

    @property
    def loading(self) -> Loading:
        """How every checkpoint is loaded; `loading_for` adds one checkpoint's dtype and manifest."""
        o = self.options
        return Loading(
            task=str(self.facts.task),
            dtype=o.dtype or "bf16",
            device=o.device,
            trust_remote_code=o.trust_remote_code,
            model_code=str(o.model_code) if o.model_code is not None else None,
            model_factory=o.model_factory,
            model_config=str(o.model_config) if o.model_config is not None else None,
            tokenizer=str(o.tokenizer) if o.tokenizer is not None else None,
        )

    def loading_for(self, cp: CommittedCheckpoint, expected: Manifest | None) -> Loading:
        """`cp` loaded in the dtype asked for, else its run's rollout dtype; each shard checked against
        `expected` as it is read."""
        return replace(
            self.loading,
            dtype=eval_dtype(self.options.dtype, cp.dtype),
            expected=expected.to_dict() if expected is not None else None,
            fingerprint_dtype=fingerprint_dtype(cp),
        )


@functools.cache
def _load_spec(path: str) -> TaskSpec:
    from trainer.policy.taskspec import load_spec

    return load_spec(path)


@dataclass(frozen=True, slots=True)
class WrittenResults:
    """What a scoring wrote: results.json's document, where it lies and its sha256, and the eval_result
    events it gives as (key, value, payload); evaluate_checkpoint adds results and results_sha256."""

    doc: Document
    path: Path
    sha256: str
    results: list[tuple[str, float, EvalResult]]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointEvaluation:
    """What evaluating one checkpoint gave: its scores and results file, or (`reason` set) why it failed."""

    seconds: float
    accuracy: float | None = None  # the benchmark's score; None for a failure or a zero-shot session
    scores: dict[str, float] = field(default_factory=dict)
    results: str | None = None  # results.json, relative to the run
    document: Document | None = None  # what results.json holds, as written (its one reader is its writer)
    reason: str = ""
    error: str = ""


# (context, checkpoint, start time) -> what the scoring wrote (see evaluate_checkpoint)
Scoring = Callable[[Context, CommittedCheckpoint, float], WrittenResults]


def evaluate_checkpoint(
    ctx: Context, cp: CommittedCheckpoint, *, score: Scoring | None = None, start: EvalStart | None = None
) -> CheckpointEvaluation:
    """Evaluate `cp`, recording its events: eval_start, then eval_result per score and eval_stop, or
    eval_failed.

    `score` replaces the benchmark's pass@k (the lm-eval harness passes its own); `start` gives eval_start's
    harness and tasks (this adds checkpoint, sha256 and worker).
    """
    t0: float | None = None
    try:
        with deferred_interrupts():  # eval_start and knowing it began: a Ctrl-C between them leaves no open start
            t0 = begin_evaluation(ctx, cp, start)
        written = compute(ctx, cp, t0, score)
    except CheckpointRefused as e:
        assert t0 is not None
        return record_refusal(ctx, cp, e, t0)
    except ABORTS as e:  # recorded, then the session stops (exit 2)
        ctx.writer.append(
            EvalFailed(reason=str(e), error=type(e).__name__), step=cp.step, samples_count=cp.samples_count
        )
        raise
    except BaseException as e:  # Ctrl-C or SystemExit: close the interval, then let it propagate
        closed = [] if t0 is None else close_interrupted_evaluations([(ctx, cp)], e)
        if isinstance(e, KeyboardInterrupt):
            raise EvaluationsInterrupted(closed) from None
        raise
    with deferred_interrupts():  # eval_result and eval_stop together
        return record_written(ctx, cp, written, t0)


def begin_evaluation(ctx: Context, cp: CommittedCheckpoint, start: EvalStart | None = None) -> float:
    """Append `cp`'s eval_start; -> the monotonic time it began (the evaluation's seconds count from it)."""
    t0 = time.monotonic()
    ctx.writer.append(
        replace(start or _benchmark_start(ctx), checkpoint=cp.path, sha256=cp.sha256, worker=ctx.workers.name),
        step=cp.step,
        samples_count=cp.samples_count,
    )
    return t0


def compute(ctx: Context, cp: CommittedCheckpoint, t0: float, score: Scoring | None = None) -> WrittenResults:
    """Check and score `cp` and write its results.json; appends no event, so it may run off the driver's
    thread. Every failure comes out as a CheckpointRefused (interruptions propagate as they are)."""
    try:
        return (score or _score)(ctx, cp, t0)
    except (CheckpointRefused, *ABORTS):
        raise
    except ShardMismatchError as e:  # a shard differs from the commit: found while loading it
        raise HashMismatchError(f"step {cp.step}: {e}") from e
    except CheckpointError as e:  # the policy's loader refused it (pickled weights, missing files)
        raise UnloadableCheckpointError(f"step {cp.step}: {e}") from e
    except Exception as e:  # recorded as eval_failed and reported; the session exits non-zero
        raise EvaluationCrashed(f"step {cp.step}: evaluation crashed: {type(e).__name__}: {e}") from e


def record_refusal(ctx: Context, cp: CommittedCheckpoint, e: CheckpointRefused, t0: float) -> CheckpointEvaluation:
    """Append the eval_failed that ends `cp`'s evaluation, with the refusal's reason and details."""
    ctx.writer.append(
        EvalFailed(reason=str(e), error=type(e).__name__, **e.details), step=cp.step, samples_count=cp.samples_count
    )
    return CheckpointEvaluation(reason=str(e), error=type(e).__name__, seconds=time.monotonic() - t0)


def record_abort(ctx: Context, cp: CommittedCheckpoint, e: Exception) -> None:
    """Close `cp`'s evaluation with an eval_failed naming input that stops the session (ABORTS)."""
    ctx.writer.append(EvalFailed(reason=str(e), error=type(e).__name__), step=cp.step, samples_count=cp.samples_count)


def record_interruption(ctx: Context, cp: CommittedCheckpoint, e: BaseException) -> None:
    """Close `cp`'s evaluation with an eval_failed whose error names the interruption (Ctrl-C, exit): it is
    shown as interrupted, not failed (evaluator.attempts.INTERRUPTIONS), and is evaluated again next time."""
    failed = EvalFailed(
        reason=f"interrupted ({type(e).__name__}) before it was scored; `recorder eval` evaluates it again",
        error=type(e).__name__,
    )
    ctx.writer.append(failed, step=cp.step, samples_count=cp.samples_count)


def close_interrupted_evaluations(running: list[tuple[Context, CommittedCheckpoint]], e: BaseException) -> list[int]:
    """Record each running evaluation as interrupted by `e`, on the way out; -> their steps. A second Ctrl-C
    meanwhile waits until every one is recorded, then is dropped: the command is already stopping."""
    try:
        with deferred_interrupts():
            for ctx, cp in running:
                record_interruption(ctx, cp, e)
    except KeyboardInterrupt:
        pass
    return [cp.step for _, cp in running]


def record_written(ctx: Context, cp: CommittedCheckpoint, written: WrittenResults, t0: float) -> CheckpointEvaluation:
    """Append `cp`'s eval_result per score, naming results.json and its sha256, then eval_stop."""
    w = ctx.writer
    rel = str(written.path.relative_to(ctx.facts.run.path))
    for key, value, result in written.results:
        w.append(
            replace(result, results=rel, results_sha256=written.sha256, unverified=_unverified(ctx)),
            step=cp.step,
            samples_count=cp.samples_count,
            key=key,
            value=value,
        )
    w.append(EvalStop(), step=cp.step, samples_count=cp.samples_count)
    return CheckpointEvaluation(
        accuracy=written.doc.score if isinstance(written.doc, (PassAtKResults, CommandResults)) else None,
        scores={key: value for key, value, _ in written.results},
        results=rel,
        document=written.doc,
        seconds=time.monotonic() - t0,
    )


def _benchmark_start(ctx: Context) -> EvalStart:
    """eval_start of the benchmark's score: which backend, and which task spec scores (the command's own
    evaluation scores with --backend command, so no spec is named there)."""
    backend = ctx.options.backend
    if backend == "command":
        return EvalStart(backend=backend)
    return EvalStart(backend=backend, task=ctx.spec.name, task_sha256=ctx.spec.sha256)


def integrity(
    ctx: Context, cp: CommittedCheckpoint, *, load: bool = True
) -> tuple[str, dict[str, Any], dict[str, float]]:
    """(weights sha256, fingerprint report, timings); raises CheckpointRefused. Loads the workers (when `load`,
    or when the fingerprint needs the model)."""
    timings: dict[str, float] = {}
    t = time.monotonic()
    directory = resolve(ctx.facts.run.path, cp)
    expected = committed_manifest(cp, directory)
    if expected is None:  # a commit without shard digests (an older import): its tree hashed before loading
        digest = check_hash(cp, weights_path(directory, cp))
    else:
        if not load:  # nothing is loaded here (the submitter's command loads it): the shards hashed alone
            hash_shards(cp, directory, expected)
        # else hashed by the loader, shard by shard, as it reads them. Either way the digest is what the
        # commit recorded: the manifest's root for a sharded commit, the one file's sha256 otherwise.
        digest = expected.root if cp.manifest is not None else cp.sha256
    timings["hash_s"] = time.monotonic() - t
    check = ctx.options.fingerprint
    texts = None
    if check:
        method, recorded = recorded_fingerprint(cp)
        texts = fingerprint_texts(cp, ctx.spec)
    if not check and not load:
        return digest, {"checked": False, "why": "--fingerprint off", "recorded": cp.fingerprint}, timings
    t = time.monotonic()
    measured = ctx.workers.load(str(directory), texts, ctx.loading_for(cp, expected))
    timings["load_s"] = time.monotonic() - t
    if not check:
        return digest, {"checked": False, "why": "--fingerprint off", "recorded": cp.fingerprint}, timings
    worst = check_fingerprint(cp, measured, ctx.options.fingerprint_tolerance)
    return (
        digest,
        {
            "checked": True,
            "method": method,
            "recorded": recorded,
            "measured": measured,
            "max_abs_diff": worst,
            "tolerance": ctx.options.fingerprint_tolerance,
        },
        timings,
    )


def _score(ctx: Context, cp: CommittedCheckpoint, t0: float) -> WrittenResults:
    start_ns = ctx.clock()
    if ctx.options.backend == "command":
        from evaluator.command import score_with_command

        assert ctx.options.command is not None  # Options.__post_init__
        checked = integrity(ctx, cp, load=False)  # before the command: it never sees refused weights
        return WrittenResults(
            *score_with_command(
                ctx.facts,
                cp,
                ctx.options.command,
                checked,
                segment=ctx.writer.segment,
                runner=ctx.workers.command,
                clock=ctx.clock,
                start_ns=start_ns,
                t0=t0,
            )
        )
    digest, fp, timings = integrity(ctx, cp)
    t = time.monotonic()
    s = sample_and_score(
        ctx.workers, ctx.spec, ctx.facts.eval_cfg, tasks=ctx.options.tasks, batch_size=ctx.options.batch_size
    )
    timings["score_s"] = time.monotonic() - t
    timings["total_s"] = time.monotonic() - t0
    backend = _backend(ctx, cp)
    doc = _document(ctx, cp, digest, fp, s, backend, timings, start_ns)
    path = results_dir(ctx.facts.run, cp.step) / "results.json"
    sha = write_results(path, doc)
    accuracy = (
        "accuracy",
        s.score,
        EvalResult(
            metric=doc.metric,
            n=doc.n_tasks,
            k=doc.k,
            target=doc.target,
            task=ctx.spec.name,
            task_sha256=ctx.spec.sha256,
            backend=ctx.options.backend,
            batch_invariant=backend["batch_invariant"],
            dtype=backend["dtype"],
            device=backend["device"],
        ),
    )
    return WrittenResults(doc, path, sha, [accuracy])


def _unverified(ctx: Context) -> str | None:
    """What eval_result records of a run evaluated with --force although it fails verify (cut: one line)."""
    problems = ctx.facts.unverified
    if not problems:
        return None
    first = problems[0] if len(problems[0]) <= 300 else problems[0][:297] + "..."
    return first + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Sampled:
    """The completions of one loaded checkpoint and the score they give."""

    gen: Generation
    samples: list[Sample]  # task-major, in plan order
    pairs: list[tuple[str, str]]  # (prompt, answer) of the tasks scored
    full: int  # tasks in the spec's validation set
    score: float


def sample_and_score(
    workers: Workers, spec: TaskSpec, cfg: RunEvalConfig, *, tasks: int | None, batch_size: int
) -> Sampled:
    """Sample the loaded checkpoint on the first `cfg.samples` tasks (or `tasks`), k each, and score pass@k.

    The one path from loaded weights to a score: `recorder eval` records it, `recorder audit` repeats it.
    """
    items = spec.items
    n = min(cfg.samples if tasks is None else tasks, len(items))
    gen = Generation(
        temperature=cfg.temperature, top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens, batch_size=batch_size
    )
    plan = sample_plan(range(n), cfg.k)
    samples = workers.score(plan, gen)
    if [(s.task, s.sample) for s in samples] != plan:
        raise RuntimeError(f"workers returned {len(samples)} samples not matching the plan of {len(plan)}")
    pairs = [(x.prompt, x.answer) for x in items]
    score = pass_at_k(_outcomes(samples, n, cfg.k), cfg.k)
    return Sampled(gen=gen, samples=samples, pairs=pairs[:n], full=len(pairs), score=score)


def _backend(ctx: Context, cp: CommittedCheckpoint) -> dict[str, Any]:
    """results.json's `backend`: name, the dtype and device the weights were evaluated in (as loaded), whether
    that is the rule's precision, and whether completions depend on the batch size."""
    out: dict[str, Any] = {"name": ctx.options.backend} | precision(ctx, cp)
    if isinstance(ctx.workers, VllmWorkers):
        return out | ctx.workers.describe()
    # trainer.policy.sampling: hashed per-sample noise, row-wise choice (tests/trainer/test_sampling.py)
    return out | {"batch_invariant": True}


def fingerprint_dtype(cp: CommittedCheckpoint) -> Dtype:
    """The dtype `cp`'s fingerprint was computed in: recorded with it, else the trainer's (the run's dtype:
    it fingerprints the weights it trains), else float32 (an import loads Hugging Face weights in it)."""
    recorded = short_dtype(str(cp.fingerprint.get("dtype") or ""))
    if recorded is None and recorded_format(cp.format).fingerprint_in_run_dtype:
        recorded = short_dtype(cp.dtype)
    return recorded if recorded in ("fp32", "bf16", "fp16") else "fp32"  # type: ignore[return-value]


def precision(ctx: Context, cp: CommittedCheckpoint) -> dict[str, Any]:
    """The dtype and device the loaded weights are in (as the workers report them), the run's rollout dtype,
    and whether the evaluation is in the rule's precision (bf16, or that rollout dtype)."""
    placed = ctx.workers.placement()
    dtype = placed.get("dtype") or eval_dtype(ctx.options.dtype, cp.dtype)
    return {
        "dtype": dtype,
        "device": placed.get("device") or ctx.options.device,
        "rollout_dtype": short_dtype(cp.dtype),
        "rule_precision": rule_precision(dtype, cp.dtype),
        **{k: v for k, v in placed.items() if k not in ("dtype", "device")},
    }


def _outcomes(samples: list[Sample], n_tasks: int, k: int) -> list[list[bool]]:
    """[n_tasks][k] correctness from task-major samples."""
    return [[s.correct for s in samples[t * k : (t + 1) * k]] for t in range(n_tasks)]


def _document(
    ctx: Context,
    cp: CommittedCheckpoint,
    digest: str,
    fp: dict[str, Any],
    s: Sampled,
    backend: dict[str, Any],
    timings: dict[str, float],
    start_ns: int,
) -> PassAtKResults:
    cfg, gen, samples, pairs, full, score = ctx.facts.eval_cfg, s.gen, s.samples, s.pairs, s.full, s.score
    tasks_passed = sum(any(x.correct for x in samples[t * cfg.k : (t + 1) * cfg.k]) for t in range(len(pairs)))
    return PassAtKResults(
        run_id=ctx.writer.run_id,
        step=cp.step,
        samples_count=cp.samples_count,
        metric=cfg.metric,
        score=score,
        k=cfg.k,
        n_tasks=len(pairs),
        tasks_passed=tasks_passed,
        target=cfg.target,
        passed=passes(score, cfg.target),
        complete_task_set=len(pairs) == full,
        settings=SamplingSettings(
            temperature=gen.temperature,
            top_p=gen.top_p,
            max_new_tokens=gen.max_new_tokens,
            batch_size=gen.batch_size,
            workers=ctx.workers.name,
            seeds=f"sample_seed({SEED_DOMAIN!r}, task, sample)",
        ),
        checkpoint=scored_checkpoint(cp, digest),
        fingerprint=fp,
        task_set=TaskSet(name="validation", n=len(pairs), of=full, sha256=task_set_sha256(pairs)),
        task=ctx.spec.describe(),
        backend=backend,
        provenance=provenance(),
        unverified=tuple(ctx.facts.unverified),
        timings={"start_ns": start_ns, "end_ns": ctx.clock(), **{k: round(v, 6) for k, v in timings.items()}},
        evaluator_segment=ctx.writer.segment,
        samples=sample_rows(samples, pairs),
    )


def scored_checkpoint(cp: CommittedCheckpoint, digest: str) -> ScoredCheckpoint:
    """results.json's `checkpoint`: as committed, with the digest its weights were checked against."""
    return ScoredCheckpoint(
        path=cp.path,
        sha256=digest,
        bytes=cp.bytes,
        dtype=cp.dtype,
        weight_update_ns=cp.weight_update_ns,
        committed=CommitRecord(segment=cp.segment, seq=cp.seq),
    )
