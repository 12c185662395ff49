"""`recorder verify`: schema, seq contiguity, digest chains, closing records, torn tails."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from recorder.catalogue import catalogue
from recorder.errors import SegmentError
from recorder.events import GENESIS_DIGEST, arrow_schema, canonical_bytes, chain_digest
from recorder.reader import Segment, TornTail, read_segment
from recorder.run import RunDir
from recorder.segment import END_OF_STREAM, SEGMENT_SUFFIX, list_segments, row_encoder, schema_message


@dataclass(frozen=True)
class Problem:
    """Something altered or missing, located by segment and, where known, the first bad seq."""

    segment: str
    seq: int | None
    message: str

    def __str__(self) -> str:
        where = self.segment + (f" seq {self.seq}" if self.seq is not None else "")
        return f"{where}: {self.message}"


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


def check_segment(segment: Segment, run_id: str | None) -> list[Problem]:
    """Problems in one readable segment; an empty list when intact.

    Besides seq and digests, every message must be byte-for-byte the writer's encoding of its row: a
    flipped byte in padding or metadata changes no value, but it is still an alteration.
    """
    cols = segment.table.to_pydict()
    name = segment.name
    raw = segment.path.read_bytes()
    encoder = row_encoder()
    schema = schema_message(arrow_schema())
    if not (raw.startswith(schema) or schema.startswith(raw)):  # a crash at creation leaves a prefix
        return [Problem(name, 0, "the schema message differs from the event schema's encoding")]
    kinds = catalogue()
    previous = GENESIS_DIGEST
    n = segment.table.num_rows
    for i in range(n):
        seq = cols["seq"][i]
        if seq != i:
            return [Problem(name, i, f"found seq {seq} at position {i}: an event was deleted or reordered")]
        if cols["writer"][i] != segment.writer:
            return [Problem(name, i, f"writer {cols['writer'][i]!r} in a segment of writer {segment.writer!r}")]
        if run_id is not None and cols["run_id"][i] != run_id:
            return [Problem(name, i, f"run_id {cols['run_id'][i]!r}, but this run's other events say {run_id!r}")]
        kind = cols["kind"][i]
        if kind not in kinds:
            return [Problem(name, i, f"unknown kind {kind!r}")]
        row = tuple(cols[c][i] for c in cols)  # schema order; the digest is the last column
        digest = chain_digest(previous, canonical_bytes(*row[:-1]))
        if digest.hex() != row[-1]:
            return [Problem(name, i, "digest mismatch: the event was altered (or an earlier one was removed)")]
        previous = digest
        if raw[segment.offsets[i] : segment.offsets[i + 1]] != encoder.encode(row):
            return [Problem(name, i, "the event's bytes differ from its encoding: the segment was altered")]
        if kind == "segment_closed" and i != n - 1:
            return [Problem(name, i, "segment_closed is not the last event: events were added after close")]
    if not segment.closed and n and cols["kind"][n - 1] == "segment_closed":
        if not END_OF_STREAM.startswith(raw[segment.offsets[-1] :]):  # a crash mid-close leaves a prefix
            return [Problem(name, n, "bytes after the closing record are not the end-of-stream marker")]
    if segment.closed:
        last_closed = n > 0 and cols["kind"][n - 1] == "segment_closed"
        if not last_closed or json.loads(cols["data"][n - 1]).get("events") != n - 1:
            return [Problem(name, n, "closed segment without its segment_closed record: its last event was removed")]
    return []


def verify_run(path: Path | str | RunDir) -> VerifyReport:
    """Check every segment of a run. Raises NotARunError/NewerSchemaError for input it cannot judge."""
    run = path if isinstance(path, RunDir) else RunDir.open(path)
    report = VerifyReport(run)
    others = sorted(p.name for p in run.events.iterdir() if not p.name.endswith(SEGMENT_SUFFIX))
    for other in others:
        report.problems.append(Problem(other, None, "unexpected file in events/ (not a segment)"))
    paths = list_segments(run.events)
    if not paths:
        report.problems.append(Problem("events/", None, "no segments: the run has no recorded events"))
    run_id: str | None = None
    for p in paths:
        try:
            segment = read_segment(p)
        except SegmentError as e:
            problem = Problem(p.name, e.seq, str(e).split(": ", 1)[-1])
            # A flipped length can leave an altered event readable and break only a later one.
            earlier = check_segment(e.partial, run_id) if e.partial is not None else []
            report.problems.append(earlier[0] if earlier else problem)
            continue
        if run_id is None and segment.table.num_rows:
            run_id = segment.table.column("run_id")[0].as_py()
        report.problems.extend(check_segment(segment, run_id))
        report.segments.append(SegmentSummary(p.name, segment.table.num_rows, segment.closed, segment.torn))
    return report
