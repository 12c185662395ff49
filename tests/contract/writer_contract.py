"""The contract every writer of events keeps, as one abstract test class (eventsourcing's abstract test
cases, subclassed per backend). A producer's subclass says how to record a tiny run (`record`) and which
segments are its own (`writer`); the class checks, on those segments:

- the digest chain verifies (`recorder verify`'s check);
- seq is contiguous from 0 in every segment;
- every critical kind (catalogue.toml) was fsynced before its append returned: `os.fsync` is observed (it
  still runs: nothing is faked), and the file's size at some fsync equals the end of the critical event; a
  writer that copies a record kept elsewhere (`durability = "at-close"`, recorder/store/log.py) instead fsyncs
  each segment whole, at close, and its folder after that;
- given a signing key, every critical event but the segment's own opening and closing records is signed
  with it: followed by a `chain_signed` record written with it, and the fsync covers both (what a writer
  resuming after a kill adopts ends at such a record: recorder.store.adoption);
- every payload parses through recorder/store/kinds.py and gives back the bytes recorded;
- every segment ends with `segment_closed` counting the events before it;
- given a signing key (`signed = True`: RECORDER_SIGNING_KEY set while it records), every segment is signed
  by that key; without one, none is.

Every producer records its own tiny run while os.fsync is observed, so every check runs for every writer.
A producer that records into a run another writer began (a resumed trainer) names its segments in
`own_segments`. The fixtures are in tests/contract/conftest.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest

from recorder import signing
from recorder.store import canonical, kinds
from recorder.store.catalogue import critical_kinds
from recorder.store.reader import Segment, read_segment
from recorder.store.run import RunDir
from recorder.store.segment import list_segments, parse_segment_name
from recorder.verify import verify_run


@dataclass
class Recorded:
    """A run a producer recorded, the (segment path, file size) of every fsync made meanwhile, and the public
    key (hex) it was recorded with, if any."""

    run: RunDir
    fsyncs: list[tuple[str, int]] | None = field(default=None)
    public_key: str | None = None


class _FsyncObserver:
    """Wraps os.fsync: records which file was synced at which size, then calls the real fsync."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self._real: Callable[[int], None] = os.fsync

    def __call__(self, fd: int) -> None:
        try:
            self.calls.append((os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_size))
        except OSError:
            pass
        self._real(fd)


def record_observed(contract: WriterContract, root: Path) -> Recorded:
    """Run the producer with os.fsync observed."""
    observer = _FsyncObserver()
    public_key = None
    with pytest.MonkeyPatch.context() as mp:
        if contract.signed:
            (public_key,) = signing.load_trusted([signing.generate(root / "signing-key")])
            mp.setenv(signing.SIGNING_KEY_ENV, str(root / "signing-key"))
        mp.setattr(os, "fsync", observer)
        run = contract.record(root)
    return Recorded(run, observer.calls, public_key)


def own_segments(run: RunDir, writer: str) -> list[Segment]:
    own = [p for p in list_segments(run.events) if (parse_segment_name(p.name) or ("",))[0] == writer]
    assert own, f"no {writer} segment in {run.path}"
    return [read_segment(p) for p in own]


class WriterContract:
    """Subclass with `writer` (the segment writer name) and `record`."""

    writer: ClassVar[str]
    signed: ClassVar[bool] = False
    durability: ClassVar[str] = "critical"

    def record(self, root: Path) -> RunDir:
        raise NotImplementedError

    def own_segments(self, run: RunDir) -> list[Segment]:
        """The segments this producer wrote: by default every segment of its writer name."""
        return own_segments(run, self.writer)

    def test_the_digest_chain_verifies(self, recorded: Recorded) -> None:
        report = verify_run(recorded.run.path)
        assert report.ok, report.problems

    def test_segments_are_signed_by_the_key_given_and_only_then(self, recorded: Recorded) -> None:
        report = verify_run(recorded.run.path)
        names = {s.name for s in self.own_segments(recorded.run)}
        own = [s for s in report.segments if s.name in names]
        assert own and [s.signed_by for s in own] == [recorded.public_key] * len(own)

    def test_seq_is_contiguous_from_zero(self, segments: list[Segment]) -> None:
        for s in segments:
            assert [e.seq for e in s.events()] == list(range(s.table.num_rows)), s.name

    def test_every_segment_is_closed(self, segments: list[Segment]) -> None:
        for s in segments:
            last = s.events()[-1]
            assert s.closed and s.torn is None, s.name
            assert kinds.SegmentClosed.from_event(last).events == last.seq, s.name

    def test_payloads_parse_and_give_back_their_bytes(self, segments: list[Segment]) -> None:
        for s in segments:
            for e in s.events():
                assert canonical.dumps(kinds.payload(e).to_data()) == e.data_json, f"{s.name} seq {e.seq}"

    def test_critical_kinds_are_fsynced_when_appended(self, recorded: Recorded, segments: list[Segment]) -> None:
        assert recorded.fsyncs is not None
        if self.durability == "at-close":
            self._check_synced_at_close(recorded.fsyncs, segments)
            return
        critical = critical_kinds()
        checked = 0
        framing = {"segment_opened", "segment_closed"}
        for s in segments:
            synced = {size for path, size in recorded.fsyncs if Path(path) == s.path.resolve()}
            events = s.events()
            for i, e in enumerate(events):
                if e.kind not in critical:
                    continue
                end = s.offsets[i + 1]
                if self.signed and e.kind not in framing:
                    assert events[i + 1].kind == "chain_signed", f"{s.name} seq {e.seq} ({e.kind}) is not signed"
                    end = s.offsets[i + 2]
                assert end in synced, f"{s.name} seq {e.seq} ({e.kind}) was not fsynced at byte {end}"
                checked += 1
        assert checked > 0, "no critical event to check"

    @staticmethod
    def _check_synced_at_close(fsyncs: list[tuple[str, int]], segments: list[Segment]) -> None:
        for s in segments:
            path = str(s.path.resolve())
            mine = [i for i, (p, _) in enumerate(fsyncs) if p == path]
            assert mine, f"{s.name} was never fsynced"
            assert fsyncs[mine[-1]][1] == s.path.stat().st_size, f"{s.name}: the last fsync did not cover the file"
            folder = str(s.path.parent.resolve())
            assert any(p == folder for p, _ in fsyncs[mine[-1] + 1 :]), f"{s.name}: events/ not fsynced after close"
