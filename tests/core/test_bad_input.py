"""Bad input gets a clear message and the right exit code, never a traceback."""

from pathlib import Path

import pyarrow as pa

from recorder.store.events import arrow_schema
from recorder.store.log import LogWriter
from recorder.store.run import RunDir
from tests.helpers import run_cli


def _run_with_events(root: Path) -> RunDir:
    run = RunDir.create(root, "r")
    with LogWriter(run, "trainer") as w:
        w.append("run_start")
    return run


def _no_traceback(out) -> None:  # type: ignore[no-untyped-def]
    assert "Traceback" not in out.stdout + out.stderr


def test_missing_run_directory(tmp_path: Path) -> None:
    for command in ("verify", "events"):
        out = run_cli(command, str(tmp_path / "nope"))
        assert out.returncode == 2 and "no such run directory" in out.stderr
        _no_traceback(out)


def test_not_a_run_directory(tmp_path: Path) -> None:
    out = run_cli("verify", str(tmp_path))
    assert out.returncode == 2 and "not a run directory (no events/ inside)" in out.stderr
    _no_traceback(out)


def test_garbage_file_in_events(tmp_path: Path) -> None:
    run = _run_with_events(tmp_path)
    (run.events / "trainer-0002.arrows").write_bytes(b"this is not arrow at all" * 10)
    (run.events / "notes.txt").write_text("hello")
    out = run_cli("verify", str(run.path))
    assert out.returncode == 1
    assert "trainer-0002.arrows seq 0: not an Arrow event segment" in out.stdout
    assert "notes.txt: unexpected file in events/" in out.stdout
    _no_traceback(out)
    out = run_cli("events", str(run.path))
    assert out.returncode == 1 and "trainer-0002.arrows" in out.stderr
    _no_traceback(out)


def test_truncated_segment_is_a_warning(tmp_path: Path) -> None:
    run = _run_with_events(tmp_path)
    segment = run.events / "trainer-0001.arrows"
    data = segment.read_bytes()
    segment.write_bytes(data[: len(data) - 20])  # cut inside the closing record
    out = run_cli("verify", str(run.path))
    assert out.returncode == 0 and "warning:" in out.stderr and "torn tail at byte" in out.stderr  # warnings: stderr
    out = run_cli("events", str(run.path))
    assert out.returncode == 0 and "run_start" in out.stdout


def test_segment_of_a_newer_schema_version(tmp_path: Path) -> None:
    run = _run_with_events(tmp_path)
    newer = arrow_schema().with_metadata({b"recorder.schema_version": b"2"})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, newer) as writer:
        writer.write_table(newer.empty_table())
    (run.events / "trainer-0002.arrows").write_bytes(sink.getvalue().to_pybytes())
    out = run_cli("verify", str(run.path))
    assert out.returncode == 2
    assert "event schema v2" in out.stderr and "upgrade recorder" in out.stderr
    _no_traceback(out)


def test_unknown_kind_option(tmp_path: Path) -> None:
    run = _run_with_events(tmp_path)
    out = run_cli("events", str(run.path), "--kind", "bogus")
    assert out.returncode == 2 and "unknown event kind 'bogus'" in out.stderr
    _no_traceback(out)


def test_usage_error_exits_2() -> None:
    out = run_cli("verify")
    assert out.returncode == 2 and out.stderr == "error: missing argument RUN_DIR\n"


def test_event_json_altered_after_the_append_is_a_typed_error(tmp_path: Path) -> None:
    """Reading does not check digests (verify does): a value or data that no longer parses raises the
    project's error naming segment and seq, so replay and history never crash with a JSON traceback."""
    import pytest

    from recorder.errors import EventDecodeError
    from recorder.store.reader import read_run

    run = RunDir.create(tmp_path, "r")
    with LogWriter(run, "trainer") as w:
        w.append("step_metrics", step=1, data={"loss": 0.5}, key="k", value=[1, 2])
    segment = run.events / "trainer-0001.arrows"
    segment.write_bytes(segment.read_bytes().replace(b'{"loss":0.5}', b'{"loss"?0.5}').replace(b"[1,2]", b"[1,2}"))
    [event] = [e for e in read_run(run.path).events if e.kind == "step_metrics"]
    with pytest.raises(EventDecodeError, match="trainer-0001.arrows seq 0: data is not JSON"):
        event.data
    with pytest.raises(EventDecodeError, match="trainer-0001.arrows seq 0: value is not JSON"):
        event.value
    out = run_cli("verify", str(run.path))
    assert out.returncode == 1 and "trainer-0001.arrows seq 0" in out.stdout
