"""The sweep: checkpoints handed out to workers in the chosen order, one whole checkpoint per worker.

The rule evaluates checkpoints "in any order ... until one reaches the target", and the order chosen decides
which one that is: the first pass *in that order*, not the first to finish. With several workers a later
checkpoint can finish first and pass; its result is recorded, but it cannot decide while an earlier one is
still running, and nothing after it is handed out. Once every checkpoint before the first pass has ended,
the decision is fixed and no more work starts (work already running finishes and is recorded, so every
eval_start is closed).

Only the driver's thread appends events: eval_start when a checkpoint is handed out, its result or
eval_failed when it ends. Workers only compute (evaluate.compute), in a thread per slot when there are
several, inline when there is one (so Ctrl-C interrupts the evaluation itself).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace

from evaluator.cluster.workers import Workers
from evaluator.committed import CommittedCheckpoint
from evaluator.errors import CheckpointRefused, EvaluationsInterrupted
from evaluator.evaluate import (
    ABORTS,
    CheckpointEvaluation,
    Context,
    WrittenResults,
    begin_evaluation,
    close_interrupted_evaluations,
    compute,
    record_abort,
    record_refusal,
    record_written,
)
from recorder.interrupts import deferred_interrupts
from recorder.rules import passes


@dataclass(slots=True)
class HandOut:
    """Which step to start next, and which one decides: pure bookkeeping over the chosen order.

    `everything` (--all) hands out every step; `limit` caps the steps started in this session.
    """

    order: list[int]
    everything: bool = False
    limit: int | None = None
    started: list[int] = field(default_factory=list)
    ended: dict[int, bool] = field(default_factory=dict)  # step -> passed

    def position(self, step: int) -> int:
        return self.order.index(step)

    def end(self, step: int, passed: bool) -> None:
        """`step` ended (scored or failed; `passed` only for a score above the target)."""
        self.ended[step] = passed

    def _first_pass(self) -> int | None:
        """Position of the first ended pass in the order (None: none yet)."""
        return next((i for i, s in enumerate(self.order) if self.ended.get(s)), None)

    def next(self) -> int | None:
        """The next step to start, or None: nothing left that could still decide (or the limit is reached)."""
        if self.limit is not None and len(self.started) >= self.limit:
            return None
        first = self._first_pass()
        for i, step in enumerate(self.order):
            if first is not None and i > first and not self.everything:
                return None  # it comes after a pass: it cannot decide
            if step not in self.ended and step not in self.started:
                return step
        return None

    def start(self, step: int) -> None:
        self.started.append(step)

    @property
    def deciding(self) -> int | None:
        """The step that decides, once fixed: the first pass in order with every step before it ended."""
        first = self._first_pass()
        if first is None or any(s not in self.ended for s in self.order[:first]):
            return None
        return self.order[first]

    def remaining(self) -> list[int]:
        """Steps never started that could still decide (the limit stopped them)."""
        first = self._first_pass()
        before = self.order if first is None or self.everything else self.order[:first]
        return [s for s in before if s not in self.ended and s not in self.started]


@dataclass(frozen=True, slots=True)
class _Running:
    step: int
    t0: float
    ctx: Context


def sweep(
    ctx: Context,
    handout: HandOut,
    checkpoints: dict[int, CommittedCheckpoint],
    slots: list[Workers],
    on_end: Callable[[int, CheckpointEvaluation], None],
) -> None:
    """Evaluate what `handout` gives, one checkpoint per slot at a time; `on_end(step, result)` in the
    driver's thread after each one's events are recorded, in the order they end."""
    target = ctx.facts.eval_cfg.target
    free = list(slots)
    running: dict[Future[WrittenResults], _Running] = {}
    pool = ThreadPoolExecutor(len(slots), thread_name_prefix="sweep") if len(slots) > 1 else None
    try:
        while True:
            while free and (step := handout.next()) is not None:
                slot_ctx = replace(ctx, workers=free.pop(0))
                cp = checkpoints[step]
                future: Future[WrittenResults] = Future()
                with deferred_interrupts():  # its eval_start and its place in `running`: no start left unclosed
                    running[future] = _Running(step, begin_evaluation(slot_ctx, cp), slot_ctx)
                    handout.start(step)
                if pool is not None:
                    pool.submit(_fill, future, slot_ctx, cp, running[future].t0, in_thread=True)
                else:
                    _fill(future, slot_ctx, cp, running[future].t0, in_thread=False)
            if not running:
                return
            ended, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in sorted(ended, key=lambda f: handout.position(running[f].step)):
                r = running[future]
                cp = checkpoints[r.step]
                with deferred_interrupts():  # its ending events and leaving `running` together
                    try:
                        result = record_written(r.ctx, cp, future.result(), r.t0)
                    except CheckpointRefused as e:
                        result = record_refusal(r.ctx, cp, e, r.t0)
                    except ABORTS as e:  # no checkpoint can be evaluated with this input: recorded, then stop
                        record_abort(r.ctx, cp, e)
                        del running[future]
                        raise
                    del running[future]
                handout.end(r.step, passes(result.accuracy, target))
                free.append(r.ctx.workers)
                on_end(r.step, result)
    except BaseException as e:  # Ctrl-C, or a worker's interruption: close every open evaluation, then stop
        closed = close_interrupted_evaluations([(r.ctx, checkpoints[r.step]) for r in running.values()], e)
        if isinstance(e, KeyboardInterrupt):
            raise EvaluationsInterrupted(closed) from None
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _fill(future: Future[WrittenResults], ctx: Context, cp: CommittedCheckpoint, t0: float, *, in_thread: bool) -> None:
    """Compute into `future`. In a thread (`in_thread`) even an interruption goes into it, for the driver
    to re-raise; inline, Ctrl-C propagates at once."""
    try:
        future.set_result(compute(ctx, cp, t0))
    except Exception as e:
        future.set_exception(e)
    except BaseException as e:
        if not in_thread:
            raise
        future.set_exception(e)
