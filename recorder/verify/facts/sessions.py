"""The rules about when things happened and which steps a training session trained.

- time-range: a recorded (not imported) event is dated after 1970 and before 2100, and not after the
  moment verify runs (a day of slack for clocks that disagree).
- mono-order: within a segment, the monotonic clock never goes back (one writer, one process).
- step-range: a step is a count: 0 <= step < 2**31.
- one-run-opened: a run has one `run_opened` that is not a resume; each resume's names this run and
  states the same benchmark, ruleset, division, global batch size and target.
- session-steps: a trainer session's weight updates are the steps 1, 2, 3, ... (a resume: from the step
  after `resumed_at_step`), none skipped, each with its `step_metrics` (but the last one of a session
  that did not complete: a writer killed or failing between the two records only the update).
- session-overlap: two trainer sessions of one run do not overlap in time.
- train-stop-order: `train_stop` comes after its session's last weight update.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from recorder.store.events import Event
from recorder.store.kinds import RunOpened, TrainStop
from recorder.verify.findings import Findings, parsed

TRAINER_WRITER = "trainer"  # the writer of our own trainer's sessions (trainer/loop.py WRITER)
LATEST_NS = 4_102_444_800 * 10**9  # 2100-01-01 UTC
CLOCK_SLACK_NS = 86_400 * 10**9
MAX_STEP = 2**31
AGREED = ("benchmark", "ruleset", "division", "global_batch_size", "target")


def check_clocks(events: list[Event], found: Findings, now_ns: Callable[[], int] = time.time_ns) -> None:
    """Rules time-range and mono-order over events in (segment, seq) order."""
    latest = min(LATEST_NS, now_ns() + CLOCK_SLACK_NS)
    previous: Event | None = None
    for e in events:
        if not 0 <= e.time_ns < latest:
            found.fail(e, "time-range", f"{e.kind} is dated {_date(e.time_ns)}: before 1970, after 2100 or after now")
        if previous is not None and previous.segment == e.segment and e.mono_ns < previous.mono_ns:
            found.fail(
                e, "mono-order", f"{e.kind}'s monotonic clock is before that of seq {previous.seq} ({previous.kind})"
            )
        previous = e


def _date(ns: int) -> str:
    seconds = ns // 10**9
    if not -62_135_596_800 <= seconds < 253_402_300_800:  # what a calendar date can show
        return f"{ns} ns since 1970"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def check_steps(events: list[Event], found: Findings) -> None:
    """Rule step-range."""
    for e in events:
        if e.step is not None and not 0 <= e.step < MAX_STEP:
            found.fail(e, "step-range", f"{e.kind} has step {e.step}: a step is a count below 2**31")


def check_opened(events: list[Event], run_id: str, found: Findings) -> None:
    """Rule one-run-opened."""
    first: RunOpened | None = None
    for e in events:
        if e.kind != "run_opened" or (opened := parsed(RunOpened, e, found)) is None:
            continue
        if first is None:
            first = opened
            continue
        if opened.resumed_from is None:
            found.fail(e, "one-run-opened", "a second run_opened that is not a resume")
        elif opened.resumed_from != run_id:
            found.fail(e, "one-run-opened", f"a resume of run {opened.resumed_from!r} in run {run_id!r}")
        for key in AGREED:
            if getattr(opened, key) != getattr(first, key):
                found.fail(e, "one-run-opened", f"{key} {getattr(opened, key)!r}, the run's {getattr(first, key)!r}")
                break


@dataclass
class _Session:
    """One trainer segment's facts the rules read."""

    events: list[Event]

    @property
    def start(self) -> int:
        return min(e.time_ns for e in self.events)

    @property
    def end(self) -> int:
        return max(e.time_ns for e in self.events)


def check_sessions(events: list[Event], found: Findings) -> None:
    """Rules session-steps, session-overlap and train-stop-order over the trainer's segments."""
    by_segment: dict[str, list[Event]] = {}
    for e in events:
        if e.writer == TRAINER_WRITER:
            by_segment.setdefault(e.segment, []).append(e)
    sessions = sorted((_Session(evs) for evs in by_segment.values()), key=lambda s: s.start)
    for before, after in zip(sessions, sessions[1:], strict=False):
        if after.start < before.end:
            e = after.events[0]
            found.fail(e, "session-overlap", f"this session starts before {before.events[0].segment} ended")
    for session in sessions:
        _check_session(session.events, found)


def _check_session(events: list[Event], found: Findings) -> None:
    opened = next((e for e in events if e.kind == "run_opened"), None)
    data = parsed(RunOpened, opened, found) if opened is not None else None
    expected = (data.resumed_at_step or 0) + 1 if data is not None and data.resumed_from is not None else 1
    metrics = {e.step for e in events if e.kind == "step_metrics"}
    updates = [e for e in events if e.kind == "weight_update"]
    stops = [d for e in events if e.kind == "train_stop" and (d := parsed(TrainStop, e, found)) is not None]
    if updates and not any(d.status == "completed" for d in stops):
        metrics.add(updates[-1].step)  # killed, or failed, between the update and its metrics
    last: Event | None = None
    for e in events:
        if e.kind == "weight_update" and e.step is not None:
            if e.step != expected and (last is None or e.step != last.step):  # a repeat: one-update-per-step
                found.fail(
                    e, "session-steps", f"weight_update of step {e.step}, where the session is at step {expected}"
                )
            elif e.step not in metrics:
                found.fail(e, "session-steps", f"weight_update of step {e.step} without its step_metrics")
            expected, last = e.step + 1, e
        elif e.kind == "train_stop" and last is not None and e.time_ns < last.time_ns:
            found.fail(e, "train-stop-order", f"train_stop is dated before step {last.step}'s weight_update")
