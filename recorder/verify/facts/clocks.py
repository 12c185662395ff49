"""The rules that hold the wall clock to the monotonic one within a segment (one writer, one process).

The score is read from wall-clock times (`time_ns`); the monotonic clock (`mono_ns`) of the same process
cannot be set. A writer stamps both as it appends, so within a segment they advance together:

- wall-order: an event is not dated before an earlier event of its segment (seq order). Checkpoint
  commits are recorded by the trainer's background thread when durable, off the loop's order: their times
  are held by rule save-window instead (weight update <= save <= commit); segment_opened/segment_closed
  carry no fact the score reads.
- clock-agreement: since any earlier event of its segment, the wall clock has not fallen behind the
  monotonic clock: wall times compressed, or dated back, while the monotonic clock ran on, are refused.

Tolerance (CLOCK_TOLERANCE_NS + CLOCK_RATE of the monotonic time elapsed): 0.5 s for a step of the wall
clock (NTP steps an offset above 128 ms) and for an event stamped before it was appended (a weight update
waits for the log's lock), plus 0.1 %, twice the 500 ppm at most that NTP slews a clock. A wall clock that
runs ahead of the monotonic one is not refused: it can only make a run slower (and builders of synthetic
runs date events ahead of the machine). Both rules hold for our writers only: an import's times are its
log's.
"""

from __future__ import annotations

import re

from recorder.store.events import Event
from recorder.verify.findings import Findings

OUR_WRITERS = re.compile(r"trainer|trainer-rank[0-9]+|evaluator|harness")
CLOCK_TOLERANCE_NS = 500_000_000
CLOCK_RATE = 0.001
UNSTAMPED = frozenset({"segment_opened", "segment_closed", "checkpoint_committed"})


def check_wall_clock(events: list[Event], found: Findings) -> None:
    """Rules wall-order and clock-agreement over events in (segment, seq) order; one problem per segment."""
    segment = ""
    latest: Event | None = None  # the latest-dated reference event so far in the segment
    ahead: Event | None = None  # the reference whose wall clock was furthest ahead of its monotonic one
    failed = False
    for e in events:
        if e.segment != segment:
            segment, latest, ahead, failed = e.segment, None, None, False
        if failed or not OUR_WRITERS.fullmatch(e.writer) or e.kind in UNSTAMPED:
            continue
        if latest is not None and e.time_ns < latest.time_ns - CLOCK_TOLERANCE_NS:
            back = (latest.time_ns - e.time_ns) / 1e9
            found.fail(e, "wall-order", f"{e.kind} is dated {back:.3f} s before seq {latest.seq} ({latest.kind})")
            failed = True
            continue
        if ahead is not None:
            elapsed = e.mono_ns - ahead.mono_ns
            behind = elapsed - (e.time_ns - ahead.time_ns)
            if behind > CLOCK_TOLERANCE_NS + CLOCK_RATE * max(elapsed, 0):
                found.fail(
                    e,
                    "clock-agreement",
                    f"since seq {ahead.seq} ({ahead.kind}) the monotonic clock advanced {elapsed / 1e9:.3f} s, the "
                    f"wall clock {(e.time_ns - ahead.time_ns) / 1e9:.3f} s: wall times compressed or moved back",
                )
                failed = True
                continue
        if latest is None or e.time_ns > latest.time_ns:
            latest = e
        if ahead is None or e.time_ns - e.mono_ns > ahead.time_ns - ahead.mono_ns:
            ahead = e
