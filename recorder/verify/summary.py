"""What verify saw of one segment: the byte layer's summary, which the trust rules read."""

from __future__ import annotations

from dataclasses import dataclass

from recorder.store.reader import TornTail


@dataclass(frozen=True)
class SignedPoint:
    """Where a signed segment's last verified chain_signed record ends: the events it vouches for (itself
    included), its digest (hex), and the segment's size in bytes up to its end."""

    events: int
    digest: str
    size: int


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
    head: str = ""  # the chain's digest so far (genesis when empty), and the file's size before it was read
    size: int = -1  # (-1: read whole); derived/state.json records both for a closed run
    signed_point: SignedPoint | None = None  # its last chain_signed that verified (None: it has none)
