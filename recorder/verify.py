"""`recorder verify`: schema, seq contiguity, digest chains, closing records, torn tails; then the facts.

Segments are streamed one message at a time, so memory stays bounded by the largest event, not the
segment. A segment the stream cannot read cleanly to its end (torn, damaged) is read whole by
`read_segment`, which locates the damage. When every segment is intact, `recorder.semantics` checks that
the timeline is possible and the evidence matches.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from recorder.catalogue import catalogue
from recorder.errors import NewerSchemaError, SegmentError
from recorder.events import GENESIS_DIGEST, Event, arrow_schema, canonical_bytes, chain_digest
from recorder.problem import Problem
from recorder.reader import ARROW_ERRORS, Segment, TornTail, event_from_row, read_segment, stream_events
from recorder.regular import read_regular
from recorder.run import RunDir
from recorder.segment import (
    END_OF_STREAM,
    SEGMENT_SUFFIX,
    list_segments,
    parse_segment_name,
    row_encoder,
    schema_message,
    skipped_entries,
)
from recorder.semantics import KINDS, check_facts

__all__ = ["Problem", "SegmentSummary", "VerifyReport", "check_segment", "verify_run"]


@dataclass
class SegmentSummary:
    name: str
    events: int
    closed: bool
    torn: TornTail | None


@dataclass
class VerifyReport:
    run: RunDir
    segments: list[SegmentSummary] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def torn(self) -> list[TornTail]:
        return [s.torn for s in self.segments if s.torn is not None]


class _Chain:
    """The byte-level checks of one segment, event by event: seq, writer, run id, kind, digest, encoding."""

    def __init__(self, name: str, writer: str, run_id: str | None) -> None:
        self.name, self.writer, self.run_id = name, writer, run_id
        self.previous = GENESIS_DIGEST
        self.kinds = catalogue()
        self.encoder = row_encoder()
        self.closing: int | None = None  # seq of a segment_closed seen

    def row(self, i: int, row: tuple[Any, ...], raw: bytes) -> Problem | None:
        name = self.name
        seq, writer, run_id, kind = row[2], row[1], row[0], row[5]
        if seq != i:
            return Problem(name, i, f"found seq {seq} at position {i}: an event was deleted or reordered")
        if writer != self.writer:
            return Problem(name, i, f"writer {writer!r} in a segment of writer {self.writer!r}")
        if self.run_id is not None and run_id != self.run_id:
            return Problem(name, i, f"run_id {run_id!r}, but this run's other events say {self.run_id!r}")
        if kind not in self.kinds:
            return Problem(name, i, f"unknown kind {kind!r}")
        if self.closing is not None:
            return Problem(name, self.closing, "segment_closed is not the last event: events were added after close")
        digest = chain_digest(self.previous, canonical_bytes(*row[:-1]))
        if digest.hex() != row[-1]:
            return Problem(name, i, "digest mismatch: the event was altered (or an earlier one was removed)")
        self.previous = digest
        if raw != self.encoder.encode(row):
            return Problem(name, i, "the event's bytes differ from its encoding: the segment was altered")
        if kind == "segment_closed":
            self.closing = i
        return None

    def closed(self, n: int, last: tuple[Any, ...] | None) -> Problem | None:
        """A closed segment must end with its segment_closed record, counting the events before it."""
        if last is None or last[5] != "segment_closed" or json.loads(last[10]).get("events") != n - 1:
            return Problem(self.name, n, "closed segment without its segment_closed record: its last event was removed")
        return None


def check_segment(segment: Segment, run_id: str | None) -> list[Problem]:
    """Problems in one segment read whole (the path for damaged or torn segments); empty when intact."""
    cols = segment.table.to_pydict()
    name = segment.name
    raw = read_regular(segment.path)
    schema = schema_message(arrow_schema())
    if not (raw.startswith(schema) or schema.startswith(raw)):  # a crash at creation leaves a prefix
        return [Problem(name, 0, "the schema message differs from the event schema's encoding")]
    chain = _Chain(name, segment.writer, run_id)
    n = segment.table.num_rows
    rows = list(zip(*(cols[c] for c in cols), strict=True)) if n else []
    for i, row in enumerate(rows):
        problem = chain.row(i, row, raw[segment.offsets[i] : segment.offsets[i + 1]])
        if problem is not None:
            return [problem]
    if not segment.closed and n and cols["kind"][n - 1] == "segment_closed":
        if not END_OF_STREAM.startswith(raw[segment.offsets[-1] :]):  # a crash mid-close leaves a prefix
            return [Problem(name, n, "bytes after the closing record are not the end-of-stream marker")]
    if segment.closed:
        problem = chain.closed(n, rows[-1] if rows else None)
        if problem is not None:
            return [problem]
    return []


@dataclass
class _Streamed:
    summary: SegmentSummary
    problems: list[Problem]
    kept: list[Event]


def _stream_segment(path: Path, run_id: str | None) -> _Streamed | None:
    """Check a segment one message at a time; None when it does not read cleanly to its end (then the
    whole-file path locates the damage or the torn tail)."""
    parsed = parse_segment_name(path.name)
    if parsed is None:
        return None
    schema = schema_message(arrow_schema())
    chain = _Chain(path.name, parsed[0], run_id)
    kept: list[Event] = []
    last: tuple[Any, ...] | None = None
    n = 0
    with open(path, "rb") as raw, pa.OSFile(str(path)) as source:
        fd = raw.fileno()
        size = os.fstat(fd).st_size
        if os.pread(fd, len(schema), 0) != schema:
            return None
        try:
            reader = pa.ipc.open_stream(source)
            if reader.schema.metadata != arrow_schema().metadata or not reader.schema.equals(arrow_schema()):
                return None
            start = source.tell()
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                batch.validate(full=True)
                end = source.tell()
                if batch.num_rows != 1:
                    return None
                row = tuple(batch.column(i)[0].as_py() for i in range(batch.num_columns))
                problem = chain.row(n, row, os.pread(fd, end - start, start))
                if problem is not None:
                    return _Streamed(SegmentSummary(path.name, n, False, None), [problem], kept)
                if row[5] in KINDS:
                    kept.append(event_from_row(row, path.name))
                last, start, n = row, end, n + 1
        except (*ARROW_ERRORS, pa.ArrowMemoryError):  # a damaged length can ask for any allocation
            return None
        tail = os.pread(fd, 16, start)
    if tail == END_OF_STREAM and size == start + len(END_OF_STREAM):
        problem = chain.closed(n, last)
        return _Streamed(SegmentSummary(path.name, n, True, None), [problem] if problem else [], kept)
    if size == start and (last is None or last[5] != "segment_closed"):
        return _Streamed(SegmentSummary(path.name, n, False, None), [], kept)
    return None


def verify_run(path: Path | str | RunDir, *, facts: bool = True) -> VerifyReport:
    """Check every segment of a run, then (when `facts` and the bytes are intact) what the events mean.

    Raises NotARunError/NewerSchemaError for input it cannot judge.
    """
    run = path if isinstance(path, RunDir) else RunDir.open(path)
    report = VerifyReport(run)
    others = sorted(p.name for p in run.events.iterdir() if not p.name.endswith(SEGMENT_SUFFIX))
    for other in others:
        report.problems.append(Problem(other, None, "unexpected file in events/ (not a segment)"))
    for skipped in skipped_entries(run.events):
        name, why = skipped.split(": ", 1)
        report.problems.append(Problem(name, None, f"unexpected entry in events/: {why}"))
    paths = list_segments(run.events)
    if not paths:
        report.problems.append(Problem("events/", None, "no segments: the run has no recorded events"))
    run_id: str | None = None
    kept: list[Event] = []
    for p in paths:
        streamed = _stream_segment(p, run_id)
        if streamed is None:
            streamed = _read_whole(p, run_id, report)
            if streamed is None:
                continue
        if run_id is None and streamed.summary.events:
            run_id = _first_run_id(p)
        report.problems.extend(streamed.problems)
        report.segments.append(streamed.summary)
        kept.extend(streamed.kept)
    if facts and report.ok:
        found = check_facts(run, kept)
        report.problems.extend(found.problems)
        report.warnings.extend(found.warnings)
    return report


def _first_run_id(path: Path) -> str | None:
    first = next(stream_events(path), None)
    return first.run_id if first is not None else None


def _read_whole(p: Path, run_id: str | None, report: VerifyReport) -> _Streamed | None:
    try:
        segment = read_segment(p)
    except NewerSchemaError:
        raise
    except SegmentError as e:
        problem = Problem(p.name, e.seq, str(e).split(": ", 1)[-1])
        # A flipped length can leave an altered event readable and break only a later one.
        earlier = check_segment(e.partial, run_id) if e.partial is not None else []
        report.problems.append(earlier[0] if earlier else problem)
        return None
    problems = check_segment(segment, run_id)
    kept = [e for e in segment.events() if e.kind in KINDS]
    return _Streamed(SegmentSummary(p.name, segment.table.num_rows, segment.closed, segment.torn), problems, kept)
