"""The facts of a run, extracted from its events: what every interpretation reads.

Reads events only, folded one at a time (a run is streamed from its segments: memory holds small facts per
step, not the events). Every choice follows a canonical order that does not depend on segment names,
segment order or the order events arrive in: (time, writer, kind, step, seq), so a writer's own
order stands for events it stamped with the same time (mllog_config keys: the checker reads them in order).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from recorder.evaluations import BENCHMARK_METRIC, ZERO_SHOT_WRITER, Performed, benchmark_score, performed
from recorder.rules import recorded_target
from recorder.store import kinds
from recorder.store.catalogue import may_write, records_timing_of
from recorder.store.events import Event
from recorder.store.reader import run_id_from
from replay.errors import DuplicateResultError, MissingFactError

# Zero-shot tasks (`recorder eval --harness`) have their own writer (ZERO_SHOT_WRITER): their starts, stops
# and failures are not the benchmark's evaluations and never take part in its mllog.


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class StepMetrics:
    """A step's metrics as a small fact: where its event is, not its data (a long run has many steps). The
    data is read back when its tracked_stats line is written (`replay.source.StepData`)."""

    step: int
    samples_count: int | None
    at: Point
    segment: str
    seq: int
    event: Event | None = None  # kept when the events are in memory anyway (a list given to build_timeline)


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
    mllog_segments: tuple[str, ...]  # segments holding mllog_line events, by their first event's time
    problems: tuple[str, ...] = field(default=())
    # the training's own last block_stop (when, step), as its writer recorded it (an imported training log's)
    block_stop: tuple[Point, int] | None = None

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
    """The benchmark's evaluations as recorder.evaluations reads them (the rows that count, in the one order),
    the problems of rows that claim a score but are not one, and the steps whose evaluations all failed."""
    problems: list[str] = []
    failed: list[int] = []
    for e in ordered:
        if e.step is None or e.writer == ZERO_SHOT_WRITER:
            continue
        if e.kind == "eval_failed":
            failed.append(e.step)
        elif e.kind == "eval_result" and e.key == BENCHMARK_METRIC and benchmark_score(e) is None:
            shown = repr(e.value) if not isinstance(e.value, int) else f"an integer of {len(str(e.value))} digits"
            problems.append(
                f"run {run_id}: the '{BENCHMARK_METRIC}' result of step {e.step} ({e.segment} seq "
                f"{e.seq}) is {shown[:80]}, not a finite number in [0, 1]"
            )
    results: dict[int, Performed] = {}
    for p in performed(ordered):
        first = results.setdefault(p.step, p)
        if first is not p:
            a, b = first.result, p.result
            problems.append(
                f"run {run_id}: duplicate '{BENCHMARK_METRIC}' results for step {p.step} "
                f"({a.segment} seq {a.seq}: {a.value}; {b.segment} seq {b.seq}: {b.value}); "
                "keep one evaluation per checkpoint (move the extra evaluator segment out of events/)"
            )
    evaluations = []
    for p in results.values():
        r = p.result
        samples = r.samples_count if r.samples_count is not None else -1
        value = benchmark_score(r)
        assert value is not None  # performed() holds only well-formed results
        start, stop = p.start or r, p.stop or r
        evaluations.append(Evaluation(p.step, samples, value, _point(start), _point(r), _point(stop)))
    return evaluations, problems, sorted(set(failed) - set(results))


def build_timeline(events: Iterable[Event], *, keep_events: bool = True) -> Timeline:
    """Extract the facts of a run from its events (any order). `keep_events`: step metrics keep their event
    (a list in memory anyway); False keeps only where each is, for a run streamed from its segments."""
    builder = TimelineBuilder(keep_events=keep_events)
    for e in events:
        builder.add(e)
    return builder.build()


Key = tuple[int, str, str, int, int, str, str]
F = TypeVar("F")


def _by_key(facts: dict[int, tuple[Key, F]]) -> list[tuple[int, tuple[Key, F]]]:
    """Per-step facts in the canonical order of their events, the order a sorted list of events gives."""
    return sorted(facts.items(), key=lambda item: item[1][0])


def _key(e: Event) -> Key:
    """The canonical order's key: the facts never depend on the order events arrive in."""
    return (e.time_ns, e.writer, e.kind, e.step if e.step is not None else -1, e.seq, e.key or "", e.segment)


_FIRST_KINDS = frozenset({"run_opened", "init_start", "init_stop", "run_start", "block_start"})
_PER_STEP = frozenset({"step_metrics", "weight_update", "checkpoint_committed"})
_EVALUATION_KINDS = frozenset({"eval_start", "eval_result", "eval_stop", "eval_failed"})
_RARE_KINDS = _FIRST_KINDS | _EVALUATION_KINDS | {"mllog_config", "block_stop"}


def _owned(by_writer: dict[str, dict[int, tuple[Key, F]]], owner: str | None) -> dict[int, tuple[Key, F]]:
    """Per step, the first fact (canonical order) of the writers that record the run's timing facts."""
    out: dict[int, tuple[Key, F]] = {}
    for writer, facts in by_writer.items():
        if owner is None or not records_timing_of(writer, owner):
            continue
        for step, held in facts.items():
            if step not in out or held[0] < out[step][0]:
                out[step] = held
    return out


class TimelineBuilder:
    """Folds events, one at a time and in any order, into what derivation needs: the first of each boundary
    kind, the configuration keys, per step the first weight update, metrics and commit (by canonical order),
    the evaluations. Memory: small facts per step, never every event.

    Only facts that verify accepts take part: an event of a kind its writer may not record (the catalogue's
    `writers`) is ignored, and timing facts (run_start, weight updates, commits) are the run's own writer's
    (that of its run_opened; a run without one: the first writer that recorded any)."""

    def __init__(self, *, keep_events: bool = True) -> None:
        self.keep_events = keep_events
        self.first: dict[str, tuple[Key, Event]] = {}
        self.run_starts: dict[str, tuple[Key, Event]] = {}  # writer -> its first run_start
        self.earliest: tuple[Key, Event] | None = None  # the first event, for the run id of a run never opened
        self.configs: list[tuple[Key, Config]] = []
        self.gbs_line: tuple[Key, Any] | None = None  # the first mllog_line global_batch_size
        self.metrics: dict[int, tuple[Key, StepMetrics]] = {}
        self.updates: dict[str, dict[int, tuple[Key, Point]]] = {}  # writer -> step -> its first update
        self.checkpoints: dict[str, dict[int, tuple[Key, CheckpointSave]]] = {}
        self.evaluation_events: list[tuple[Key, Event]] = []
        self.mllog_first: dict[str, int] = {}  # segment -> time of its first mllog_line
        self.block_stops: dict[str, tuple[int, Key, Event]] = {}  # writer -> its block_stop of the highest step

    def add(self, e: Event) -> None:
        kind, step = e.kind, e.step
        if not may_write(e.writer, kind):
            return  # a fact no writer of its name records (verify: rule kind-writer)
        if step is not None and kind in _PER_STEP:
            self._per_step(e, kind, step, _key(e))
        if self.earliest is None or e.time_ns <= self.earliest[0][0]:  # a key only where it can matter
            key = _key(e)
            if self.earliest is None or key < self.earliest[0]:
                self.earliest = (key, e)
        if kind == "mllog_line":
            t = self.mllog_first.get(e.segment)
            self.mllog_first[e.segment] = e.time_ns if t is None else min(t, e.time_ns)
            if e.key == "global_batch_size" and (self.gbs_line is None or _key(e) < self.gbs_line[0]):
                self.gbs_line = (_key(e), e.value)
        if kind not in _RARE_KINDS:
            return  # the common case: a step's fact, or a kind derivation does not read
        key = _key(e)
        if kind == "run_start":
            held_s = self.run_starts.get(e.writer)
            if held_s is None or key < held_s[0]:
                self.run_starts[e.writer] = (key, e)
        elif kind in _FIRST_KINDS:
            held = self.first.get(kind)
            if held is None or key < held[0]:
                self.first[kind] = (key, e)
        if kind == "mllog_config" and e.key:
            self.configs.append((key, Config(e.key, e.value, _point(e))))
        if kind == "block_stop" and step is not None:
            held_b = self.block_stops.get(e.writer)
            if held_b is None or (step, key) > held_b[:2]:
                self.block_stops[e.writer] = (step, key, e)
        if step is not None and kind in _EVALUATION_KINDS:
            self.evaluation_events.append((key, e))

    def _per_step(self, e: Event, kind: str, step: int, key: Key) -> None:
        if kind == "step_metrics":
            held_m = self.metrics.get(step)
            if held_m is None or key < held_m[0]:
                kept = e if self.keep_events else None
                self.metrics[step] = (key, StepMetrics(step, e.samples_count, _point(e), e.segment, e.seq, kept))
        elif kind == "weight_update":
            updates = self.updates.setdefault(e.writer, {})
            held_u = updates.get(step)
            if held_u is None or key < held_u[0]:
                updates[step] = (key, _point(e))
        elif kind == "checkpoint_committed":
            checkpoints = self.checkpoints.setdefault(e.writer, {})
            held_c = checkpoints.get(step)
            if held_c is None or key < held_c[0]:
                checkpoints[step] = (key, CheckpointSave(step, _point(e), e))

    def _timing_writer(self) -> str | None:
        """Whose timing facts count: the run_opened's writer, else the writer of the earliest timing fact."""
        opened = self.first.get("run_opened")
        if opened is not None:
            return opened[1].writer
        held = [(k, e.writer) for k, e in self.run_starts.values()]
        held += [(min(k for k, _ in updates.values()), w) for w, updates in self.updates.items()]
        held += [(min(k for k, _ in commits.values()), w) for w, commits in self.checkpoints.items()]
        return min(held)[1] if held else None

    def build(self) -> Timeline:
        owner = self._timing_writer()
        starts = [held for w, held in self.run_starts.items() if owner is not None and records_timing_of(w, owner)]
        if starts:
            self.first["run_start"] = min(starts, key=lambda held: held[0])
        first = {kind: e for kind, (_, e) in self.first.items()}
        opened_event = first.get("run_opened")
        opened = kinds.RunOpened.from_event(opened_event) if opened_event else None
        configs = tuple(c for _, c in sorted(self.configs, key=lambda kc: kc[0]))
        gbs: Any = opened.global_batch_size if opened else None
        if gbs is None:
            gbs = next((c.value for c in configs if c.key == "global_batch_size"), None)
        if gbs is None and self.gbs_line is not None:  # a run recorded by the mllog drop-in holds only its lines
            gbs = self.gbs_line[1]
        # recorder.store.reader's one rule for a run's id, over the two events it can pick from
        run_id = run_id_from(e for e in (opened_event, self.earliest[1] if self.earliest else None) if e) or ""
        ordered_evaluations = [e for _, e in sorted(self.evaluation_events, key=lambda ke: ke[0])]
        evaluations, problems, failed = _evaluations(run_id, ordered_evaluations)
        bs = first.get("block_start")
        stops = [held for w, held in self.block_stops.items() if owner is not None and records_timing_of(w, owner)]
        last_stop = max(stops, key=lambda held: held[:2]) if stops else None
        return Timeline(
            run_id=run_id,
            benchmark=opened.benchmark if opened else None,
            ruleset=opened.ruleset if opened else None,
            division=opened.division if opened else None,
            global_batch_size=int(gbs) if isinstance(gbs, int) else None,
            target=recorded_target(opened),
            opened=_point(opened_event) if opened_event else None,
            configs=configs,
            init_start=_point(first["init_start"]) if "init_start" in first else None,
            init_stop=_point(first["init_stop"]) if "init_stop" in first else None,
            run_start=_point(first["run_start"]) if "run_start" in first else None,
            block_start=(_point(bs), bs.step, bs.samples_count) if bs else None,
            metrics=tuple(self.metrics[s][1] for s in sorted(self.metrics)),
            weight_updates={s: p for s, (_, p) in _by_key(_owned(self.updates, owner))},
            checkpoints={s: c for s, (_, c) in _by_key(_owned(self.checkpoints, owner))},
            evaluations=tuple(evaluations),
            failed_steps=tuple(failed),
            mllog_segments=tuple(sorted(self.mllog_first, key=lambda seg: (self.mllog_first[seg], seg))),
            problems=tuple(problems),
            block_stop=(_point(last_stop[2]), last_stop[0]) if last_stop else None,
        )
