"""One pass over a run's events: the facts derivation needs (replay.timeline) and what replay reports about
the run before deriving (resumes, its pass target, steps of the wall clock), without holding the events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from recorder.comparability import scored_with, why_not_comparable
from recorder.evaluations import benchmark_score
from recorder.rules import recorded_target
from recorder.store.events import Event
from recorder.store.kinds import EvalResult, PayloadError, RunOpened
from recorder.store.reader import TornTail, read_run
from recorder.store.segment import skipped_entries
from recorder.verify import VerifyReport
from replay.checkers.preflight import ClockStep, ClockWatch, Resume
from replay.source import EventSource, InMemory, Streamed
from replay.timeline import Timeline, TimelineBuilder


@dataclass(frozen=True)
class RunScan:
    """A run as one pass over its events found it; `source` reads them again where a line needs them."""

    source: EventSource
    timeline: Timeline
    resumed: list[Resume]
    target: float | None  # the pass target its first run_opened recorded (replay.checkers.preflight.run_target)
    clock_steps: list[ClockStep]
    imported: bool  # mllog lines and no weight update: as-recorded is its default interpretation
    opened: dict[str, Any]  # its first run_opened's data ({} when none)
    run_id: str | None  # as its events record it (recorder.store.reader.run_id_from); None when it has no events
    # each segment's last seq and digest as read: what a derived file records it was derived from
    heads: dict[str, tuple[int, str]] = field(default_factory=dict)
    # how each benchmark result was scored (recorder.comparability.scored_with), distinct settings only
    scored: tuple[Mapping[str, Any], ...] = ()
    run_opened: RunOpened | None = None  # its first run_opened, read (None when none)

    @property
    def not_comparable(self) -> str | None:
        """Why the run's verdict does not compare with MLPerf results (recorder.comparability), or None."""
        return why_not_comparable(self.run_opened, self.scored)


def scan_run(source: EventSource, *, keep_events: bool = False) -> RunScan:
    """Fold every event of `source` once. `keep_events`: step metrics keep their event (a list in memory)."""
    builder = TimelineBuilder(keep_events=keep_events)
    clock = ClockWatch()
    resumed: list[Resume] = []
    first_opened: RunOpened | None = None
    first_data: dict[str, Any] | None = None
    lines = updates = False
    heads: dict[str, tuple[int, str]] = {}
    scored: dict[str, Mapping[str, Any]] = {}
    for e in source.events():
        heads[e.segment] = (e.seq, e.digest)
        builder.add(e)
        clock.add(e)
        kind = e.kind
        if kind == "run_opened":
            opened = RunOpened.from_event(e)
            if first_opened is None:
                first_opened, first_data = opened, e.data
            if opened.resumed_from:
                resumed.append(Resume(e.segment, opened.resumed_at_step))
        elif kind == "eval_result" and benchmark_score(e) is not None:
            settings = _scored(e)
            if settings is not None:
                scored.setdefault(repr(sorted(settings.items())), settings)
        lines = lines or kind == "mllog_line"
        updates = updates or kind == "weight_update"
    target = recorded_target(first_opened)
    timeline = builder.build()
    return RunScan(
        source,
        timeline,
        resumed,
        target,
        clock.steps(),
        lines and not updates,
        first_data or {},
        timeline.run_id or None,
        heads,
        tuple(scored.values()),
        first_opened,
    )


def _scored(e: Event) -> Mapping[str, Any] | None:
    try:
        return scored_with(EvalResult.from_event(e))
    except PayloadError:  # a payload verify refuses (rule payload): its settings are unknown
        return None


def scan_verified(report: VerifyReport) -> tuple[RunScan, list[TornTail], list[str]]:
    """One pass over a run that verify has judged: streamed from its segments when intact (memory: the facts,
    not the events), else (forced past a failed verification) read whole, as far as it can be read. Also its
    torn tails and the entries of events/ that are not segment files."""
    if report.ok:
        torn = [s.torn for s in report.segments if s.torn is not None and s.torn.bytes_lost > 0]
        return scan_run(Streamed(report.run)), torn, skipped_entries(report.run.events)
    log = read_run(report.run)
    return scan_run(InMemory(log.events), keep_events=True), log.torn, log.skipped
