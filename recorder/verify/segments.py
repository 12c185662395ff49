"""`recorder verify`: schema, seq contiguity, digest chains, closing records, torn tails; then the facts.

Segments are streamed: messages are read one at a time and checked in chunks (512 events or 1 MB), so
memory stays bounded by the chunk or the largest event, not the segment. A segment the stream cannot read
cleanly to its end (torn, damaged) is read whole by `read_segment`, which locates the damage. When every
segment is intact, `recorder.verify.facts.fact_checks` checks that the timeline is possible and the evidence matches.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from recorder.errors import NewerSchemaError, SegmentError
from recorder.signing import CHAIN_DOMAIN, fingerprint, signature_valid
from recorder.store import canonical
from recorder.store.catalogue import catalogue
from recorder.store.events import GENESIS_DIGEST, Event, arrow_schema, canonical_bytes, chain_digest
from recorder.store.kinds import ChainSigned, PayloadError, SegmentClosed, SegmentOpened
from recorder.store.reader import ARROW_ERRORS, Segment, TornTail, event_from_row, merge, read_segment, recorded_run_id
from recorder.store.run import RunDir
from recorder.store.segment import (
    END_OF_STREAM,
    SEGMENT_SUFFIX,
    list_segments,
    parse_segment_name,
    row_encoder,
    schema_message,
    segment_name,
    skipped_entries,
)
from recorder.untrusted.untrusted_files import arrow_input, irregular, read_regular
from recorder.verify.facts.fact_checks import check_facts, for_rules
from recorder.verify.facts.fact_checks import kept as kept_kind
from recorder.verify.problem import Problem
from recorder.verify.summary import SegmentSummary, SignedPoint
from recorder.verify.truncation import explain_truncation
from recorder.verify.trust import trust_problems, trusted_from_environment, untrusted_ok_from_environment

__all__ = ["Problem", "SegmentSummary", "VerifyReport", "check_segment", "verify_run"]


SIGNATURE_RULE = "signature"
_UNSIGNED_MARK = canonical.dumps({})  # a chain_signed record's data as its signature signs it


@dataclass
class VerifyReport:
    run: RunDir
    segments: list[SegmentSummary] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # every event, merged as `read_run` merges them, when `verify_run(keep_events=True)` found the run intact
    events: list[Event] | None = None
    # trust problems the caller chose to judge past (`untrusted_ok`): every verdict must then say so
    untrusted: list[Problem] = field(default_factory=list)
    trust_judged: bool = False  # the run was judged under a key (signed, or trusted keys given)

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
        self.opened_with: str | None = None  # segment_opened's public key
        self.signed_by: str | None = None  # that key, once the closing record's signature verified
        # A signature problem leaves the bytes readable: the segment is read to its end, then reported.
        self.signature_problem: Problem | None = None
        self.end = len(schema_message(arrow_schema()))  # where the events read so far end in the file
        self.signed_point: SignedPoint | None = None  # the last chain_signed record that verified

    def summary(self, events: int, closed: bool, torn: TornTail | None = None) -> SegmentSummary:
        digest = self.previous.hex() if events else None
        head = self.previous.hex()
        return SegmentSummary(
            self.name,
            events,
            closed,
            torn,
            self.signed_by,
            self.opened_with,
            digest,
            head,
            signed_point=self.signed_point,
        )

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
        previous = self.previous
        digest = chain_digest(previous, canonical_bytes(*row[:-1]))
        if digest.hex() != row[-1]:
            return Problem(name, i, "digest mismatch: the event was altered (or an earlier one was removed)")
        self.previous = digest
        if raw != self.encoder.encode(row):
            return Problem(name, i, "the event's bytes differ from its encoding: the segment was altered")
        self.end += len(raw)
        if kind == "segment_opened":
            self.signature_problem = self.signature_problem or self._opened(i, row)
        if kind == "chain_signed":
            self.signature_problem = self.signature_problem or self._chain_signed(i, row, previous)
        if kind == "segment_closed":
            self.closing = i
            self.signature_problem = self.signature_problem or self._signature(i, row, previous)
        return None

    def signature_problems(self) -> list[Problem]:
        return [self.signature_problem] if self.signature_problem is not None else []

    def _opened(self, i: int, row: tuple[Any, ...]) -> Problem | None:
        if i != 0:
            return Problem(self.name, i, "segment_opened is not the segment's first event", SIGNATURE_RULE)
        try:
            opened = SegmentOpened.from_data(canonical.loads(row[10]), where=f"{self.name} seq {i}")
        except (PayloadError, ValueError, AttributeError, RecursionError) as e:
            return Problem(self.name, i, f"segment_opened does not record a public key ({e})", SIGNATURE_RULE)
        self.opened_with = opened.public_key
        return None

    def _chain_signed(self, i: int, row: tuple[Any, ...], previous: bytes) -> Problem | None:
        """A durable point must carry segment_opened's key's signature of its own digest without it: every
        event before it is as the key holder wrote it. The last that verifies is what adoption may accept."""
        try:
            signature = ChainSigned.from_data(canonical.loads(row[10]), where=f"{self.name} seq {i}").signature
        except (PayloadError, ValueError, AttributeError, RecursionError) as e:
            return Problem(self.name, i, f"bad signature: chain_signed does not parse ({e})", SIGNATURE_RULE)
        key = self.opened_with
        if key is None:
            return Problem(
                self.name, i, "bad signature: chain_signed, but no segment_opened names its key", SIGNATURE_RULE
            )
        unsigned = chain_digest(previous, canonical_bytes(*(*row[:10], _UNSIGNED_MARK)))
        if not signature_valid(key, signature, unsigned, CHAIN_DOMAIN):
            return Problem(
                self.name,
                i,
                f"bad signature: key {fingerprint(key)} did not sign the events before this chain_signed record "
                "(an event was altered or the chain recomputed after it was signed)",
                SIGNATURE_RULE,
            )
        self.signed_point = SignedPoint(i + 1, self.previous.hex(), self.end)
        return None

    def _signature(self, i: int, row: tuple[Any, ...], previous: bytes) -> Problem | None:
        """A signed segment's closing record must carry segment_opened's key's signature of its own digest as
        it is without the signature: the events as they are now must be the ones the key holder closed."""
        try:
            closed = SegmentClosed.from_data(canonical.loads(row[10]), where=f"{self.name} seq {i}")
        except (PayloadError, ValueError, AttributeError, RecursionError) as e:
            return Problem(self.name, i, f"bad signature: the closing record does not parse ({e})", SIGNATURE_RULE)
        key, signature = self.opened_with, closed.signature
        if key is None and signature is None:
            return None
        if key is None:
            return Problem(
                self.name, i, "bad signature: a signature, but no segment_opened names its key", SIGNATURE_RULE
            )
        if signature is None:
            return Problem(
                self.name,
                i,
                f"bad signature: segment_opened names key {fingerprint(key)}, but the closing record is not "
                "signed (the signature was removed)",
                SIGNATURE_RULE,
            )
        unsigned = (*row[:10], canonical.dumps(SegmentClosed(events=closed.events).to_data()))
        digest = chain_digest(previous, canonical_bytes(*unsigned))
        if not signature_valid(key, signature, digest):
            return Problem(
                self.name,
                i,
                f"bad signature: key {fingerprint(key)} did not sign these events (the segment was rewritten "
                "after it was signed)",
                SIGNATURE_RULE,
            )
        self.signed_by = key
        return None

    def closed(self, n: int, last: tuple[Any, ...] | None) -> Problem | None:
        """A closed segment must end with its segment_closed record, counting the events before it."""
        if last is None or last[5] != "segment_closed" or _events_counted(last) != n - 1:
            return Problem(self.name, n, "closed segment without its segment_closed record: its last event was removed")
        return None


def _events_counted(closing: tuple[Any, ...]) -> object:
    try:
        data = canonical.loads(closing[10])
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python parses
        return None
    return data.get("events") if isinstance(data, dict) else None


def check_segment(segment: Segment, run_id: str | None) -> list[Problem]:
    """Problems in one segment read whole (the path for damaged or torn segments); empty when intact."""
    return _check_whole(segment, _Chain(segment.name, segment.writer, run_id))


def _check_whole(segment: Segment, chain: _Chain) -> list[Problem]:
    cols = segment.table.to_pydict()
    name = segment.name
    raw = read_regular(segment.path)
    schema = schema_message(arrow_schema())
    if not (raw.startswith(schema) or schema.startswith(raw)):  # a crash at creation leaves a prefix
        return [Problem(name, 0, "the schema message differs from the event schema's encoding")]
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
    return chain.signature_problems()


@dataclass
class _Streamed:
    summary: SegmentSummary
    problems: list[Problem]
    kept: list[Event]  # the kinds the facts layer reads
    every: list[Event] = field(default_factory=list)  # all of them, when asked


# Messages are read one at a time, but become Python rows a chunk at a time: one columnar conversion per
# chunk costs a fraction of twelve scalar conversions per event, and memory stays bounded by the chunk.
_CHUNK_EVENTS = 512
_CHUNK_BYTES = 1 << 20


def _stream_segment(
    path: Path, run_id: str | None, keep_all: bool = False, progress: Callable[[int], None] | None = None
) -> _Streamed | None:
    """Check a segment a chunk of messages at a time; None when it does not read cleanly to its end (then
    the whole-file path locates the damage or the torn tail)."""
    parsed = parse_segment_name(path.name)
    if parsed is None:
        return None
    schema = schema_message(arrow_schema())
    chain = _Chain(path.name, parsed[0], run_id)
    kept: list[Event] = []
    every: list[Event] = []
    last: tuple[Any, ...] | None = None
    n = 0
    with open(path, "rb") as raw, arrow_input(path) as source:
        fd = raw.fileno()
        size = os.fstat(fd).st_size
        if os.pread(fd, len(schema), 0) != schema:
            return None
        try:
            reader = pa.ipc.open_stream(source)
            if reader.schema.metadata != arrow_schema().metadata or not reader.schema.equals(arrow_schema()):
                return None
            start = source.tell()
            chunk: list[pa.RecordBatch] = []
            ends: list[int] = []
            while True:
                try:
                    batch: pa.RecordBatch | None = reader.read_next_batch()
                except StopIteration:
                    batch = None
                if batch is not None:
                    batch.validate(full=True)
                    if batch.num_rows != 1:
                        return None
                    chunk.append(batch)
                    ends.append(source.tell())
                if chunk and (batch is None or len(chunk) >= _CHUNK_EVENTS or ends[-1] - start >= _CHUNK_BYTES):
                    first = start
                    data = os.pread(fd, ends[-1] - first, first)
                    columns = pa.Table.from_batches(chunk, schema=reader.schema).to_pydict()
                    for row, end in zip(zip(*columns.values(), strict=True), ends, strict=True):
                        problem = chain.row(n, row, data[start - first : end - first])
                        if problem is not None:
                            return _Streamed(chain.summary(n, False), [problem], kept)
                        if keep_all or kept_kind(row[5], row[1]):
                            event = event_from_row(row, path.name)
                            if kept_kind(row[5], row[1]):
                                kept.append(for_rules(event))
                            if keep_all:
                                every.append(event)
                        last, start, n = row, end, n + 1
                    chunk, ends = [], []
                    if progress is not None:  # the bytes just checked (a command's progress bar)
                        progress(len(data))
                if batch is None:
                    break
        except (*ARROW_ERRORS, pa.ArrowMemoryError):  # a damaged length can ask for any allocation
            return None
        tail = os.pread(fd, 16, start)
    if tail == END_OF_STREAM and size == start + len(END_OF_STREAM):
        problem = chain.closed(n, last)
        summary = dataclasses.replace(chain.summary(n, True), size=size)
        return _Streamed(summary, [problem] if problem else chain.signature_problems(), kept, every)
    if size == start and (last is None or last[5] != "segment_closed"):
        summary = dataclasses.replace(chain.summary(n, False), size=size)
        return _Streamed(summary, chain.signature_problems(), kept, every)
    return None


SEGMENT_NAME_RULE = "segment-name"


def _name_problems(paths: list[Path]) -> list[Problem]:
    """A segment's file name is the one its writer gives it (`segment_name`): `evaluator-00001.arrows` beside
    `evaluator-0001.arrows` would be two segments of one writer and number, and a signature does not cover
    the file name, so only one spelling of each (writer, number) is accepted."""
    problems = []
    for p in paths:
        parsed = parse_segment_name(p.name)
        if parsed is not None and segment_name(*parsed) != p.name:
            canonical = segment_name(*parsed)
            problems.append(
                Problem(p.name, None, f"not a name its writer gives (that is {canonical})", SEGMENT_NAME_RULE)
            )
    return problems


def verify_run(
    path: Path | str | RunDir,
    *,
    facts: bool = True,
    keep_events: bool = False,
    trusted: Mapping[str, str] | None | Literal["environment"] = "environment",
    untrusted_ok: bool | None = None,
    progress: Callable[[int], None] | None = None,
) -> VerifyReport:
    """Check every segment of a run, its signatures under the run's trust (recorder.verify.trust), then
    (when `facts` and the bytes are intact) what the events mean. `keep_events`: an intact run's events come
    back in `report.events`, so that a caller about to read the run (replay, score) does not read it a
    second time. `trusted`: the public keys to judge signatures by (default: those RECORDER_TRUST names).
    `untrusted_ok`: trust problems go to `report.untrusted`, not `report.problems` (the caller marks its
    output); default: whether RECORDER_UNTRUSTED_OK is set (a command's `--untrusted-ok` sets it).
    `progress`: told how many bytes were checked, chunk by chunk.

    Raises NotARunError/NewerSchemaError for input it cannot judge.
    """
    run = path if isinstance(path, RunDir) else RunDir.open(path)
    report = VerifyReport(run)
    # A regular file that is not a segment is someone's edit; an entry that is no regular file (a directory,
    # a FIFO, a symlink) is named and skipped, as every reader skips it: nothing of it is read as events.
    entries = sorted(run.events.iterdir())
    for other in (p for p in entries if not p.name.endswith(SEGMENT_SUFFIX)):
        if (why := irregular(other)) is None:
            report.problems.append(Problem(other.name, None, "unexpected file in events/ (not a segment)"))
        else:
            report.warnings.append(f"events/{why}, never opened (none of it is part of the run)")
    for skipped in skipped_entries(run.events):
        report.warnings.append(f"events/{skipped}, never opened (none of it is part of the run)")
    paths = list_segments(run.events)
    report.problems.extend(_name_problems(paths))
    if not paths:
        report.problems.append(Problem("events/", None, "no segments: the run has no recorded events"))
    # the id the run's own run_opened carries: a segment pasted from another run is the one that differs
    run_id: str | None = recorded_run_id(run) if paths else None
    kept: list[Event] = []
    every: list[list[Event]] = []
    for p in paths:
        streamed = _stream_segment(p, run_id, keep_events, progress)
        if streamed is None:
            streamed = _read_whole(p, run_id, report, keep_events)
            if streamed is None:
                continue
        report.problems.extend(streamed.problems)
        report.segments.append(streamed.summary)
        kept.extend(streamed.kept)
        every.append(streamed.every)
    # trust is judged with or without `facts`: a compacted run (compact reads no facts) was judged too
    keys = trusted_from_environment() if trusted == "environment" else trusted
    judged = trust_problems(run, report.segments, report.problems, keys)
    report.trust_judged = judged is not None
    accept = untrusted_ok_from_environment() if untrusted_ok is None else untrusted_ok
    (report.untrusted if accept else report.problems).extend(judged or [])
    if facts and report.ok:
        found = check_facts(run, kept)
        report.problems.extend(explain_truncation(report.segments, found.problems, kept))
        report.warnings.extend(found.warnings)
    if keep_events and report.ok:
        report.events = merge(every)
    return report


def _read_whole(p: Path, run_id: str | None, report: VerifyReport, keep_all: bool = False) -> _Streamed | None:
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
    chain = _Chain(segment.name, segment.writer, run_id)
    problems = _check_whole(segment, chain)
    events = segment.events()
    kept = [for_rules(e) for e in events if kept_kind(e.kind, e.writer)]
    summary = dataclasses.replace(
        chain.summary(segment.table.num_rows, segment.closed, segment.torn), size=_bytes_read(segment)
    )
    return _Streamed(summary, problems, kept, events if keep_all else [])


def _bytes_read(segment: Segment) -> int:
    """The size of the file as `read_segment` read it (what a resuming writer adopts)."""
    if segment.torn is not None:
        return segment.torn.offset + segment.torn.bytes_lost
    return segment.offsets[-1] + (len(END_OF_STREAM) if segment.closed else 0)
