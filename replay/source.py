"""Where derivation reads events from: a list already in memory, or a run's segments streamed a chunk at a
time. Derivation folds the events into small facts (replay.timeline), then reads back only what a line
needs, when it writes that line: a step's metrics, an imported log's lines."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from recorder.store.events import Event
from recorder.store.reader import stream_events, stream_run
from recorder.store.run import RunDir
from replay.errors import MissingFactError
from replay.timeline import StepMetrics


class EventSource(Protocol):
    """A run's events, readable more than once."""

    def events(self) -> Iterator[Event]:
        """Every event, in the order `recorder.store.reader.read_run` gives them."""
        ...

    def segment_events(self, segment: str, kind: str) -> Iterator[Event]:
        """One segment's events of one kind, in seq order."""
        ...


@dataclass(frozen=True)
class InMemory:
    """Events already read (a list from `read_run`, a test, a bench)."""

    items: Sequence[Event]

    def events(self) -> Iterator[Event]:
        return iter(self.items)

    def segment_events(self, segment: str, kind: str) -> Iterator[Event]:
        return iter(sorted((e for e in self.items if e.segment == segment and e.kind == kind), key=lambda e: e.seq))


@dataclass(frozen=True)
class Streamed:
    """An intact run read from its segments, a chunk at a time, each time it is asked (memory: a chunk per
    segment, not the run)."""

    run: RunDir

    def events(self) -> Iterator[Event]:
        return stream_run(self.run)

    def segment_events(self, segment: str, kind: str) -> Iterator[Event]:
        return (e for e in stream_events(self.run.events / segment) if e.kind == kind)


@dataclass
class StepData:
    """Each step's metrics data, read back when its tracked_stats line is written: from the kept event, else
    by segment and seq through one forward cursor per segment (re-opened only if an earlier seq is asked
    for: steps come in ascending order, and a segment records them so)."""

    source: EventSource
    _cursors: dict[str, tuple[Iterator[Event], Event | None]] = field(default_factory=dict)

    def __call__(self, m: StepMetrics) -> dict[str, Any]:
        if m.event is not None:
            return m.event.data
        cursor, last = self._cursors.get(m.segment, (None, None))
        if cursor is None or (last is not None and last.seq > m.seq):
            cursor, last = self.source.segment_events(m.segment, "step_metrics"), None
        if last is not None and last.seq == m.seq:
            return last.data
        for e in cursor:
            if e.seq >= m.seq:
                self._cursors[m.segment] = (cursor, e)
                if e.seq == m.seq:
                    return e.data
                break
        raise MissingFactError(
            f"{m.segment} seq {m.seq}: step {m.step}'s step_metrics is no longer there: the segment changed "
            "while it was replayed; replay again"
        )
