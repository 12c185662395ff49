"""The log writer: appends events to its own segment, durably, thread-safely, with a digest chain.

Durability policy (also in docs/design.md, section 3):
- every event reaches the OS (one `write` per event) before `append` returns, so a killed process loses
  nothing it appended;
- critical kinds (catalogue.toml: weight updates, checkpoint commits, eval results, run boundaries) are
  fsynced before `append` returns, so they survive a power loss too;
- other kinds are group-committed: a background thread fsyncs within 100 ms, and `close` fsyncs.

A writer that copies a record kept elsewhere (`recorder import` of a finished mllog) may ask for
`durability="at-close"` instead: nothing is fsynced until `close`, which fsyncs the segment and its folder
once. A power loss mid-import leaves a torn or unclosed segment (verify says so) while the source file still
holds every fact, so importing again loses nothing; 26 fsyncs per typical result file were most of the
import's time (bench/README.md, bench/replay.py --imported-runs).
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, overload

from recorder.errors import EncodeError, InputError, LogWriteError, WriterClosedError
from recorder.signing import ALGORITHM, CHAIN_DOMAIN, SIGNING_KEY_ENV, Signer, signer_from_environment
from recorder.store import canonical
from recorder.store.catalogue import check_kind, critical_kinds
from recorder.store.events import GENESIS_DIGEST, Event, arrow_schema, canonical_bytes, chain_digest
from recorder.store.kinds import ChainSigned, Payload, SegmentClosed, SegmentOpened
from recorder.store.reader import recorded_run_id
from recorder.store.run import RunDir, fsync_dir
from recorder.store.segment import (
    END_OF_STREAM,
    WRITER_NAME,
    parse_segment_name,
    row_encoder,
    schema_message,
    segment_name,
)
from recorder.store.signed_segments import MANIFEST_FILE, Entry, manifest_path, record_signed_segment

GROUP_COMMIT_S = 0.1
# A signed writer signs after every critical event but these: the key is opened, and the close is signed itself.
_FRAMING = frozenset({SegmentOpened.KIND, SegmentClosed.KIND})
_UNSIGNED_MARK = canonical.dumps({})  # a chain_signed record's data as its signature signs it
Durability = Literal["critical", "at-close"]


def _write_all(fd: int, payload: bytes) -> None:
    """One write per event; a short write (disk full) is an error, never a silent partial event."""
    written = os.write(fd, payload)
    if written != len(payload):
        raise OSError(errno.ENOSPC, f"short write: {written} of {len(payload)} bytes (disk full?)")


def _int_or_none(name: str, kind: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(2**63) <= value < 2**63:
            raise EncodeError(f"{kind}: {name} {value} does not fit the event schema's int64")
        return value
    raise EncodeError(f"{kind}: {name} must be an int or None, got {type(value).__name__} {value!r}")


class LogWriter:
    """Appends events of one writer session to a new segment `events/<writer>-<NNNN>.arrows`.

    Usable as a context manager; `close` writes a `segment_closed` event and the end-of-stream marker.

    `signer`: the key that signs the segment (recorder.signing); by default the one RECORDER_SIGNING_KEY
    names, if any. A signed segment starts with `segment_opened` (its public key) and its closing record
    carries the signature.
    """

    def __init__(
        self,
        run: RunDir | Path | str,
        writer: str,
        *,
        clock: Callable[[], int] = time.time_ns,
        group_commit_s: float = GROUP_COMMIT_S,
        signer: Signer | Literal["environment"] | None = "environment",
        durability: Durability = "critical",
    ) -> None:
        self.run = run if isinstance(run, RunDir) else RunDir.open(run)
        if not WRITER_NAME.match(writer):
            raise InputError(f"invalid writer name {writer!r}: letters, digits, '_', '.' and inner '-'")
        self.writer = writer
        # Loaded before the segment exists: a bad key file leaves nothing behind.
        self._signer = signer_from_environment() if signer == "environment" else signer
        if self._signer is None and manifest_path(self.run).exists():
            raise InputError(
                f"{self.run.path}: a signed run ({MANIFEST_FILE}); an unsigned segment would fail its every "
                f"verdict: give its key with --signing-key or {SIGNING_KEY_ENV}"
            )
        self.run_id = recorded_run_id(self.run)  # a copied run keeps its own id, not the folder's
        self._clock = clock
        self._lock = threading.Lock()
        self._seq = 0
        self._previous = GENESIS_DIGEST
        self._encoder = row_encoder()
        self._at_close = durability == "at-close"
        self._critical = frozenset() if self._at_close else critical_kinds()
        self._fd, self.path = self._open_new_segment()
        self._size = os.lseek(self._fd, 0, os.SEEK_END)
        self._signed_through = 0  # the events a chain_signed record (or none, at 0) vouches for so far
        self._flush_error: OSError | None = None
        self._dirty = threading.Event()
        self._closed = False
        self._stop = threading.Event()
        self._group_commit_s = group_commit_s
        self._flusher = threading.Thread(target=self._flush_loop, name=f"recorder-fsync-{writer}", daemon=True)
        if not self._at_close:
            self._flusher.start()
        if self._signer is not None:
            self.append(SegmentOpened(public_key=self._signer.public_key_hex, algorithm=ALGORITHM))

    def _open_new_segment(self) -> tuple[int, Path]:
        events = self.run.events
        taken = [parse_segment_name(p.name) for p in events.iterdir()]
        number = 1 + max((n for w, n in filter(None, taken) if w == self.writer), default=0)
        while True:  # O_EXCL: a second process racing for the same number takes the next one
            path = events / segment_name(self.writer, number)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            except FileExistsError:
                number += 1
                continue
            except OSError as e:
                raise LogWriteError(
                    f"{path}: cannot create the segment ({e.strerror}); "
                    "is the run directory read-only or the disk full?"
                ) from e
            try:
                _write_all(fd, schema_message(arrow_schema()))
                if not self._at_close:
                    os.fsync(fd)
                    fsync_dir(events)
            except OSError as e:
                os.close(fd)
                path.unlink(missing_ok=True)
                raise LogWriteError(f"{path}: cannot start the segment ({e.strerror})") from e
            return fd, path

    @property
    def segment(self) -> str:
        return self.path.name

    @overload
    def append(
        self,
        kind: Payload,
        *,
        step: int | None = None,
        samples_count: int | None = None,
        key: str | None = None,
        value: Any = None,
        time_ns: int | None = None,
    ) -> Event: ...

    @overload
    def append(
        self,
        kind: str,
        *,
        step: int | None = None,
        samples_count: int | None = None,
        key: str | None = None,
        value: Any = None,
        data: Mapping[str, Any] | None = None,
        time_ns: int | None = None,
    ) -> Event: ...

    def append(
        self,
        kind: str | Payload,
        *,
        step: int | None = None,
        samples_count: int | None = None,
        key: str | None = None,
        value: Any = None,
        data: Mapping[str, Any] | None = None,
        time_ns: int | None = None,
    ) -> Event:
        """Record one fact; returns the event as stored. `time_ns` defaults to the wall clock now.

        Give the payload (`append(kinds.WeightUpdate(), step=...)`): the kind comes from its class and the
        data from `to_data()`. A kind by name with `data=` is the untyped form, for data no class describes
        (tests of the log itself).
        """
        if isinstance(kind, Payload):
            if data is not None:
                raise EncodeError(f"{kind.KIND}: give the payload or data=, not both")
            data = kind.to_data()
            kind = kind.KIND
        check_kind(kind)
        step = _int_or_none("step", kind, step)
        samples_count = _int_or_none("samples_count", kind, samples_count)
        if key is not None and not isinstance(key, str):
            raise EncodeError(f"{kind}: key must be a str, got {type(key).__name__}")
        value_json = None if value is None else canonical.dumps(value)
        data_json = canonical.dumps(dict(data) if data else {})
        with self._lock:
            if self._closed:
                raise WriterClosedError(f"{self.segment}: append({kind!r}) after close")
            return self._write(kind, step, samples_count, key, value_json, data_json, time_ns)

    def _write(
        self,
        kind: str,
        step: int | None,
        samples_count: int | None,
        key: str | None,
        value_json: str | None,
        data_json: str,
        time_ns: int | None,
        mono_ns: int | None = None,
    ) -> Event:
        t = self._clock() if time_ns is None else _int_or_none("time_ns", kind, time_ns)
        assert t is not None
        mono = time.monotonic_ns() if mono_ns is None else mono_ns
        seq = self._seq
        event = self._event(seq, self._previous, t, mono, kind, step, samples_count, key, value_json, data_json)
        self._raise_flush_error()
        payload = self._encoder.encode(event.row())
        digest = bytes.fromhex(event.digest)
        critical = kind in self._critical
        mark = None
        if critical and self._signer is not None and kind not in _FRAMING:
            # signed in the same write as the event, so that the fsync below makes both durable together
            mark = self._chain_mark(seq + 1, digest)
            payload += self._encoder.encode(mark.row())
        try:
            _write_all(self._fd, payload)
        except OSError as e:
            self._cut_partial_write()
            raise LogWriteError(
                f"{self.path}: could not append {kind} (seq {seq}): {e.strerror}. Nothing of it "
                f"was recorded; the {seq} events before it are intact"
            ) from e
        self._size += len(payload)
        self._seq, self._previous = seq + 1, digest
        if mark is not None:
            self._seq, self._previous = seq + 2, bytes.fromhex(mark.digest)
            self._signed_through = self._seq
        if critical:
            try:
                os.fsync(self._fd)
            except OSError as e:
                raise LogWriteError(
                    f"{self.path}: {kind} (seq {seq}) was written but could not be made durable: {e.strerror}"
                ) from e
        elif not self._at_close:
            self._dirty.set()
        return event

    def _event(
        self,
        seq: int,
        previous: bytes,
        t: int,
        mono: int,
        kind: str,
        step: int | None,
        samples_count: int | None,
        key: str | None,
        value_json: str | None,
        data_json: str,
    ) -> Event:
        fields = (self.run_id, self.writer, seq, t, mono, kind, step, samples_count, key, value_json, data_json)
        digest = chain_digest(previous, canonical_bytes(*fields))
        return Event(
            run_id=self.run_id,
            writer=self.writer,
            seq=seq,
            time_ns=t,
            mono_ns=mono,
            kind=kind,
            step=step,
            samples_count=samples_count,
            key=key,
            value_json=value_json,
            data_json=data_json,
            digest=digest.hex(),
            segment=self.segment,
        )

    def _chain_mark(self, seq: int, previous: bytes) -> Event:
        """The chain_signed record at `seq`: the signature of its own digest as it is without the signature
        (as the closing record is signed), so the key vouches for every event before it."""
        assert self._signer is not None
        t, mono = self._clock(), time.monotonic_ns()
        unsigned = self._event(seq, previous, t, mono, ChainSigned.KIND, None, None, None, None, _UNSIGNED_MARK)
        signature = self._signer.sign(bytes.fromhex(unsigned.digest), CHAIN_DOMAIN)
        data = canonical.dumps(ChainSigned(signature=signature).to_data())
        return self._event(seq, previous, t, mono, ChainSigned.KIND, None, None, None, None, data)

    def _sign_durable_point(self) -> None:
        """Before a group commit's fsync: a chain_signed record after the last event, unless one is there.
        Called with the lock held; an OSError is the flusher's to report."""
        if self._closed or self._seq <= self._signed_through:
            return
        mark = self._chain_mark(self._seq, self._previous)
        payload = self._encoder.encode(mark.row())
        try:
            _write_all(self._fd, payload)
        except OSError:
            self._cut_partial_write()
            raise
        self._size += len(payload)
        self._seq, self._previous = self._seq + 1, bytes.fromhex(mark.digest)
        self._signed_through = self._seq

    def _cut_partial_write(self) -> None:
        """Truncate a partial message, so that the next append does not land after garbage."""
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            self._closed = True  # cannot repair: refuse further appends; the partial write reads as a torn tail

    def _raise_flush_error(self) -> None:
        if self._flush_error is not None:
            e, self._flush_error = self._flush_error, None
            raise LogWriteError(
                f"{self.path}: a background fsync failed ({e.strerror}): events appended "
                "since the last durable one may not survive a power loss"
            ) from e

    def _flush_loop(self) -> None:
        while not self._stop.wait(self._group_commit_s):
            if self._dirty.is_set():
                self._dirty.clear()
                try:
                    if self._signer is not None:
                        with self._lock:
                            self._sign_durable_point()
                    os.fsync(self._fd)
                except OSError as e:  # reported by the next append or close
                    self._flush_error = e

    def close(self) -> None:
        """Append `segment_closed`, the end-of-stream marker, fsync. Safe to call twice."""
        # The flusher stops before the lock is taken: it takes the lock itself to sign a group commit.
        self._stop.set()
        if self._flusher.is_alive() and threading.current_thread() is not self._flusher:
            self._flusher.join()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._write_closing_record()
                _write_all(self._fd, END_OF_STREAM)
                os.fsync(self._fd)
                if self._at_close:  # the segment's name was not made durable when it was created
                    fsync_dir(self.run.events)
            except OSError as e:
                raise LogWriteError(
                    f"{self.path}: could not close the segment ({e.strerror}); its events are "
                    "intact, it reads as a segment whose writer did not close"
                ) from e
            finally:
                os.close(self._fd)
            if (
                self._signer is not None
            ):  # the run's set of signed segments is signed too (recorder.store.signed_segments)
                entry = Entry(events=self._seq, digest=self._previous.hex())
                record_signed_segment(self.run, self.run_id, self._signer, self.segment, entry)

    def _write_closing_record(self) -> None:
        """`segment_closed`; when signing, with the signature of the digest the record has unsigned."""
        closed = SegmentClosed(events=self._seq)
        t, mono = self._clock(), time.monotonic_ns()
        if self._signer is not None:
            data = canonical.dumps(closed.to_data())
            unsigned = self._event(self._seq, self._previous, t, mono, closed.KIND, None, None, None, None, data)
            closed = SegmentClosed(events=self._seq, signature=self._signer.sign(bytes.fromhex(unsigned.digest)))
        self._write(closed.KIND, None, None, None, None, canonical.dumps(closed.to_data()), t, mono)

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
