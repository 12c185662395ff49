"""The facts of a run, extracted from its events: what every interpretation reads.

Reads events only. Events are first put in a canonical order that does not depend on segment names,
segment order or the order the list arrives in: (time, writer, kind, step, seq), so a writer's own
order stands for events it stamped with the same time (mllog_config keys: the checker reads them in order).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from recorder import kinds
from recorder.events import Event
from recorder.rules import recorded_target
from replay.errors import DuplicateResultError, MissingFactError

BENCHMARK_METRIC = "accuracy"  # eval_result key of the benchmark's pass@k; other keys are zero-shot tasks
# Zero-shot tasks (`recorder eval --harness`) have their own writer: their starts, stops and failures are not
# the benchmark's evaluations and never take part in its mllog.
ZERO_SHOT_WRITER = "harness"


def canonical_order(events: Iterable[Event]) -> list[Event]:
    """Events sorted by content, so the result never depends on how segments were listed or merged."""
    return sorted(
        events,
        key=lambda e: (
            e.time_ns,
            e.writer,
            e.kind,
            e.step if e.step is not None else -1,
            e.seq,
            e.key or "",
            e.segment,
        ),
    )


@dataclass(frozen=True)
class Point:
    """When something happened and which recorded event says so."""

    time_ns: int
    source: str  # "<writer>:<kind>", shown as the mllog line's metadata.file


_SOURCES: dict[tuple[str, str], str] = {}


def _point(e: Event) -> Point:
    source = _SOURCES.get((e.writer, e.kind))
    if source is None:
        source = _SOURCES.setdefault((e.writer, e.kind), f"{e.writer}:{e.kind}")
    return Point(e.time_ns, source)


@dataclass(frozen=True)
class CheckpointSave:
    """A committed checkpoint: its step, when its commit was recorded, and (parsed on demand, since most
    interpretations never ask) when its save began, how long it blocked training, its weight-update time."""

    step: int
    committed: Point
    event: Event

    @cached_property
    def payload(self) -> kinds.CheckpointCommitted:
        return kinds.CheckpointCommitted.from_event(self.event)

    @property
    def save_begin_ns(self) -> int:
        return self.payload.save_begin_ns or self.committed.time_ns

    @property
    def blocked_ns(self) -> int:
        return self.payload.blocked_ns or 0

    @property
    def weight_update_ns(self) -> int | None:  # as the checkpoint recorded it; the score reads weight_update events
        return self.payload.weight_update_ns


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of one checkpoint, as performed: start, benchmark result, stop (machine times)."""

    step: int
    samples_count: int
    accuracy: float
    start: Point
    result: Point
    stop: Point

    @property
    def duration_ns(self) -> int:
        return self.stop.time_ns - self.start.time_ns


@dataclass(frozen=True)
class Config:
    """One mllog configuration key as recorded."""

    key: str
    value: Any
    at: Point


@dataclass(frozen=True)
class StepMetrics:
    step: int
    samples_count: int | None
    data: dict[str, Any]
    at: Point


@dataclass(frozen=True)
class Timeline:
    """Everything derivation needs, by kind. Problems found while extracting are kept in `problems`
    and raised by `require_consistent` (as-recorded replays do not need them)."""

    run_id: str
    benchmark: str | None
    ruleset: str | None
    division: str | None
    global_batch_size: int | None
    target: float | None  # the pass target the run recorded (recorder.rules.recorded_target); None: none
    opened: Point | None
    configs: tuple[Config, ...]
    init_start: Point | None
    init_stop: Point | None
    run_start: Point | None
    block_start: tuple[Point, int | None, int | None] | None  # (when, step, samples_count)
    metrics: tuple[StepMetrics, ...]  # ascending step
    weight_updates: dict[int, Point]
    checkpoints: dict[int, CheckpointSave]
    evaluations: tuple[Evaluation, ...]  # in the order performed
    failed_steps: tuple[int, ...]
    mllog_lines: tuple[str, ...]  # verbatim, per segment in seq order
    problems: tuple[str, ...] = field(default=())

    @property
    def final_step(self) -> int:
        if not self.weight_updates:
            raise MissingFactError(f"run {self.run_id}: no weight_update events, so there is no final step")
        return max(self.weight_updates)

    def gbs(self) -> int:
        if self.global_batch_size is None:
            raise MissingFactError(
                f"run {self.run_id}: no global batch size (run_opened.data.global_batch_size "
                "or an mllog_config 'global_batch_size')"
            )
        return self.global_batch_size

    def require(self, name: str, point: Point | None) -> Point:
        if point is None:
            raise MissingFactError(f"run {self.run_id}: no {name} event; record it before replaying")
        return point

    def require_consistent(self) -> None:
        if self.problems:
            raise DuplicateResultError("; ".join(self.problems))

    def weight_update(self, step: int, why: str) -> Point:
        """The weight-update time of `step`; a clear error if the trainer did not record it."""
        point = self.weight_updates.get(step)
        if point is None:
            ckpt = self.checkpoints.get(step)
            hint = (
                (
                    f" (its checkpoint_committed says weight_update_ns={ckpt.weight_update_ns}, but the "
                    "score may only use a recorded weight_update event)"
                )
                if ckpt
                else ""
            )
            raise MissingFactError(
                f"run {self.run_id}: {why} is step {step}, which has no weight_update "
                f"event{hint}: no run_stop can be derived"
            )
        return point


def _evaluations(run_id: str, ordered: list[Event]) -> tuple[list[Evaluation], list[str], list[int]]:
    starts: dict[int, list[Event]] = {}
    stops: dict[int, list[Event]] = {}
    results: dict[int, Event] = {}
    problems: list[str] = []
    failed: list[int] = []
    for e in ordered:
        if e.step is None or e.writer == ZERO_SHOT_WRITER:
            continue
        if e.kind == "eval_start":
            starts.setdefault(e.step, []).append(e)
        elif e.kind == "eval_stop":
            stops.setdefault(e.step, []).append(e)
        elif e.kind == "eval_failed":
            failed.append(e.step)
        elif e.kind == "eval_result" and e.key == BENCHMARK_METRIC:
            if not isinstance(e.value, (int, float)) or isinstance(e.value, bool):
                problems.append(
                    f"run {run_id}: the '{BENCHMARK_METRIC}' result of step {e.step} ({e.segment} seq "
                    f"{e.seq}) is {e.value!r}, not a number"
                )
                continue
            if e.step in results:
                first = results[e.step]
                problems.append(
                    f"run {run_id}: duplicate '{BENCHMARK_METRIC}' results for step {e.step} "
                    f"({first.segment} seq {first.seq}: {first.value}; {e.segment} seq {e.seq}: {e.value}); "
                    "keep one evaluation per checkpoint (move the extra evaluator segment out of events/)"
                )
                continue
            results[e.step] = e
    evaluations = []
    for step, r in results.items():
        start = max((s for s in starts.get(step, []) if s.time_ns <= r.time_ns), key=lambda s: s.time_ns, default=r)
        stop = min((s for s in stops.get(step, []) if s.time_ns >= r.time_ns), key=lambda s: s.time_ns, default=r)
        samples = r.samples_count if r.samples_count is not None else -1
        evaluations.append(Evaluation(step, samples, float(r.value), _point(start), _point(r), _point(stop)))
    evaluations.sort(key=lambda ev: (ev.start.time_ns, ev.result.time_ns, ev.step))
    return evaluations, problems, sorted(set(failed) - set(results))


def _mllog_lines(events: Iterable[Event]) -> tuple[str, ...]:
    """Verbatim lines, segment by segment (segments by their first event's time), each in seq order."""
    by_segment: dict[str, list[Event]] = {}
    for e in events:
        if e.kind == "mllog_line":
            by_segment.setdefault(e.segment, []).append(e)
    groups = sorted(by_segment.values(), key=lambda evs: (min(x.time_ns for x in evs), evs[0].segment))
    return tuple(kinds.MllogLine.from_event(x).line for evs in groups for x in sorted(evs, key=lambda x: x.seq))


def build_timeline(events: Iterable[Event]) -> Timeline:
    """Extract the facts of a run from its events (any order)."""
    ordered = canonical_order(events)
    first: dict[str, Event] = {}
    for e in ordered:
        first.setdefault(e.kind, e)
    opened_event = first.get("run_opened")
    opened = kinds.RunOpened.from_event(opened_event) if opened_event else None
    configs = tuple(Config(e.key, e.value, _point(e)) for e in ordered if e.kind == "mllog_config" and e.key)
    gbs: Any = opened.global_batch_size if opened else None
    if gbs is None:
        gbs = next((c.value for c in configs if c.key == "global_batch_size"), None)
    if gbs is None:  # a run recorded by the mllog drop-in holds only its lines
        gbs = next((e.value for e in ordered if e.kind == "mllog_line" and e.key == "global_batch_size"), None)
    run_id = ordered[0].run_id if ordered else ""
    metrics: dict[int, StepMetrics] = {}
    updates: dict[int, Point] = {}
    checkpoints: dict[int, CheckpointSave] = {}
    evaluation_events: list[Event] = []
    for e in ordered:
        kind, step = e.kind, e.step
        if step is None:
            continue
        if kind == "step_metrics":
            if step not in metrics:
                metrics[step] = StepMetrics(step, e.samples_count, e.data, _point(e))
        elif kind == "weight_update":
            if step not in updates:
                updates[step] = _point(e)
        elif kind == "checkpoint_committed":
            if step not in checkpoints:
                checkpoints[step] = CheckpointSave(step, _point(e), e)
        elif kind.startswith("eval_"):
            evaluation_events.append(e)
    evaluations, problems, failed = _evaluations(run_id, evaluation_events)
    bs = first.get("block_start")
    return Timeline(
        run_id=run_id,
        benchmark=opened.benchmark if opened else None,
        ruleset=opened.ruleset if opened else None,
        division=opened.division if opened else None,
        global_batch_size=int(gbs) if isinstance(gbs, int) else None,
        target=recorded_target(opened_event.data if opened_event else None),
        opened=_point(opened_event) if opened_event else None,
        configs=configs,
        init_start=_point(first["init_start"]) if "init_start" in first else None,
        init_stop=_point(first["init_stop"]) if "init_stop" in first else None,
        run_start=_point(first["run_start"]) if "run_start" in first else None,
        block_start=(_point(bs), bs.step, bs.samples_count) if bs else None,
        metrics=tuple(metrics[s] for s in sorted(metrics)),
        weight_updates=updates,
        checkpoints=checkpoints,
        evaluations=tuple(evaluations),
        failed_steps=tuple(failed),
        mllog_lines=_mllog_lines(ordered),
        problems=tuple(problems),
    )
