"""What verify saw of one segment: the byte layer's summary, which the trust rules read."""

from __future__ import annotations

from dataclasses import dataclass

from recorder.reader import TornTail


@dataclass
class SegmentSummary:
    """One segment as verify saw it. `signed_by`: the public key (hex) whose signature of the closing record
    verified; `opened_with`: the key its segment_opened recorded (also when the writer did not close)."""

    name: str
    events: int
    closed: bool
    torn: TornTail | None
    signed_by: str | None = None
    opened_with: str | None = None
    digest: str | None = None  # the last event's digest (hex): what the signed-segments manifest lists
