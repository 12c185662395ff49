"""A signed writer that resumes a run adopts the segments its killed predecessor left open, up to what that
predecessor signed.

A writer killed with SIGKILL writes no closing record, so its segment is unsigned at its end (and may end in
a torn tail): under the run's trust it would fail every verdict. But a signed writer signs as it goes: at
each fsync it appends a `chain_signed` record, its key's signature of the chain so far (recorder.signing).
What the segment holds up to its last verified `chain_signed` is therefore what the key holder wrote; what
follows it (the events of the last group commit's window, a torn write, or anything written into the file
after the writer died) is vouched for by no one.

The resuming writer, holding the same key, adopts exactly that signed prefix: it copies every byte past it
to `<run>/.unsigned-tail-<segment>` (kept for inspection, never read as events), cuts the segment back to the
prefix, and lists it in the signed manifest (recorder.store.signed_segments) as adopted, with its events, the last
one's digest and its size. Verify then accepts exactly those bytes (`adopted-segment`), and only when they
end at the dead writer's own signature: an event appended, altered or cut after adoption, the segment closed
later, or a prefix its writer never signed, is refused. An event rewritten before the last `chain_signed`
(the chain recomputed) breaks that record's signature (`signature`), so verify refuses the killed run, and
the resume refuses to adopt it.

An adopted segment stays open on disk (a writer never reopens a segment), but it is not live: compaction
and the history (`recorder.store.signed_segments.adopted_segments`) treat it as finished.

Only segments of the resuming writer's own name, opened with its own key (or killed before they recorded
an event), and not listed already, are adopted: a segment listed once is never listed again, so adoption
cannot launder a change made after it.

What it cannot catch: a segment cut back to an earlier `chain_signed` before the resume (a rollback of the
killed session's last events to a state its writer genuinely signed).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from recorder.signing import Signer
from recorder.store.events import arrow_schema
from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir
from recorder.store.segment import parse_segment_name, schema_message
from recorder.store.signed_segments import Entry, read_manifest, record_signed_segment
from recorder.verify.summary import SegmentSummary, SignedPoint

TAIL_PREFIX = ".unsigned-tail-"
_COPY_CHUNK = 1 << 20


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


def signed_prefix(s: SegmentSummary) -> SignedPoint:
    """What of an open segment its writer signed: up to its last verified chain_signed record; with none,
    no event (the schema message alone, or what a crash at creation left of it)."""
    if s.signed_point is not None:
        return s.signed_point
    return SignedPoint(0, "", min(s.size, len(schema_message(arrow_schema()))))


def adopt(run: RunDir, signer: Signer, segments: Iterable[SegmentSummary]) -> list[Path]:
    """Adopt each segment's signed prefix: its unsigned tail set aside, the prefix listed in the run's signed
    manifest as adopted. Returns the files the tails were copied to (none for a segment that ends signed).

    The order survives a crash at any point: the tail is copied (and made durable) before the segment is cut,
    and the segment is cut before it is listed, so a resume that dies midway leaves a segment that the next
    resume adopts again, never one listed with bytes it does not hold."""
    run_id = recorded_run_id(run)
    tails = []
    for s in segments:
        if s.size < 0:
            raise ValueError(f"{s.name}: its size was not read, so it cannot be adopted")
        point = signed_prefix(s)
        if s.size > point.size:
            tails.append(_set_aside_tail(run, s.name, point.size))
        entry = Entry(events=point.events, digest=point.digest, adopted_bytes=point.size)
        record_signed_segment(run, run_id, signer, s.name, entry)
    return tails


def _set_aside_tail(run: RunDir, name: str, keep: int) -> Path:
    """Copy the bytes of `events/<name>` past `keep` beside the run, then cut the segment to `keep` bytes."""
    segment = run.events / name
    target = run.path / f"{TAIL_PREFIX}{name}"
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(segment, os.O_RDWR | os.O_NOFOLLOW)  # verify read it as a regular file; never a link now
    with os.fdopen(fd, "r+b") as source, open(tmp, "xb") as out:
        source.seek(keep)
        while chunk := source.read(_COPY_CHUNK):
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
        os.replace(tmp, target)
        source.truncate(keep)
        os.fsync(source.fileno())
    return target
