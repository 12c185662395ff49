"""recorder.adapters.mllog against mlperf_logging.mllog itself, driven through the reference's call sequence."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mlperf_logging.mllog import mllog as reference_mllog

from recorder.compat import ConfigConflictError, LogEncodeError, MetadataTypeError, NotConfiguredError
from recorder.compat import mllog as dropin
from recorder.store.reader import read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run
from tests.adoption.mllog_calls import Clock, calls_from_log, drive
from tests.helpers import run_cli

GBS256 = "qwen35_397b_grpo_rcp/GBS256/seed_1.out"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _logger(name: str) -> tuple[logging.Logger, Lines]:
    logger = logging.getLogger(name)
    logger.handlers.clear()
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handler = Lines()
    logger.addHandler(handler)
    return logger, handler


@pytest.fixture
def shared() -> Iterator[dropin.MLLogger]:
    """The drop-in's shared logger, restored after the test (it is process-global, like mllog's)."""
    saved = dict(vars(dropin.mllogger))
    yield dropin.mllogger
    dropin.mllogger.close()
    vars(dropin.mllogger).clear()
    vars(dropin.mllogger).update(saved)


def _reference_lines(calls: list, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    clock = Clock()
    monkeypatch.setattr(reference_mllog, "_current_time_ms", clock.now_ms)
    logger, out = _logger("test-reference-mllog")
    drive(reference_mllog.MLLogger(logger=logger), calls, clock)
    return out.lines


def _recorded_lines(run: RunDir) -> list[str]:
    events = [e for e in read_run(run).events if e.kind == "mllog_line"]
    return [e.data["line"] for e in sorted(events, key=lambda e: e.data["line_no"])]


def test_reference_sequence_records_what_mllog_writes(
    corpus: Path, tmp_path: Path, shared: dropin.MLLogger, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = calls_from_log(corpus / GBS256)
    expected = _reference_lines(calls, monkeypatch)
    clock = Clock()
    logger, echoed = _logger("test-dropin-echo")
    mirror = tmp_path / "mlperf.log"
    dropin.config(root=tmp_path / "runs", run_id="dropin", logger=logger, mirror_file=str(mirror), clock=clock.now_ns)
    drive(dropin.get_mllogger(), calls, clock)
    dropin.close()

    run = RunDir.open(tmp_path / "runs" / "dropin")
    recorded = _recorded_lines(run)
    # Both loggers were called from the same line of `drive`, so even file and lineno agree.
    assert recorded == expected
    assert echoed.lines == expected
    assert mirror.read_text().splitlines() == expected
    assert verify_run(run).ok


def test_lines_equal_the_real_log_apart_from_the_caller(corpus: Path, tmp_path: Path, shared: dropin.MLLogger) -> None:
    real = [t for t in (corpus / GBS256).read_text().splitlines() if ":::MLLOG" in t]
    clock = Clock()
    dropin.config(root=tmp_path, run_id="r", logger=_logger("test-dropin-quiet")[0], clock=clock.now_ns)
    drive(dropin.get_mllogger(), calls_from_log(corpus / GBS256), clock)
    dropin.close()

    recorded = _recorded_lines(RunDir.open(tmp_path / "r"))
    assert len(recorded) == len(real) == 88
    for mine, theirs in zip(recorded, real, strict=True):
        theirs_meta = json.loads(theirs.split(":::MLLOG ", 1)[1])["metadata"]
        ours = json.loads(mine.split(":::MLLOG ", 1)[1], object_pairs_hook=dict)
        ours["metadata"].update(file=theirs_meta["file"], lineno=theirs_meta["lineno"])
        assert ":::MLLOG " + json.dumps(ours) == theirs  # byte for byte: key order, floats, spacing


def test_events_carry_the_time_and_columns_the_line_states(
    corpus: Path, tmp_path: Path, shared: dropin.MLLogger
) -> None:
    clock = Clock()
    dropin.config(root=tmp_path, run_id="r", logger=_logger("test-dropin-quiet")[0], clock=clock.now_ns)
    drive(dropin.get_mllogger(), calls_from_log(corpus / GBS256), clock)
    dropin.close()

    events = [e for e in read_run(tmp_path / "r").events if e.kind == "mllog_line"]
    run_stop = next(e for e in events if e.key == "run_stop")
    assert run_stop.time_ns == 1784868623649 * 1_000_000  # the override, not the clock (5 s later)
    assert run_stop.data["metadata"] == {
        "file": run_stop.data["metadata"]["file"],
        "lineno": run_stop.data["metadata"]["lineno"],
        "samples_count": 4608,
        "status": "success",
    }
    assert (run_stop.samples_count, run_stop.step, run_stop.data["event_type"]) == (4608, None, "INTERVAL_END")
    stats = [e for e in events if e.key == "tracked_stats" and e.samples_count is not None]
    assert [e.step for e in stats[:4]] == [1, 1, 2, 2]
    assert all(e.time_ns == e.data["time_ms"] * 1_000_000 for e in events)
    assert [e.data["line_no"] for e in sorted(events, key=lambda e: (e.segment, e.seq))] == list(range(1, 89))


def test_replay_as_recorded_gives_the_lines_back(
    corpus: Path, tmp_path: Path, shared: dropin.MLLogger, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = calls_from_log(corpus / GBS256)
    expected = _reference_lines(calls, monkeypatch)
    clock = Clock()
    dropin.config(root=tmp_path, run_id="r", logger=_logger("test-dropin-quiet")[0], clock=clock.now_ns)
    drive(dropin.get_mllogger(), calls, clock)
    dropin.close()

    out = tmp_path / "as-recorded.log"
    done = run_cli(
        "replay", str(tmp_path / "r"), "--ruleset", "6.1.0", "--interpretation", "as-recorded", "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines() == expected
    # the drop-in recorded only lines: the batch size comes from them, so the passing step is known
    scores = [json.loads(row) for row in (tmp_path / "r" / "derived" / "scores.jsonl").read_text().splitlines()]
    [as_recorded] = [s for s in scores if s["interpretation"] == "as-recorded"]
    assert (as_recorded["status"], as_recorded["passing_step"]) == ("success", 18)  # 4608 samples / GBS 256


def test_stack_offset_finds_the_same_caller_as_mllog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A wrapper adds frames (mlperf-common's adds two and sets default_stack_offset=3); both libraries
    # must then name the wrapper's caller, i.e. this function, at the same line.
    ref_logger, ref_out = _logger("test-reference-offset")
    ours_logger, ours_out = _logger("test-dropin-offset")
    run = RunDir.create(tmp_path, "r")
    ref = reference_mllog.MLLogger(logger=ref_logger, default_stack_offset=2)
    ours = dropin.MLLogger(logger=ours_logger, default_stack_offset=2, run=run, clock=lambda: 7_000_000)
    monkeypatch.setattr(reference_mllog, "_current_time_ms", lambda: 7)

    def wrapped(logger: object) -> None:
        logger.event(key="seed", value=1)  # type: ignore[attr-defined]

    for logger in (ref, ours):
        wrapped(logger)
    ours.close()
    assert ours_out.lines == ref_out.lines
    assert json.loads(ours_out.lines[0].split(" ", 1)[1])["metadata"]["file"] == __file__


def test_unique_logs_only_on_its_rank(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r")
    logger, out = _logger("test-dropin-unique")
    rank1 = dropin.MLLogger(logger=logger, run=run, rank=1, clock=lambda: 0)
    rank1.event(key="a", value=1, unique=True)  # rank 0's job
    rank1.event(key="b", value=2, unique=True, unique_log_rank=1)
    rank1.event(key="c", value=3)  # mllog semantics: every process logs
    rank1.close()
    assert [json.loads(x.split(" ", 1)[1])["key"] for x in out.lines] == ["b", "c"]
    assert [e.segment for e in read_run(run).events if e.kind == "mllog_line"] == ["mllog-rank1-0001.arrows"] * 2


def test_numpy_values_are_recorded_as_mllog_spells_them(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    run = RunDir.create(tmp_path, "r")
    ours = dropin.MLLogger(logger=_logger("test-dropin-np")[0], run=run, clock=lambda: 0)
    ours.event(key="eval_accuracy", value=np.float32(0.5), metadata={"samples_count": np.int64(256)})
    ours.close()
    (event,) = [e for e in read_run(run).events if e.kind == "mllog_line"]
    assert (event.value, event.samples_count) == (0.5, 256)
    assert '"value": 0.5, "metadata": {' in event.data["line"]


def test_bad_input_raises_instead_of_dropping_the_line(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r")
    ours = dropin.MLLogger(logger=_logger("test-dropin-bad")[0], run=run, clock=lambda: 0)
    with pytest.raises(LogEncodeError, match="'seed'"):
        ours.event(key="seed", value=object())
    with pytest.raises(MetadataTypeError, match="must be a dict"):
        ours.event(key="seed", value=1, metadata=["step", 1])  # type: ignore[arg-type]
    ours.close()
    assert [e.kind for e in read_run(run).events if e.kind == "mllog_line"] == []


def test_unconfigured_logger_says_how_to_configure(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RECORDER_RUN", raising=False)
    ours = dropin.MLLogger(logger=_logger("test-dropin-none")[0])
    with pytest.raises(NotConfiguredError, match="mllog.config"):
        ours.event(key="seed", value=1)
    run = RunDir.create(tmp_path, "r")
    monkeypatch.setenv("RECORDER_RUN", str(run.path))
    ours.event(key="seed", value=1)
    ours.close()
    assert [e.key for e in read_run(run).events if e.kind == "mllog_line"] == ["seed"]


def test_config_rejects_unknown_or_conflicting_options(shared: dropin.MLLogger, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="unknown options"):
        dropin.config(mirror="x.log")
    with pytest.raises(ConfigConflictError, match="not both"):
        dropin.config(run=tmp_path, root=tmp_path)


def test_config_with_a_new_run_closes_the_previous_segment(tmp_path: Path, shared: dropin.MLLogger) -> None:
    quiet = _logger("test-dropin-quiet2")[0]
    dropin.config(root=tmp_path, run_id="a", logger=quiet, clock=lambda: 0)
    dropin.get_mllogger().event(key="seed", value=1)
    dropin.config(root=tmp_path, run_id="b")
    dropin.get_mllogger().event(key="seed", value=2)
    dropin.close()
    for name in ("a", "b"):
        report = verify_run(tmp_path / name)
        assert report.ok and all(s.closed for s in report.segments)
    shutil.rmtree(tmp_path / "a")


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=8)
    | st.floats(allow_nan=True, allow_infinity=True)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.text(min_size=1, max_size=12),
    value=json_values,
    metadata=st.dictionaries(
        st.sampled_from(["step", "samples_count", "status", "epoch_num", "x"]), json_scalars, max_size=4
    ),
    time_ms=st.none() | st.integers(0, 2**42),
    method=st.sampled_from(["start", "end", "event"]),
)
def test_any_call_gives_mllogs_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    key: str,
    value: object,
    metadata: dict,
    time_ms: int | None,
    method: str,
) -> None:
    monkeypatch.setattr(reference_mllog, "_current_time_ms", lambda: 123)
    ref_logger, ref_out = _logger("test-reference-prop")
    run = RunDir.create(tmp_path, f"r{len(list(tmp_path.iterdir()))}")
    ours = dropin.MLLogger(logger=_logger("test-dropin-prop")[0], run=run, clock=lambda: 123_000_000)
    for logger in (reference_mllog.MLLogger(logger=ref_logger), ours):
        getattr(logger, method)(key=key, value=value, metadata=dict(metadata), time_ms=time_ms)
    ours.close()
    (event,) = [e for e in read_run(run).events if e.kind == "mllog_line"]
    assert [event.data["line"]] == ref_out.lines
    assert event.time_ns == (123 if time_ms is None else time_ms) * 1_000_000
    assert event.key == key


def test_threads_keep_line_numbers_file_order_and_event_order_in_step(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r")
    mirror = tmp_path / "mirror.log"
    logger, out = _logger("test-dropin-threads")
    logger.addHandler(logging.FileHandler(mirror))
    ours = dropin.MLLogger(logger=logger, run=run)
    ours.mirror_file = str(mirror)

    def work(n: int) -> None:
        for i in range(50):
            ours.event(key="tracked_stats", value={"thread": n, "i": i}, metadata={"step": i})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ours.close()
    events = sorted((e for e in read_run(run).events if e.kind == "mllog_line"), key=lambda e: e.seq)
    assert [e.data["line_no"] for e in events] == list(range(1, 201))
    assert [e.data["line"] for e in events] == out.lines == mirror.read_text().splitlines()


def test_both_import_spellings_of_mlperf_logging_work_and_share_one_module(tmp_path: Path) -> None:
    """A trainer's `import mlperf_logging.mllog as mllog` becomes `import recorder.compat.mllog as mllog`, its
    `from mlperf_logging import mllog` becomes `from recorder.compat import mllog`: one module either way."""
    script = (
        "import recorder.compat.mllog as spelled_as_module\n"
        "from recorder.compat import mllog as spelled_from_package\n"
        "assert spelled_as_module is spelled_from_package\n"
        "print(spelled_as_module.__name__, callable(spelled_as_module.config))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["recorder.adapters.mllog", "True"]
