"""Tamper evidence: any flipped byte, deleted event or swapped pair makes verify fail, naming segment and seq."""

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from tests.helpers import run_cli

EVENTS = 12


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, tuple[int, ...]]:
    """A closed segment and the byte offsets of its events' messages."""
    run = RunDir.create(tmp_path_factory.mktemp("tamper"), "pristine")
    with LogWriter(run, "trainer") as w:
        for i in range(EVENTS):
            w.append(
                "step_metrics",
                step=i,
                samples_count=256 * i,
                key="k" * (i % 3) or None,
                value=None if i % 4 == 0 else i / 3,
                data={"loss": i * 0.5, "note": "é" * i},
            )
    segment = run.events / "trainer-0001.arrows"
    return segment, segment.read_bytes(), read_run(run.path).segments[0].offsets


def _tampered(tmp_path: Path, name: str, data: bytes) -> Path:
    run = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
    (run / "events").mkdir(parents=True)
    (run / "events" / name).write_bytes(data)
    return run


def _event_at(offsets: tuple[int, ...], position: int) -> int:
    return max(i for i, start in enumerate(offsets[:-1]) if start <= position)


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.data())
def test_flipping_any_byte_of_an_event_is_detected(pristine, tmp_path: Path, data: st.DataObject) -> None:
    segment, raw, offsets = pristine
    position = data.draw(st.integers(offsets[0], offsets[-1] - 1), label="byte")
    mask = data.draw(st.integers(1, 255), label="xor")
    altered = bytearray(raw)
    altered[position] ^= mask
    report = verify_run(_tampered(tmp_path, segment.name, bytes(altered)))
    assert not report.ok
    [problem] = report.problems
    assert problem.segment == segment.name
    assert problem.seq is not None and problem.seq <= _event_at(offsets, position)


@SETTINGS
@given(st.data())
def test_deleting_an_event_is_detected(pristine, tmp_path: Path, data: st.DataObject) -> None:
    segment, raw, offsets = pristine
    i = data.draw(st.integers(0, len(offsets) - 2), label="event")
    report = verify_run(_tampered(tmp_path, segment.name, raw[: offsets[i]] + raw[offsets[i + 1] :]))
    assert [(p.segment, p.seq) for p in report.problems] == [(segment.name, i)]


@SETTINGS
@given(st.data())
def test_swapping_two_events_is_detected(pristine, tmp_path: Path, data: st.DataObject) -> None:
    segment, raw, offsets = pristine
    i = data.draw(st.integers(0, len(offsets) - 3), label="first")
    j = data.draw(st.integers(i + 1, len(offsets) - 2), label="second")
    chunks = [raw[offsets[k] : offsets[k + 1]] for k in range(len(offsets) - 1)]
    chunks[i], chunks[j] = chunks[j], chunks[i]
    swapped = raw[: offsets[0]] + b"".join(chunks) + raw[offsets[-1] :]
    report = verify_run(_tampered(tmp_path, segment.name, swapped))
    assert [(p.segment, p.seq) for p in report.problems] == [(segment.name, i)]


def test_cli_names_segment_and_seq(pristine, tmp_path: Path) -> None:
    segment, raw, offsets = pristine
    altered = bytearray(raw)
    altered[offsets[5] + (offsets[6] - offsets[5]) // 2] ^= 0x20
    run = _tampered(tmp_path, segment.name, bytes(altered))
    out = run_cli("verify", str(run))
    assert out.returncode == 1
    assert f"{segment.name} seq 5" in out.stdout and "FAILED" in out.stdout


def test_an_untouched_copy_verifies(pristine, tmp_path: Path) -> None:
    segment, raw, _ = pristine
    run = _tampered(tmp_path, segment.name, raw)
    assert verify_run(run).ok
    shutil.rmtree(run)


# Every byte in the slow tier; every 7th in the default tier (each region: schema, events, end-of-stream).
@pytest.mark.parametrize("stride", [7, pytest.param(1, marks=pytest.mark.slow)])
def test_every_byte_of_a_closed_segment_is_covered(tmp_path: Path, stride: int) -> None:
    """Exhaustive companion of the property test: schema message, every event, end-of-stream marker."""
    import random

    run = RunDir.create(tmp_path, "small")
    with LogWriter(run, "evaluator") as w:
        for i in range(3):
            w.append("eval_result", step=18 + i, key="accuracy", value=0.7 + i / 100, data={"n": 251})
    segment = run.events / "evaluator-0001.arrows"
    raw = segment.read_bytes()
    rng = random.Random(7)
    target = tmp_path / "flipped"
    (target / "events").mkdir(parents=True)
    undetected = []
    for position in range(0, len(raw), stride):
        altered = bytearray(raw)
        altered[position] ^= rng.randrange(1, 256)
        (target / "events" / segment.name).write_bytes(bytes(altered))
        if verify_run(target).ok:
            undetected.append(position)
    assert undetected == []
