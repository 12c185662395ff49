"""Replay streams. A run is folded once into small facts per step, then its log is written line by
line, reading each step's metrics back only when its line is written; the bytes are those of the in-memory
derivation. A slow test replays a ~200 MB run and bounds the peak RSS of `recorder replay`."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from recorder.store.events import Event
from recorder.store.reader import read_run, stream_run
from recorder.store.run import RunDir
from replay.checkers.preflight import clock_steps
from replay.derive import derive_from, derive_run
from replay.errors import MissingFactError
from replay.interpretations import INTERPRETATIONS
from replay.rulesets import get_known
from replay.run_scan import scan_run
from replay.source import Streamed
from tests.helpers import run_cli
from tests.replay.runs import CASES, record_run

BENCH = Path(__file__).resolve().parents[2] / "bench" / "replay_memory.py"
MEASURED_200_MIB = 152  # peak RSS (MiB) of the bench's replay at --mb 200, bench/README.md (bench/replay_memory.py)


class Watched:
    """A streamed run that counts the step_metrics events derivation has drawn back from it."""

    def __init__(self, run: RunDir) -> None:
        self.inner = Streamed(run)
        self.drawn = 0

    def events(self) -> Iterator[Event]:
        return self.inner.events()

    def segment_events(self, segment: str, kind: str) -> Iterator[Event]:
        for e in self.inner.segment_events(segment, kind):
            self.drawn += kind == "step_metrics"
            yield e


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_derivation_is_byte_identical_to_the_in_memory_one(tmp_path: Path, case: str) -> None:
    run = record_run(tmp_path, case, **CASES[case])  # type: ignore[arg-type]
    events = read_run(run).events
    assert list(stream_run(run)) == events  # the same events, in the same order
    scan = scan_run(Streamed(run))
    assert all(m.event is None for m in scan.timeline.metrics)  # facts only: no event is held
    for name in INTERPRETATIONS:
        if name == "as-recorded":
            continue
        want = derive_run(events, "6.1.0", name)
        got = derive_from(scan.timeline, scan.source, get_known("6.1.0"), name)
        assert got.text() == want.text() and len(got.lines) == len(want.lines), (case, name)
        assert (got.status, got.passing_step, got.run_stop_ns, got.minutes) == (
            want.status,
            want.passing_step,
            want.run_stop_ns,
            want.minutes,
        ), (case, name)


def test_each_steps_metrics_are_read_only_when_its_line_is_written(tmp_path: Path) -> None:
    """No read-ahead: when the tracked_stats line of step s is written, at most s step_metrics were drawn."""
    run = record_run(tmp_path, "long", gbs=3840, steps=300, evals=[(299, 0.6), (300, 0.72)])
    source = Watched(run)
    scan = scan_run(source)
    d = derive_from(scan.timeline, source, get_known("6.1.0"), "official")
    assert source.drawn == 0  # deriving decides everything from the facts; no line is written yet
    seen = 0
    for line in d.lines:
        if '"key": "tracked_stats"' in line:
            step = int(line.split('"step": ')[1].split("}")[0].split(",")[0])
            seen += 1
            assert step == seen and source.drawn == step, (step, source.drawn)
    assert seen == 300 and source.drawn == 300


def test_a_segment_changed_between_the_passes_is_a_clear_error(tmp_path: Path) -> None:
    run = record_run(tmp_path, "gone", **CASES["val_start_pass"])  # type: ignore[arg-type]
    scan = scan_run(Streamed(run))
    d = derive_from(scan.timeline, scan.source, get_known("6.1.0"), "official")
    (run.events / "trainer-0001.arrows").write_bytes(b"")  # emptied after the facts were taken
    with pytest.raises(MissingFactError, match=r"trainer-0001.arrows seq \d+: step 1's step_metrics is no longer"):
        list(d.lines)


def test_clock_steps_are_found_one_event_at_a_time(tmp_path: Path) -> None:
    """The wall clock set back an hour from seq 5 of the trainer's segment on: one step, at seq 5."""
    run = record_run(tmp_path, "clock", **CASES["later_pass"])  # type: ignore[arg-type]
    events = read_run(run).events
    assert clock_steps(stream_run(run)) == clock_steps(events) == []
    hour = 3600 * 10**9
    moved = [replace(e, time_ns=e.time_ns - hour) if e.writer == "trainer" and e.seq >= 5 else e for e in events]
    found = clock_steps(moved)
    assert [(c.segment, c.seq) for c in found] == [("trainer-0001.arrows", 5)]
    assert found[0].back_ns == hour - 60 * 10**9  # block_start at run_start, step 1 60 s later


@pytest.mark.slow
def test_replay_of_a_200_mb_run_stays_in_bounded_memory(tmp_path: Path) -> None:
    """bench/replay_memory.py's long run at 200 MiB, replayed as `recorder replay` does (less mlperf-logging's
    checker): its peak RSS stays under 3x what bench/README.md reports for it, where reading every
    event took about 12x the segment."""
    spec = importlib.util.spec_from_file_location("replay_memory", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    run, steps = bench.record(tmp_path, 200)
    _, rss_mib, out = bench.measured([sys.executable, "-c", bench.REPLAY, str(run.path)])
    assert f"official: success, passing step {steps}" in out
    assert rss_mib < 3 * MEASURED_200_MIB, rss_mib
    assert run_cli("verify", str(run.path)).returncode == 0
