"""One evaluator session: plan from the run's events, check, score, record. The driver of `recorder eval`.

Only this driver writes events (writer "evaluator", one new segment per session); workers return results.
A session evaluates what earlier sessions did not score, closes attempts a killed session left open, stops
at the first passing checkpoint in the chosen order unless `--all`, and never fabricates a score: each
failure is an `eval_failed` event.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evaluator.attempts import Attempt, attempts, open_attempts, scored
from evaluator.cluster.sweep import HandOut, sweep
from evaluator.cluster.workers import Workers, start_workers
from evaluator.errors import EvaluatorBusyError, RunNotWritableError
from evaluator.evaluate import CheckpointEvaluation, Context
from evaluator.order import arrange
from evaluator.run_facts import RunFacts, read_facts
from evaluator.settings import Options, RunEvalConfig
from recorder.results.harness import HarnessResults
from recorder.rules import passes
from recorder.store.kinds import EvalFailed
from recorder.store.log import LogWriter
from recorder.store.run import RunDir, derived_dir
from trainer.policy.kernels import pin_cpu_kernels, recorded_pinned

WRITER = "evaluator"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepOutcome:
    """What happened to one planned step in this session: the benchmark evaluator's (accuracy, passed) or a
    harness session's (scores per task, evaluator.harness.run_session)."""

    step: int
    status: Literal["scored", "failed", "skipped"]  # skipped: scored by an earlier session
    accuracy: float | None = None
    passed: bool = False
    scores: dict[str, float] = field(default_factory=dict)  # a harness session's, by task
    reason: str = ""
    error: str = ""
    results: str | None = None
    document: HarnessResults | None = None  # a harness session's results.json as written, passed on, not read back
    seconds: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """The session's result; the CLI turns it into a table and an exit code."""

    run_id: str
    segment: str | None  # None: nothing needed doing, no segment was opened
    eval_cfg: RunEvalConfig
    workers: str
    problems: list[str]
    outcomes: list[StepOutcome]
    closed: list[str] = field(default_factory=list)  # interrupted attempts closed now
    remaining: list[int] = field(default_factory=list)  # planned steps left unevaluated (--limit)
    unverified: list[str] = field(default_factory=list)  # verify's problems, when evaluated with --force
    engine_log: Path | None = None  # where the backend's own output went (vLLM's), when it ran

    @property
    def passing_step(self) -> int | None:
        """The first passing step in evaluation order (this session or, when skipped, an earlier one)."""
        return next((o.step for o in self.outcomes if o.passed), None)

    @property
    def failures(self) -> list[StepOutcome]:
        return [o for o in self.outcomes if o.status == "failed"]


@contextmanager
def session_lock(run: RunDir) -> Iterator[None]:
    """Hold the run's evaluator lock (flock: the kernel drops it when its process dies, even by SIGKILL)."""
    path = run.derived / "evals" / ".lock"
    try:
        derived_dir(run, "evals")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as e:  # before any event: a read-only run directory records nothing and loses nothing
        raise RunNotWritableError(
            f"{path}: cannot take the evaluator's lock ({e.strerror}); the run directory "
            "must be writable to record evaluations (is it on a read-only filesystem?)"
        ) from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EvaluatorBusyError(
                f"{run.path}: another evaluator session is running on this run (it holds "
                f"{path}); wait for it to finish, or stop it and run again"
            ) from None
        yield
    finally:
        os.close(fd)


def _todo(steps: list[int], done: dict[int, Attempt], target: float, everything: bool) -> list[int]:
    """Steps this session must score, ignoring what it will learn: skip scored ones, stop at a prior pass."""
    out = []
    for step in steps:
        if step in done:
            if passes(done[step].accuracy, target) and not everything:
                break
            continue
        out.append(step)
    return out


def evaluate_run(
    run_dir: Path | str | RunDir,
    options: Options,
    *,
    workers_factory: Callable[[int, str | None], Workers] | None = None,
    clock: Callable[[], int] = time.time_ns,
    on_outcome: Callable[[StepOutcome], None] | None = None,
) -> Summary:
    """Evaluate a run's checkpoints per `options`; returns what happened (also when evaluations failed).

    One session at a time per run (a lock): the log is read, and the plan made, while holding it.
    `workers_factory` defaults to the backend's: in-process or Ray torch workers, or the vLLM engine.
    """
    run = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir)
    if workers_factory is None:
        workers_factory = _backend_workers(options, run)
    with session_lock(run):
        return _evaluate_locked(run, options, workers_factory, clock, on_outcome)


def _backend_workers(options: Options, run: RunDir) -> Callable[[int, str | None], Workers]:
    if options.backend != "vllm":
        return start_workers
    import functools

    from evaluator.vllm_engine.vllm_backend import VllmParallel, require_vllm, start_vllm_workers
    from evaluator.vllm_engine.vllm_output import vllm_log

    require_vllm()  # before the lock and any event: exit 2 with how to install it
    parallel = VllmParallel(
        tensor_parallel_size=options.tensor_parallel_size,
        pipeline_parallel_size=options.pipeline_parallel_size,
        enable_expert_parallel=options.enable_expert_parallel,
        quantization=options.quantization,
    )
    # vLLM's own output goes to the run's log, not the user's terminal (the summary names it)
    return functools.partial(start_vllm_workers, parallel=parallel, log=vllm_log(run))


def _evaluate_locked(
    run: RunDir,
    options: Options,
    workers_factory: Callable[[int, str | None], Workers],
    clock: Callable[[], int],
    on_outcome: Callable[[StepOutcome], None] | None,
) -> Summary:
    facts = read_facts(run, allow_gaps=options.allow_gaps, task=options.task, force=options.force)
    target = facts.eval_cfg.target
    steps = arrange(sorted(facts.candidates), options.order)
    prior = attempts(facts.events)
    done = scored(prior)
    stale = open_attempts(prior)
    passed = {
        a.step for a in prior if a.status == "scored" and a.step in facts.candidates and passes(a.accuracy, target)
    }
    # the pass the chosen order reaches first; else one outside it (evaluated in another order)
    first_pass = next((done[s] for s in [*steps, *sorted(passed)] if s in passed), None)
    if first_pass is not None and first_pass.step is not None and not options.all:
        # Evaluation ended when a checkpoint passed (in whatever order was used then); more needs --all. But a
        # checkpoint interrupted meanwhile (one worker's pass while another's step was stopped) was promised
        # another evaluation: it comes first where the chosen order puts it first, since it may pass earlier.
        unfinished = {a.step for a in prior if a.status in ("interrupted", "running")} - set(done)
        again = [s for s in steps if s in unfinished or s == first_pass.step]
        steps = again if first_pass.step in again else [*again, first_pass.step]
    if not _todo(steps, done, target, options.all) and not stale:
        return Summary(
            run_id=facts.run_id,
            eval_cfg=facts.eval_cfg,
            problems=facts.problems,
            segment=None,
            workers="none",
            outcomes=_skipped_until_pass(steps, done, target, options.all),
        )
    todo = _todo(steps, done, target, options.all)[: options.limit]
    with ExitStack() as stack:
        workers: Workers | None = None
        if todo:  # started before the segment opens: workers that cannot start leave the run as it was
            pin_cpu_kernels(_trained_pinned(facts))  # before the workers load torch: the run's float order
            workers = workers_factory(options.workers, options.ray_address)
            stack.callback(workers.close)
        writer = stack.enter_context(LogWriter(facts.run, WRITER, clock=clock))
        closed = [close_interrupted(writer, a, facts) for a in stale]
        handout = HandOut(steps, everything=options.all, limit=options.limit)
        ended: dict[int, StepOutcome] = {}
        for step in steps:
            if step in done:
                handout.end(step, passes(done[step].accuracy, target))
                ended[step] = _skipped(done[step], target)
                if on_outcome is not None:
                    on_outcome(ended[step])
        workers_name = "none"
        engine_log = None
        if workers is not None:
            workers_name = workers.name
            engine_log = getattr(workers, "log", None)  # VllmWorkers': where vLLM's own output went
            ctx = Context(facts=facts, options=options, writer=writer, workers=workers, clock=clock)

            def record(step: int, result: CheckpointEvaluation) -> None:
                ended[step] = _from_result(result, step, target)
                if on_outcome is not None:
                    on_outcome(ended[step])

            # One checkpoint per worker when there are several to do; one checkpoint's samples shared otherwise.
            sweep(ctx, handout, facts.candidates, workers.slots() if len(todo) > 1 else [workers], record)
        return Summary(
            run_id=facts.run_id,
            eval_cfg=facts.eval_cfg,
            problems=facts.problems,
            segment=writer.segment,
            workers=workers_name,
            outcomes=_in_order(steps, ended, options.all),
            closed=closed,
            remaining=handout.remaining(),
            unverified=facts.unverified,
            engine_log=engine_log,
        )


def _trained_pinned(facts: RunFacts) -> bool:
    """Whether the run was trained with pinned CPU kernels (its provenance says; an import's does not)."""
    opened = next((e for e in facts.events if e.kind == "run_opened"), None)
    return opened is not None and recorded_pinned(opened.data.get("provenance"))


def _in_order(steps: list[int], ended: dict[int, StepOutcome], everything: bool) -> list[StepOutcome]:
    """Outcomes in the chosen order: up to the first pass, then only what this session evaluated (a later
    checkpoint that finished while an earlier one ran: recorded, but it did not decide)."""
    out: list[StepOutcome] = []
    for step in steps:
        o = ended.get(step)
        if o is None or (o.status == "skipped" and any(x.passed for x in out) and not everything):
            continue
        out.append(o)
    return out


def _skipped(a: Attempt, target: float) -> StepOutcome:
    return StepOutcome(
        step=a.step or 0,
        status="skipped",
        accuracy=a.accuracy,
        passed=passes(a.accuracy, target),
        reason=f"scored in {a.segment}",
    )


def _skipped_until_pass(
    steps: list[int], done: dict[int, Attempt], target: float, everything: bool
) -> list[StepOutcome]:
    out = []
    for step in steps:
        out.append(_skipped(done[step], target))
        if out[-1].passed and not everything:
            break
    return out


def _from_result(r: CheckpointEvaluation, step: int, target: float) -> StepOutcome:
    return StepOutcome(
        step=step,
        status="scored" if r.accuracy is not None else "failed",
        accuracy=r.accuracy,
        passed=passes(r.accuracy, target),
        reason=r.reason,
        error=r.error,
        results=r.results,
        seconds=r.seconds,
    )


def close_interrupted(writer: LogWriter, a: Attempt, facts: RunFacts) -> str:
    """Record that an earlier session's evaluation of `a.step` ended without a result (it was killed)."""
    cp = facts.candidates.get(a.step) if a.step is not None else None
    reason = (
        f"the evaluation of step {a.step} started in {a.segment} never ended (its evaluator was killed "
        "or crashed): no result; it is evaluated again if still needed"
    )
    writer.append(
        EvalFailed(reason=reason, error="EvaluatorInterrupted", interrupted_segment=a.segment),
        step=a.step,
        samples_count=cp.samples_count if cp else None,
    )
    return f"step {a.step} ({a.segment})"
