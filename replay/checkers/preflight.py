"""What replay checks about a run before deriving from it: is it intact, was it resumed, did the clock jump.

A derived mllog is evidence only if the events it comes from are: replay refuses a run that fails
`verify_run` unless forced, and then the output says so where nobody can miss it (file name, printed
line, scores row). A resumed run keeps its history but is not a valid timed MLPerf run; nor is a run whose
pass target is not the ruleset's (it is judged by its own target, and marked NOT COMPARABLE). A wall clock that
steps backwards is reported with the seq and the size of the step (mono_ns gives the real order).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.comparability import NOT_COMPARABLE
from recorder.rules import recorded_target
from recorder.store.events import Event
from recorder.store.kinds import RunOpened
from recorder.store.run import RunDir
from recorder.verify import VerifyReport, verify_run
from replay.errors import UnverifiedRunError

UNVERIFIED = "UNVERIFIED"
UNTRUSTED = "UNTRUSTED"
RESUMED = "RESUMED"


@dataclass(frozen=True)
class Resume:
    """One resumed training session: which segment, from which committed step."""

    segment: str
    from_step: int | None

    def __str__(self) -> str:
        return f"{self.segment} resumed after step {self.from_step}"


@dataclass(frozen=True)
class ClockStep:
    """The wall clock went back between two consecutive events of one writer session."""

    segment: str
    seq: int
    back_ns: int

    def __str__(self) -> str:
        return (
            f"{self.segment} seq {self.seq}: the wall clock stepped back {self.back_ns / 1e9:.3f} s "
            f"(mono_ns keeps the real order; time_ns of later events is as the machine reported it)"
        )


def require_verified(run_dir: Path | str | RunDir, force: bool) -> list[str]:
    """The run's verification problems: empty when intact; raises UnverifiedRunError unless `force`."""
    return verified_events(run_dir, force, keep_events=False)[0]


def verified_events(
    run_dir: Path | str | RunDir, force: bool, *, keep_events: bool = True
) -> tuple[list[str], list[Event] | None]:
    """`require_verified`, and the events verify read when the run is intact (None otherwise: read them)."""
    problems, report = verified(run_dir, force, keep_events=keep_events)
    return problems, report.events


def verified(run_dir: Path | str | RunDir, force: bool, *, keep_events: bool = False) -> tuple[list[str], VerifyReport]:
    """`require_verified`, and verify's report (its segments' torn tails; intact: `report.ok`)."""
    report = verify_run(run_dir, keep_events=keep_events)
    problems = [str(p) for p in report.problems]
    if problems and not force:
        shown = "; ".join(problems[:3]) + (f"; ... and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise UnverifiedRunError(
            f"{report.run.path} fails verification ({shown}); replay derives only from intact runs. Run "
            f"`recorder verify {report.run.path}` for the details, or pass --force to derive anyway (the output "
            f"is then marked {UNVERIFIED})."
            + (
                " A signed run's trust problems alone can be judged past with --untrusted-ok."
                if _trust_only(report)
                else ""
            )
        )
    return problems, report


def _trust_only(report: VerifyReport) -> bool:
    from recorder.verify.trust import TRUST_RULES

    return all(p.rule in TRUST_RULES for p in report.problems)


def resumes(events: list[Event]) -> list[Resume]:
    """Every training session that continued a run from a checkpoint (run_opened.data.resumed_from set)."""
    out = []
    for e in events:
        if e.kind == "run_opened" and (opened := RunOpened.from_event(e)).resumed_from:
            out.append(Resume(e.segment, opened.resumed_at_step))
    return out


def run_target(events: list[Event]) -> float | None:
    """The pass target the run recorded (its first run_opened), or None when it recorded none."""
    return recorded_target(next((RunOpened.from_event(e) for e in events if e.kind == "run_opened"), None))


def clock_steps(events: Iterable[Event]) -> list[ClockStep]:
    """Backward steps of the wall clock within each segment (each segment's events in seq order, as
    `read_run` and `stream_run` give them).

    A writer may stamp an event with an earlier, explicit time (a weight update taken before its append),
    and an asynchronous commit may land between two loop events: one out-of-order stamp is not a step. The
    clock stepped back when an event is earlier than the two before it and the next event is still earlier
    than the one before it (the clock stayed behind).
    """
    watch = ClockWatch()
    for e in events:
        watch.add(e)
    return watch.steps()


class ClockWatch:
    """`clock_steps` one event at a time: per segment, the last three events' times (memory: a window)."""

    def __init__(self) -> None:
        self._windows: dict[str, deque[tuple[int, int, int]]] = {}  # segment -> (seq, time_ns, mono_ns)
        self._found: list[ClockStep] = []

    def add(self, e: Event) -> None:
        window = self._windows.setdefault(e.segment, deque(maxlen=3))
        if len(window) == 3:  # window: before, prev, cur; e is the next
            (_, before_t, _), (_, prev_t, prev_m), (cur_seq, cur_t, cur_m) = window
            if cur_t < min(prev_t, before_t) and e.time_ns < prev_t and cur_m >= prev_m:
                self._found.append(ClockStep(e.segment, cur_seq, prev_t - cur_t))
        window.append((e.seq, e.time_ns, e.mono_ns))

    def steps(self) -> list[ClockStep]:
        return sorted(self._found, key=lambda c: c.segment)  # stable: each segment's in seq order


def mark_rows(
    rows: list[dict[str, Any]],
    *,
    unverified: list[str],
    resumed: list[Resume],
    not_comparable: str | None = None,
    untrusted: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Scores rows carrying the run's trust marks: extra fields, and the reason prefixed to `why` (which the
    history's scores view shows). `not_comparable`: why the run does not compare with MLPerf results
    (recorder.comparability); `untrusted`: the trust problems judged past with --untrusted-ok."""
    marks = []
    if untrusted:
        marks.append(f"{UNTRUSTED} (judged with --untrusted-ok: {untrusted[0]})")
    if unverified:
        marks.append(f"{UNVERIFIED} (derived with --force from a run that fails verification: {unverified[0]})")
    if resumed:
        marks.append(f"{RESUMED} ({'; '.join(map(str, resumed))}): not a valid timed MLPerf run")
    if not_comparable is not None:
        marks.append(f"{NOT_COMPARABLE} ({not_comparable})")
    if not marks:
        return rows
    prefix = "; ".join(marks)
    return [
        r
        | {
            "verified": not unverified and not untrusted,
            "resumed": bool(resumed),
            "why": f"{prefix}. {r.get('why') or ''}".rstrip(". "),
        }
        for r in rows
    ]
