"""What replay checks about a run before deriving from it: is it intact, was it resumed, did the clock jump.

A derived mllog is evidence only if the events it comes from are: replay refuses a run that fails
`verify_run` unless forced, and then the output says so where nobody can miss it (file name, printed
line, scores row). A resumed run keeps its history but is not a valid timed MLPerf run; nor is a run whose
pass target is not the ruleset's (it is judged by its own target, and marked NOT COMPARABLE). A wall clock that
steps backwards is reported with the seq and the size of the step (mono_ns gives the real order).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recorder.events import Event
from recorder.history.cache import verify_with_cache
from recorder.kinds import RunOpened
from recorder.rules import not_comparable, recorded_target
from recorder.run import RunDir
from replay.errors import UnverifiedRunError

UNVERIFIED = "UNVERIFIED"
RESUMED = "RESUMED"
NOT_COMPARABLE = "NOT COMPARABLE"


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
    report = verify_with_cache(run_dir, keep_events=keep_events)
    problems = [str(p) for p in report.problems]
    if problems and not force:
        shown = "; ".join(problems[:3]) + (f"; ... and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise UnverifiedRunError(
            f"{report.run.path} fails verification ({shown}); replay derives only from intact runs. Run "
            f"`recorder verify {report.run.path}` for the details, or pass --force to derive anyway (the output "
            f"is then marked {UNVERIFIED})."
        )
    return problems, report.events


def resumes(events: list[Event]) -> list[Resume]:
    """Every training session that continued a run from a checkpoint (run_opened.data.resumed_from set)."""
    out = []
    for e in events:
        if e.kind == "run_opened" and (opened := RunOpened.from_event(e)).resumed_from:
            out.append(Resume(e.segment, opened.resumed_at_step))
    return out


def run_target(events: list[Event]) -> float | None:
    """The pass target the run recorded (its first run_opened), or None when it recorded none."""
    return recorded_target(next((e.data for e in events if e.kind == "run_opened"), None))


def clock_steps(events: list[Event]) -> list[ClockStep]:
    """Backward steps of the wall clock within each segment (events in seq order).

    A writer may stamp an event with an earlier, explicit time (a weight update taken before its append),
    and an asynchronous commit may land between two loop events: one out-of-order stamp is not a step. The
    clock stepped back when an event is earlier than the two before it and the next event is still earlier
    than the one before it (the clock stayed behind).
    """
    by_segment: dict[str, list[Event]] = {}
    for e in events:
        by_segment.setdefault(e.segment, []).append(e)
    out = []
    for name, evs in sorted(by_segment.items()):
        evs.sort(key=lambda x: x.seq)
        for before, prev, cur, nxt in zip(evs, evs[1:], evs[2:], evs[3:], strict=False):
            if (
                cur.time_ns < min(prev.time_ns, before.time_ns)
                and nxt.time_ns < prev.time_ns
                and cur.mono_ns >= prev.mono_ns
            ):
                out.append(ClockStep(name, cur.seq, prev.time_ns - cur.time_ns))
    return out


def mark_rows(
    rows: list[dict[str, Any]], *, unverified: list[str], resumed: list[Resume], target: float | None = None
) -> list[dict[str, Any]]:
    """Scores rows carrying the run's trust marks: extra fields, and the reason prefixed to `why` (which the
    history's scores view shows). `target`: the run's recorded pass target."""
    marks = []
    if unverified:
        marks.append(f"{UNVERIFIED} (derived with --force from a run that fails verification: {unverified[0]})")
    if resumed:
        marks.append(f"{RESUMED} ({'; '.join(map(str, resumed))}): not a valid timed MLPerf run")
    why_not = not_comparable(target)
    if why_not is not None:
        marks.append(f"{NOT_COMPARABLE} ({why_not})")
    if not marks:
        return rows
    prefix = "; ".join(marks)
    return [
        r
        | {"verified": not unverified, "resumed": bool(resumed), "why": f"{prefix}. {r.get('why') or ''}".rstrip(". ")}
        for r in rows
    ]
