"""One pass over a run's events: the facts derivation needs (replay.timeline) and what replay reports about
the run before deriving (resumes, its pass target, steps of the wall clock), without holding the events."""

from __future__ import annotations

from dataclasses import dataclass

from recorder.kinds import RunOpened
from recorder.rules import recorded_target
from replay.source import EventSource
from replay.timeline import Timeline, TimelineBuilder
from replay.trust import ClockStep, ClockWatch, Resume


@dataclass(frozen=True)
class RunScan:
    """A run as one pass over its events found it; `source` reads them again where a line needs them."""

    source: EventSource
    timeline: Timeline
    resumed: list[Resume]
    target: float | None  # the pass target its first run_opened recorded (replay.trust.run_target)
    clock_steps: list[ClockStep]
    imported: bool  # mllog lines and no weight update: as-recorded is its default interpretation


def scan_run(source: EventSource, *, keep_events: bool = False) -> RunScan:
    """Fold every event of `source` once. `keep_events`: step metrics keep their event (a list in memory)."""
    builder = TimelineBuilder(keep_events=keep_events)
    clock = ClockWatch()
    resumed: list[Resume] = []
    first_opened: dict[str, object] | None = None
    lines = updates = False
    for e in source.events():
        builder.add(e)
        clock.add(e)
        kind = e.kind
        if kind == "run_opened":
            if first_opened is None:
                first_opened = e.data
            if (opened := RunOpened.from_event(e)).resumed_from:
                resumed.append(Resume(e.segment, opened.resumed_at_step))
        lines = lines or kind == "mllog_line"
        updates = updates or kind == "weight_update"
    target = recorded_target(first_opened)
    return RunScan(source, builder.build(), resumed, target, clock.steps(), lines and not updates)
