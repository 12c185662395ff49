"""A signed writer that resumes a run adopts the segments its killed predecessor left open.

A writer killed with SIGKILL writes no closing record, so its segment is unsigned (and may end in a torn
tail): under the run's trust it would fail every verdict. The resuming writer, holding the same key, lists
each such segment in the signed manifest (recorder.signed_segments) as adopted, with its complete events, their
last digest and the file's size. Verify then accepts exactly those bytes (`adopted-segment`): an event
appended, altered or cut after adoption, or the segment closed later, is refused.

An adopted segment stays open on disk (a writer never reopens a segment), but it is not live: compaction
and the history (`recorder.signed_segments.adopted_segments`) treat it as finished.

Only segments of the resuming writer's own name, opened with its own key (or killed before they recorded
an event), and not listed already, are adopted: a segment listed once is never listed again, so adoption
cannot launder a change made after it.
"""

from __future__ import annotations

from collections.abc import Iterable

from recorder.reader import recorded_run_id
from recorder.run import RunDir
from recorder.segment import parse_segment_name
from recorder.signed_segments import Entry, read_manifest, record_signed_segment
from recorder.signing import Signer
from recorder.verify.summary import SegmentSummary


def adoptable(run: RunDir, segments: Iterable[SegmentSummary], writer: str, public_key: str) -> list[SegmentSummary]:
    """The segments of `writer` left open by a killed writer with `public_key`, not listed in the manifest
    yet (a damaged manifest lists nothing: verify reports it)."""
    listed = read_manifest(run)
    names = set(listed.segments) if listed is not None else set()
    out = []
    for s in segments:
        parsed = parse_segment_name(s.name)
        if parsed is None or parsed[0] != writer or s.closed or s.name in names:
            continue
        if s.opened_with == public_key or (s.opened_with is None and s.events == 0):
            out.append(s)
    return out


def adopt(run: RunDir, signer: Signer, segments: Iterable[SegmentSummary]) -> None:
    """List each segment in the run's signed manifest as adopted, exactly as verify read it."""
    run_id = recorded_run_id(run)
    for s in segments:
        if s.size < 0:
            raise ValueError(f"{s.name}: its size was not read, so it cannot be adopted")
        entry = Entry(events=s.events, digest=s.digest or "", adopted_bytes=s.size)
        record_signed_segment(run, run_id, signer, s.name, entry)
