"""The payload classes (recorder/store/kinds.py) against the catalogue, and against events as recorded. A kind's keys
are declared once, as its payload class's fields: the catalogue says who writes the kind, when, and what each
key holds, and names no key the class does not have."""

from __future__ import annotations

import math
import re
from dataclasses import fields
from pathlib import Path

import pytest

from recorder.store import canonical, kinds
from recorder.store.catalogue import catalogue
from recorder.store.log import LogWriter
from recorder.store.reader import read_run
from recorder.store.run import RunDir

RCP_LOG = Path("qwen35_397b_grpo_rcp/GBS256/seed_1.out")


def _documented_fields(cls: type[kinds.Payload]) -> set[str]:
    return {f.name for f in fields(cls) if not f.metadata.get("flatten")}


def test_every_catalogue_kind_has_a_class_and_every_class_an_entry() -> None:
    assert set(kinds.PAYLOADS) == set(catalogue())
    for kind, cls in kinds.PAYLOADS.items():
        assert cls.KIND == kind


@pytest.mark.parametrize("kind", sorted(catalogue()))
def test_the_catalogue_describes_every_field_and_lists_none_itself(kind: str) -> None:
    entry = catalogue()[kind]
    assert "keys" not in entry  # the payload class is the one list of a kind's keys
    for key in _documented_fields(kinds.PAYLOADS[kind]):
        assert re.search(rf"\b{key}\b", entry["data"]), f"{kind}: data text does not mention {key}"
    if not _documented_fields(kinds.PAYLOADS[kind]):
        assert entry["data"].startswith("{}"), f"{kind}: a kind without keys says its data is {{}}"


def _round_trips(run: RunDir) -> int:
    events = read_run(run).events
    for e in events:
        parsed = kinds.payload(e)
        assert canonical.dumps(parsed.to_data()) == e.data_json, f"{e.segment} seq {e.seq} ({e.kind})"
    return len(events)


def test_recorded_runs_round_trip_byte_for_byte(tmp_path: Path) -> None:
    from tests.kit.synthetic import record_run, record_worked_example

    runs = [
        record_worked_example(tmp_path, "worked"),
        record_run(tmp_path, "synthetic", evals=[(19, 0.72), (18, 0.70)], closed=True, extra_results=[(20, 0.5)]),
    ]
    assert sum(_round_trips(r) for r in runs) > 50


def test_an_imported_log_round_trips_byte_for_byte(tmp_path: Path, corpus: Path) -> None:
    from recorder.adapters.mllog_import import import_file

    report = import_file(corpus / RCP_LOG, tmp_path, "rcp")
    assert report.kinds["step_metrics"] > 0  # foreign names (reduced_train_loss, ...) kept in `stats`
    assert _round_trips(report.run) > report.lines


def test_append_takes_the_kind_from_the_payload(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r")
    with LogWriter(run, "trainer") as w:
        event = w.append(kinds.TrainStop(status="completed", reason=""), step=3)
    assert (event.kind, event.data) == ("train_stop", {"status": "completed", "reason": ""})
    assert kinds.TrainStop.from_event(event) == kinds.TrainStop(status="completed", reason="")


def test_optional_keys_left_out_and_null_kept_where_it_means_something() -> None:
    assert kinds.EvalResult(metric="pass@4", n=251).to_data() == {"metric": "pass@4", "n": 251}
    assert kinds.InitStart(warmup=kinds.NULL).to_data() == {"warmup": None}
    assert kinds.InitStart(line_no=3).to_data() == {"line_no": 3}
    assert kinds.InitStart.from_data({"warmup": None}).warmup is kinds.NULL
    assert kinds.InitStart.from_data({}).warmup is None


def test_non_finite_floats_read_back_as_floats() -> None:
    parsed = kinds.StepMetrics.from_data({"loss": "NaN", "reward": "-Infinity"})
    assert math.isnan(parsed.loss or 0.0) and parsed.reward == -math.inf
    assert canonical.dumps(parsed.to_data()) == '{"loss":"NaN","reward":"-Infinity"}'


def test_foreign_step_metrics_keep_their_own_names() -> None:
    data = {"reward": 0.5, "reduced_train_loss": -0.08, "loss": "not a number"}
    parsed = kinds.StepMetrics.from_data(data)
    assert parsed.reward == 0.5 and parsed.loss is None
    assert parsed.stats == {"reduced_train_loss": -0.08, "loss": "not a number"}
    assert parsed.to_data() == data


@pytest.mark.parametrize(
    ("kind", "data", "message"),
    [
        ("train_stop", {"status": "done", "reason": ""}, "status is str 'done'"),
        ("train_stop", {"status": "completed"}, "lacks reason"),
        ("eval_failed", {"reason": "x", "error": "E", "segmnt": "a"}, "unexpected key 'segmnt'"),
        ("checkpoint_committed", {"path": "c", "sha256": 1}, "sha256 is int 1"),
    ],
)
def test_a_malformed_payload_names_segment_and_seq(
    tmp_path: Path, kind: str, data: dict[str, object], message: str
) -> None:
    run = RunDir.create(tmp_path, "r")
    with LogWriter(run, "trainer") as w:
        w.append("block_start", step=1)
        event = w.append(kind, data=data)
    with pytest.raises(kinds.PayloadError, match=rf"trainer-0001\.arrows seq 1 \({kind}\):.*{re.escape(message)}"):
        kinds.payload(event)


def test_from_event_refuses_another_kind(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path, "r")
    with LogWriter(run, "trainer") as w:
        event = w.append(kinds.BlockStart(), step=1)
    with pytest.raises(kinds.PayloadError, match="seq 0 \\(block_start\\): not a block_stop event"):
        kinds.BlockStop.from_event(event)
