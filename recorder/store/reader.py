"""Reading events back: every complete event of a run, and each torn tail reported, never fatal."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from recorder.errors import NewerSchemaError, SegmentError
from recorder.store.events import SCHEMA_VERSION, SCHEMA_VERSION_KEY, Event, arrow_schema
from recorder.store.run import RunDir
from recorder.store.segment import (
    CONTINUATION,
    END_OF_STREAM,
    list_segments,
    parse_segment_name,
    schema_message,
    skipped_entries,
)
from recorder.untrusted.untrusted_files import arrow_input, read_regular

ARROW_ERRORS = (
    pa.ArrowInvalid,
    pa.ArrowIOError,
    pa.ArrowNotImplementedError,
    pa.ArrowTypeError,
    pa.ArrowIndexError,
    OSError,
    ValueError,
    EOFError,
)  # EOFError: a message cut at the end of the data
_MAX_RESYNC_PROBES = 4096


@dataclass(frozen=True)
class TornTail:
    """The incomplete last write of a segment whose writer died mid-append."""

    segment: str
    offset: int  # where the complete events end
    bytes_lost: int
    events_read: int

    def __str__(self) -> str:
        return (
            f"{self.segment}: torn tail at byte {self.offset} ({self.bytes_lost} bytes of an unfinished "
            f"append after {self.events_read} complete events)"
        )


@dataclass(frozen=True)
class Segment:
    """One segment as read: its complete events as an Arrow table, whether it was closed, its torn tail."""

    path: Path
    writer: str
    table: pa.Table
    closed: bool
    torn: TornTail | None
    offsets: tuple[int, ...] = ()  # byte offset where each event's message starts, then where the last ends

    @property
    def name(self) -> str:
        return self.path.name

    def events(self) -> list[Event]:
        cols = self.table.to_pydict()
        rows = zip(*(cols[c] for c in self.table.column_names), strict=False)
        return [event_from_row(row, self.name) for row in rows]


def _schema_version(schema: pa.Schema) -> int:
    raw = (schema.metadata or {}).get(SCHEMA_VERSION_KEY)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


def _has_later_message(data: bytes, start: int, schema: pa.Schema) -> bool:
    """Whether a complete record batch can be found after `start`: then the damage is not a torn tail."""
    pos = data.find(CONTINUATION, start + 1)
    probes = 0
    while pos != -1 and probes < _MAX_RESYNC_PROBES:
        probes += 1
        try:
            message = pa.ipc.read_message(pa.py_buffer(data[pos:]))
            pa.ipc.read_record_batch(message, schema)
            return True
        except ARROW_ERRORS:
            pos = data.find(CONTINUATION, pos + 1)
    return False


def _valid(batch: pa.RecordBatch) -> bool:
    try:
        batch.validate(full=True)
        return True
    except ARROW_ERRORS:
        return False


def read_segment(path: Path) -> Segment:
    """Every complete event of one segment. Raises SegmentError if it was damaged (not merely torn)."""
    parsed = parse_segment_name(path.name)
    if parsed is None:
        raise SegmentError(f"{path}: not a segment name (expected <writer>-<NNNN>.arrows)", segment=path.name)
    data = read_regular(path)
    expected_schema = arrow_schema()
    if schema_message(expected_schema).startswith(data):  # crashed while creating: nothing recorded yet
        empty = expected_schema.empty_table()
        torn = TornTail(path.name, 0, len(data), 0)
        return Segment(path, parsed[0], empty, closed=False, torn=torn, offsets=(len(data),))
    source = pa.BufferReader(pa.py_buffer(data))
    try:
        reader = pa.ipc.open_stream(source)
    except ARROW_ERRORS as e:
        raise SegmentError(
            f"{path}: not an Arrow event segment ({e}); move it out of events/", segment=path.name, seq=0
        ) from e
    version = _schema_version(reader.schema)
    if version > SCHEMA_VERSION:
        raise NewerSchemaError(
            f"{path}: written with event schema v{version}; this recorder reads up to v{SCHEMA_VERSION}: "
            "upgrade recorder to read it"
        )
    if not reader.schema.equals(expected_schema, check_metadata=False) or version != SCHEMA_VERSION:
        raise SegmentError(
            f"{path}: its Arrow schema is not the event schema v{SCHEMA_VERSION}", segment=path.name, seq=0
        )
    batches: list[pa.RecordBatch] = []
    good = source.tell()
    offsets = [good]
    failure: Exception | None = None
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            break
        except ARROW_ERRORS as e:
            failure = e
            break
        batches.append(batch)
        good = source.tell()
        offsets.append(good)
    table = pa.Table.from_batches(batches, schema=expected_schema)
    try:
        table.validate(full=True)  # e.g. UTF-8: decoding a message does not check it
    except ARROW_ERRORS:
        bad = next(i for i, b in enumerate(batches) if not _valid(b))
        error = SegmentError(
            f"{path}: event at byte {offsets[bad]} is not valid (seq {bad} is the first bad "
            "one): the segment was altered",
            segment=path.name,
            seq=bad,
        )
        error.partial = Segment(
            path,
            parsed[0],
            pa.Table.from_batches(batches[:bad], schema=expected_schema),
            closed=False,
            torn=None,
            offsets=tuple(offsets[: bad + 1]),
        )
        raise error from None
    table = table.combine_chunks()
    rest = data[good:]
    if rest == END_OF_STREAM:
        return Segment(path, parsed[0], table, closed=True, torn=None, offsets=tuple(offsets))
    if not rest:
        return Segment(path, parsed[0], table, closed=False, torn=None, offsets=tuple(offsets))
    # A torn tail is a prefix of one message at the very end. Anything readable after it, or an
    # end-of-stream marker closing the file, means bytes in the middle were altered.
    if data.endswith(END_OF_STREAM) or _has_later_message(data, good, expected_schema):
        reason = f" ({failure})" if failure else ""
        error = SegmentError(
            f"{path}: unreadable data at byte {good}, after {table.num_rows} events (seq "
            f"{table.num_rows} is the first bad one){reason}: the segment was altered",
            segment=path.name,
            seq=table.num_rows,
        )
        error.partial = Segment(path, parsed[0], table, closed=False, torn=None, offsets=tuple(offsets))
        raise error
    torn = TornTail(path.name, good, len(rest), table.num_rows)
    return Segment(path, parsed[0], table, closed=False, torn=torn, offsets=tuple(offsets))


@dataclass
class RunLog:
    """Every complete event of a run, merged across segments in a deterministic order."""

    run: RunDir
    segments: list[Segment]
    events: list[Event] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # entries of events/ that are not regular files

    @property
    def torn(self) -> list[TornTail]:
        return [s.torn for s in self.segments if s.torn is not None and s.torn.bytes_lost > 0]

    def table(self) -> pa.Table:
        """All events as one Arrow table (segment order, then seq), with a `segment` column."""
        tables = [
            s.table.append_column("segment", pa.array([s.name] * s.table.num_rows, pa.string())) for s in self.segments
        ]
        if not tables:
            return arrow_schema().empty_table().append_column("segment", pa.array([], pa.string()))
        return pa.concat_tables(tables)


def merge(segments: list[list[Event]]) -> list[Event]:
    """Merge per-segment event lists by (time_ns, segment), keeping each segment's own order.

    Each segment keeps its seq order even if the wall clock stepped back inside it; ties between
    segments break on the segment name, so the result never depends on directory listing order.
    """
    return list(
        heapq.merge(
            *sorted(segments, key=lambda evs: evs[0].segment if evs else ""), key=lambda e: (e.time_ns, e.segment)
        )
    )


def read_run(path: Path | str | RunDir) -> RunLog:
    """Read every segment of a run. Torn tails are reported in `.torn`; damage raises SegmentError."""
    run = path if isinstance(path, RunDir) else RunDir.open(path)
    segments = [read_segment(p) for p in list_segments(run.events)]
    return RunLog(run, segments, merge([s.events() for s in segments]), skipped_entries(run.events))


# Messages are read one at a time but decoded a chunk at a time: one columnar conversion per chunk costs a
# fraction of twelve scalar conversions per event, and memory stays bounded by the chunk (or the largest event).
_CHUNK_EVENTS = 512
_CHUNK_BYTES = 1 << 20


def stream_events(path: Path) -> Iterator[Event]:
    """The events of one segment in seq order, read a chunk of messages at a time (memory: one chunk, at most
    512 events or about 1 MB, or the largest event). Stops quietly at the first message it cannot read:
    `read_segment` and `verify` are the judges of damage."""
    parsed = parse_segment_name(path.name)
    if parsed is None or not path.is_file():
        return
    chunk: list[pa.RecordBatch] = []
    try:
        with arrow_input(path) as source:
            reader = pa.ipc.open_stream(source)
            if not reader.schema.equals(arrow_schema(), check_metadata=False):
                return
            start = source.tell()
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                batch.validate(full=True)  # a damaged offset must stop here, not crash the decoding below
                chunk.append(batch)
                if len(chunk) >= _CHUNK_EVENTS or source.tell() - start >= _CHUNK_BYTES:
                    yield from _decoded(chunk, path.name)
                    chunk, start = [], source.tell()
    except (*ARROW_ERRORS, pa.ArrowMemoryError):  # a damaged length can ask for any allocation
        pass
    yield from _decoded(chunk, path.name)


def _decoded(chunk: list[pa.RecordBatch], segment: str) -> Iterator[Event]:
    if not chunk:
        return
    columns = pa.Table.from_batches(chunk).to_pydict()
    for name in ("run_id", "writer", "kind"):  # one string object per distinct value, not one per event
        shared: dict[str, str] = {}
        columns[name] = [shared.setdefault(v, v) for v in columns[name]]
    for row in zip(*columns.values(), strict=True):
        yield event_from_row(row, segment)


def stream_run(run: RunDir) -> Iterator[Event]:
    """Every event of a run, segment by segment a chunk at a time, merged as `read_run` merges them (the
    same order): memory is a chunk per segment, not the run."""
    streams = [stream_events(p) for p in list_segments(run.events)]
    return heapq.merge(*streams, key=lambda e: (e.time_ns, e.segment))


def event_from_row(row: tuple[Any, ...], segment: str) -> Event:
    r, w, s, t, m, k, st, sc, ky, v, d, dg = row
    return Event(
        run_id=r,
        writer=w,
        seq=s,
        time_ns=t,
        mono_ns=m,
        kind=k,
        step=st,
        samples_count=sc,
        key=ky,
        value_json=v,
        data_json=d,
        digest=dg,
        segment=segment,
    )


def run_id_from(events: Iterable[Event]) -> str | None:
    """The run id the events record for their run: the earliest `run_opened`'s, else the earliest event's;
    None when there are none. The one rule for a run's id (`recorded_run_id` applies it to a run directory):
    it never comes from the folder name, so a copied or renamed run keeps its id."""
    opened: Event | None = None
    earliest: Event | None = None
    for e in events:
        if earliest is None or _first(e, earliest):
            earliest = e
        if e.kind == "run_opened" and (opened is None or _first(e, opened)):
            opened = e
    chosen = opened or earliest
    return None if chosen is None else chosen.run_id


def _first(a: Event, b: Event) -> bool:
    return (a.time_ns, a.segment, a.seq) < (b.time_ns, b.segment, b.seq)


def recorded_run_id(run: RunDir) -> str:
    """The run's id as its own events record it (`run_id_from`), read from each segment's first fact: a
    `run_opened` opens the segment of every writer that records one. Every command prints and uses this id.

    Only a run with no events yet (a new run's first writer opening) takes its folder name, which
    `RunDir.create` made from the id it was given.
    """
    # a signed segment opens with segment_opened; the writer's first fact follows it
    firsts = (
        next((e for e in stream_events(p) if e.kind != "segment_opened"), None) for p in list_segments(run.events)
    )
    return run_id_from(e for e in firsts if e is not None) or run.path.name
