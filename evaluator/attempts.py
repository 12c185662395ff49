"""Every evaluation attempt a run's log holds, rebuilt from the evaluator's events.

An attempt is what one evaluator session did with one step: `eval_start`, then `eval_result` and
`eval_stop` (scored), or `eval_failed` (refused or crashed). A session killed mid-evaluation leaves an
open `eval_start`; the next session closes it with an `eval_failed` whose `interrupted_segment` names the
dead session's segment, so no interval stays open and nothing is scored twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from recorder.evaluations import benchmark_score, evaluation_order
from recorder.rules import passes
from recorder.store.events import Event
from recorder.store.kinds import EvalFailed

EVAL_KINDS = ("eval_start", "eval_result", "eval_stop", "eval_failed")
# Zero-shot sessions (evaluator/harness) write eval events under their own writer: they are not attempts at
# the benchmark's score, and must neither count as scored nor be closed as interrupted by it.
HARNESS_WRITER = "harness"
Status = Literal["scored", "failed", "interrupted", "running"]
# An evaluation its own session stopped (Ctrl-C, exit) records these as eval_failed's error: interrupted, not failed
INTERRUPTIONS = ("KeyboardInterrupt", "SystemExit")


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    """One evaluation of one step by one evaluator session (segment)."""

    step: int | None
    segment: str
    start: Event | None = None
    result: Event | None = None
    stop: Event | None = None
    failed: Event | None = None
    closed_by: Event | None = None  # a later session's eval_failed for this interrupted attempt

    @property
    def status(self) -> Status:
        if self.result is not None:
            return "scored"
        if self.failed is not None:
            return "interrupted" if EvalFailed.from_event(self.failed).error in INTERRUPTIONS else "failed"
        return "interrupted" if self.closed_by is not None else "running"

    @property
    def accuracy(self) -> float | None:
        if self.result is None or not isinstance(self.result.value, (int, float)):
            return None
        return float(self.result.value)

    @property
    def open(self) -> bool:
        """Started, never ended, never closed: its session died (or is still running)."""
        return self.status == "running"


def attempts(events: Iterable[Event], *, writer: str | None = None) -> list[Attempt]:
    """Every attempt in log order (of its first event). Needs every eval event of the run.

    `writer=None`: the benchmark's attempts, by every writer but the zero-shot harness, with the `accuracy`
    result. `writer="harness"` (HARNESS_WRITER): the zero-shot sessions' attempts, `result` their first task's.
    """
    benchmark = writer is None
    rows: dict[tuple[str, int | None], dict[str, Event]] = {}
    closers: dict[tuple[str, int | None], Event] = {}
    for e in events:
        if e.kind not in EVAL_KINDS or (e.writer == HARNESS_WRITER if benchmark else e.writer != writer):
            continue
        if e.kind == "eval_failed" and (closed := EvalFailed.from_event(e).interrupted_segment):
            closers[(closed, e.step)] = e
            continue
        if benchmark and e.kind == "eval_result" and benchmark_score(e) is None:
            continue  # only a well-formed accuracy is the benchmark's score (recorder.evaluations)
        slot = rows.setdefault((e.segment, e.step), {})
        slot.setdefault(e.kind.removeprefix("eval_"), e)
    return [
        Attempt(
            step=step,
            segment=seg,
            start=r.get("start"),
            result=r.get("result"),
            stop=r.get("stop"),
            failed=r.get("failed"),
            closed_by=closers.get((seg, step)),
        )
        for (seg, step), r in rows.items()
    ]


def scored(all_attempts: list[Attempt]) -> dict[int, Attempt]:
    """{step: its first scored attempt}, in the one order of evaluations replay scores by
    (recorder.evaluations.evaluation_order): what must not be evaluated again, and what decides the score."""
    out: dict[int, Attempt] = {}
    done = [(evaluation_order(a.start, a.result), a) for a in all_attempts if a.result is not None]
    for _, a in sorted(done, key=lambda pair: pair[0]):
        if a.step is not None:
            out.setdefault(a.step, a)
    return out


def deciding(all_attempts: list[Attempt], target: float) -> list[Attempt]:
    """The scored attempts that decide the score, in recorded order: each step's first scored attempt up to
    and including the first that passes `target` (every one when none passes: together they decide that none
    did)."""
    out: list[Attempt] = []
    for a in scored(all_attempts).values():
        out.append(a)
        if passes(a.accuracy, target):
            break
    return out


def open_attempts(all_attempts: list[Attempt], *, other_than: str | None = None) -> list[Attempt]:
    """Attempts left open by a session (other than `other_than`, the running one)."""
    return [a for a in all_attempts if a.open and a.segment != other_than]
