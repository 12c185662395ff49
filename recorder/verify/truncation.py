"""A trainer segment that lost its end after a later segment relied on it: named once, as truncated at its
first missing seq, rather than blaming the later segment for what the truncation took away.

An evaluator only evaluates a committed checkpoint of a run whose training stopped: an evaluation of a step
whose `checkpoint_committed` the run no longer holds, or of a run with no `train_stop` left, while a trainer
segment ends without its closing record, says that segment once held those events. A killed trainer leaves an
open segment too, but nothing evaluates what it never recorded.
"""

from __future__ import annotations

from collections.abc import Sequence

from recorder.store.events import Event
from recorder.store.segment import parse_segment_name
from recorder.verify.problem import Problem
from recorder.verify.summary import SegmentSummary

TRUNCATED_RULE = "truncated-segment"
# What an evaluation is blamed for when the trainer events it relied on are gone.
_CONSEQUENCES = frozenset({"eval-names-commit", "eval-after-train-stop"})


def explain_truncation(
    segments: Sequence[SegmentSummary], problems: list[Problem], events: list[Event]
) -> list[Problem]:
    """`problems` with an evaluation's missing commit or train_stop charged to the open trainer segment that
    lost them: one `truncated-segment` problem at its first missing seq replaces the evaluations' problems."""
    open_trainers = [s for s in segments if not s.closed and _writer(s.name) == "trainer"]
    if not open_trainers:
        return problems
    committed = {e.step for e in events if e.kind == "checkpoint_committed"}
    stopped = any(e.kind == "train_stop" for e in events)
    relied = [e for e in events if e.kind == "eval_start" and (e.step not in committed or not stopped)]
    if not relied:
        return problems
    cut = max(open_trainers, key=lambda s: _number(s.name))
    first = min(relied, key=lambda e: e.time_ns)
    lost = "its checkpoint_committed" if first.step not in committed else "the run's train_stop"
    torn = f" and a torn tail at byte {cut.torn.offset}" if cut.torn is not None else ""
    message = (
        f"truncated: it ends at seq {cut.events - 1} with no closing record{torn}, yet {first.segment} seq "
        f"{first.seq}, written later, evaluates step {first.step}, and {lost} is gone: events after seq "
        f"{cut.events - 1} were lost after they were written (restore the segment from a copy)"
    )
    blamed = {(e.segment, e.seq) for e in relied}
    kept = [p for p in problems if not (p.rule in _CONSEQUENCES and (p.segment, p.seq) in blamed)]
    return [Problem(cut.name, cut.events, message, TRUNCATED_RULE), *kept]


def _writer(name: str) -> str | None:
    parsed = parse_segment_name(name)
    return parsed[0] if parsed is not None else None


def _number(name: str) -> int:
    parsed = parse_segment_name(name)
    return parsed[1] if parsed is not None else 0
