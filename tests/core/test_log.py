"""The writer and reader: what is appended is read back, in a deterministic order, with its digest chain."""

import json
import threading
import time
from pathlib import Path

import pytest

from recorder.errors import EncodeError, RunExistsError, UnknownKindError, WriterClosedError
from recorder.store.events import GENESIS_DIGEST, canonical_bytes, chain_digest
from recorder.store.log import LogWriter
from recorder.store.reader import merge, read_run
from recorder.store.run import RunDir
from recorder.verify import verify_run

# A whole run_opened payload: verify also checks that each kind's data is what the catalogue says.
OPENED = {
    "benchmark": "qwen35_397b_grpo",
    "ruleset": "6.1.0",
    "division": "open",
    "global_batch_size": 256,
    "config": {},
    "provenance": {},
    "resumed_from": None,
}


def test_round_trip_and_digest_chain(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r1")
    with LogWriter(run, "trainer") as w:
        appended = [
            w.append("run_opened", data=OPENED),
            w.append("mllog_config", key="global_batch_size", value=256),
            w.append("step_metrics", step=1, samples_count=256, data={"loss": float("nan"), "reward": 0.25}),
            w.append("weight_update", step=1, samples_count=256, time_ns=123),
        ]
    log = read_run(run.path)
    # one segment: its own order, even though time_ns=123 is earlier than the others
    assert [e.kind for e in log.events] == [
        "run_opened",
        "mllog_config",
        "step_metrics",
        "weight_update",
        "segment_closed",
    ]
    by_seq = log.events
    assert by_seq[:4] == appended
    assert by_seq[1].value == 256 and by_seq[2].data == {"loss": "NaN", "reward": 0.25}
    previous = GENESIS_DIGEST
    for e in by_seq:
        previous = chain_digest(previous, canonical_bytes(*e.row()[:-1]))
        assert previous.hex() == e.digest
    assert by_seq[-1].data == {"events": 4}
    assert verify_run(run, facts=False).ok  # the bytes: four events are no possible run (no train_stop)


def test_each_writer_session_gets_a_new_segment(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r1")
    for _ in range(3):
        with LogWriter(run, "evaluator") as w:
            w.append("eval_start", step=18)
    names = sorted(p.name for p in run.events.iterdir())
    assert names == ["evaluator-0001.arrows", "evaluator-0002.arrows", "evaluator-0003.arrows"]


def test_bad_appends_are_refused_and_lose_nothing(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r1")
    w = LogWriter(run, "trainer")
    w.append("run_start")
    with pytest.raises(UnknownKindError, match="'run_strat'"):
        w.append("run_strat")
    with pytest.raises(EncodeError, match="step must be an int"):
        w.append("weight_update", step="3")  # type: ignore[arg-type]
    with pytest.raises(EncodeError, match="not JSON-serializable"):
        w.append("step_metrics", data={"x": object()})
    w.close()
    with pytest.raises(WriterClosedError):
        w.append("run_start")
    assert [e.kind for e in read_run(run.path).events] == ["run_start", "segment_closed"]
    assert verify_run(run).ok


def test_existing_run_id_is_refused(tmp_path: Path) -> None:
    RunDir.create(tmp_path, "same")
    with pytest.raises(RunExistsError, match="same"):
        RunDir.create(tmp_path, "same")


def test_group_commit_fsyncs_noncritical_events_within_100ms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    synced: list[float] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(time.monotonic()), real_fsync(fd)))
    run = RunDir.create(tmp_path, "r1")
    w = LogWriter(run, "trainer")
    synced.clear()
    w.append("step_metrics", step=1, data={})  # not critical: no fsync inside append
    assert synced == []
    time.sleep(0.35)
    assert len(synced) >= 1  # the group commit came by
    synced.clear()
    w.append("weight_update", step=1)  # critical: fsynced before append returns
    assert len(synced) == 1
    w.close()


def test_thread_shared_writer_loses_nothing(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r1")
    w = LogWriter(run, "trainer")

    def worker(name: str) -> None:
        for i in range(300):
            w.append("step_metrics", step=i, data={"thread": name})

    threads = [threading.Thread(target=worker, args=(f"t{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    events = read_run(run.path).events
    assert len(events) == 1201
    per_thread = {f"t{k}": [e.step for e in events if e.data.get("thread") == f"t{k}"] for k in range(4)}
    assert all(steps == list(range(300)) for steps in per_thread.values())  # each thread's order kept
    assert sorted(e.seq for e in events) == list(range(1201))
    assert verify_run(run).ok


def test_merge_keeps_segment_order_when_the_clock_steps_back(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r1")
    times = iter([100, 200, 50, 300])  # the wall clock stepped back between the 2nd and 3rd append
    with LogWriter(run, "trainer", clock=lambda: next(times)) as w:
        for step in range(1, 4):
            w.append("weight_update", step=step)
    events = [e for e in read_run(run.path).events if e.kind == "weight_update"]
    assert [e.step for e in events] == [1, 2, 3]


def test_merge_does_not_depend_on_listing_order(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r1")
    for writer in ("trainer", "evaluator", "import"):
        with LogWriter(run, writer, clock=lambda: 1000) as w:  # all ties on time
            w.append("run_start")
    segments = [s.events() for s in read_run(run.path).segments]
    assert merge(segments) == merge(list(reversed(segments))) == read_run(run.path).events
    assert [e.writer for e in merge(segments)][::2] == ["evaluator", "import", "trainer"]


def test_events_json_output(tmp_path: Path) -> None:
    from tests.helpers import run_cli

    run = RunDir.create(tmp_path, "r1")
    with LogWriter(run, "trainer") as w:
        w.append("weight_update", step=7, samples_count=1792)
    out = run_cli("events", str(run.path), "--kind", "weight_update", "--format", "json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["kind"], r["step"], r["samples_count"]) for r in rows] == [("weight_update", 7, 1792)]
