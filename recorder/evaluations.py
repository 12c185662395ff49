"""The one reading of a run's benchmark evaluations: which results count, and in which order they were done.

replay (the mllog's evaluations and the passing one), `recorder eval` and `recorder audit` (which steps
decide the score) and verify all read evaluations through these functions, so the step audited is the step
scored:

- a result counts when it is well formed (`benchmark_score`): an `eval_result` of a step with the
  benchmark's key (`accuracy`), a finite number in [0, 1], by a writer that may record it and is not the
  zero-shot harness. A key-less or other-keyed row is never the benchmark's score;
- an evaluation is its segment's `eval_start` of the step, the result, and the segment's `eval_stop` after it;
- evaluations are ordered by one clock (`evaluation_order`): when each began (its eval_start; else its
  result), then its result's time, step, segment and seq. Within a segment that is the writer's own order
  (verify's wall-order rule), so re-dating an evaluation or planting a stray `eval_start` elsewhere moves it
  for every reader alike, or fails verify.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from recorder.rules import finite_score
from recorder.store.catalogue import may_write
from recorder.store.events import Event

BENCHMARK_METRIC = "accuracy"  # the eval_result key of the benchmark's pass@k; other keys are zero-shot tasks
ZERO_SHOT_WRITER = "harness"  # zero-shot sessions (`recorder eval --harness`): not the benchmark's evaluations


def benchmark_score(e: Event) -> float | None:
    """`e`'s score when it is a well-formed benchmark result; None for any other event."""
    if e.kind != "eval_result" or e.key != BENCHMARK_METRIC or e.step is None or e.writer == ZERO_SHOT_WRITER:
        return None
    if not may_write(e.writer, e.kind):
        return None
    try:
        score = finite_score(e.value)
    except ValueError:  # a value that is not JSON
        return None
    return score if score is not None and 0 <= score <= 1 else None


@dataclass(frozen=True, slots=True)
class Performed:
    """One scored evaluation: its segment's eval_start (None when it has none), result and eval_stop."""

    start: Event | None
    result: Event
    stop: Event | None

    @property
    def step(self) -> int:
        assert self.result.step is not None  # benchmark results have a step
        return self.result.step


def evaluation_order(start: Event | None, result: Event) -> tuple[int, int, int, str, int]:
    """The one order of evaluations: begun (eval_start, else the result), result time, step, segment, seq."""
    begun = start.time_ns if start is not None else result.time_ns
    return (begun, result.time_ns, result.step if result.step is not None else -1, result.segment, result.seq)


def performed(events: Iterable[Event]) -> list[Performed]:
    """Every well-formed benchmark evaluation among `events` (any order), in `evaluation_order`."""
    starts: dict[tuple[str, int], list[Event]] = {}
    stops: dict[tuple[str, int], list[Event]] = {}
    results: list[Event] = []
    for e in events:
        if e.step is None or e.writer == ZERO_SHOT_WRITER:
            continue
        if e.kind == "eval_start":
            starts.setdefault((e.segment, e.step), []).append(e)
        elif e.kind == "eval_stop":
            stops.setdefault((e.segment, e.step), []).append(e)
        elif benchmark_score(e) is not None:
            results.append(e)
    out = []
    for r in results:
        assert r.step is not None
        where = (r.segment, r.step)
        start = max((s for s in starts.get(where, []) if s.seq < r.seq), key=lambda s: s.seq, default=None)
        stop = min((s for s in stops.get(where, []) if s.seq > r.seq), key=lambda s: s.seq, default=None)
        out.append(Performed(start, r, stop))
    out.sort(key=lambda p: evaluation_order(p.start, p.result))
    return out
