"""`verify_run(keep_events=True)` hands an intact run's events to the caller (score reads a run once): they
are exactly what `read_run` reads, segment by segment and merged the same way; a damaged run gives none."""

from __future__ import annotations

from pathlib import Path

from recorder.store.reader import read_run
from recorder.store.segment import list_segments
from recorder.verify import verify_run
from tests.kit.synthetic import record_evals, record_worked_example


def test_kept_events_are_read_runs_events(tmp_path: Path) -> None:
    run = record_worked_example(tmp_path, "worked")
    record_evals(run, [(19, 0.72), (18, 0.70), (20, 0.71)], 256, 1300, 100, segments=2)  # two evaluator sessions
    assert len(list_segments(run.events)) == 3
    report = verify_run(run.path, keep_events=True)
    assert report.ok and report.events == read_run(run.path).events
    assert verify_run(run.path).events is None  # not asked: nothing kept


def test_a_damaged_run_keeps_no_events(tmp_path: Path) -> None:
    run = record_worked_example(tmp_path, "worked")
    segment = list_segments(run.events)[0]
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0x01  # one flipped bit in the middle of an event
    segment.write_bytes(bytes(data))
    report = verify_run(run.path, keep_events=True)
    assert not report.ok and report.events is None
