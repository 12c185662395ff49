"""JSON nested deeper than Python parses (`[[[[...]]]]`, 100,000 deep: a RecursionError, not a ValueError) in
every file a forger controls: an event's data with the chain recomputed, a results.json with its sha256
recomputed, a safetensors header, an mllog line. Each ends in a clean error or a named problem, never a
traceback."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest

from evaluator.auditing.audit import AuditOptions, audit_run
from recorder.checkpoints.hugging_face.safetensors_header import HeaderError, read_header
from recorder.store import canonical
from recorder.store.events import GENESIS_DIGEST, arrow_schema, canonical_bytes, chain_digest
from recorder.store.segment import END_OF_STREAM, row_encoder, schema_message
from recorder.verify import verify_run
from replay.mllog_format import parse_line
from tests.helpers import run_cli
from tests.integrity.forge import evaluator_segment as _evaluator
from tests.integrity.forge import rows

DEEP = "[" * 100_000 + "]" * 100_000


def test_an_event_whose_data_nests_too_deep_is_a_clean_error(attacked: Path) -> None:
    previous, body = GENESIS_DIGEST, [schema_message(arrow_schema())]
    for seq, e in enumerate(rows(_evaluator(attacked))):  # the writer's encoding, chain recomputed
        data = '{"checkpoint":' + DEEP + "}" if e["kind"] == "eval_start" else canonical.dumps(e["data"])
        value = None if e["value"] is None else canonical.dumps(e["value"])
        cols = (e["run_id"], e["writer"], seq, e["time_ns"], e["mono_ns"], e["kind"], e["step"])
        cols += (e["samples_count"], e["key"], value, data)
        previous = chain_digest(previous, canonical_bytes(*cols))
        body.append(row_encoder().encode((*cols, previous.hex())))
    _evaluator(attacked).write_bytes(b"".join([*body, END_OF_STREAM]))
    verify = run_cli("verify", str(attacked))
    assert verify.returncode == 1 and "Traceback" not in verify.stderr, verify.stdout + verify.stderr
    assert (
        "ALTERED: evaluator-0001.arrows seq 0: data is not JSON" in verify.stdout and "[rule payload]" in verify.stdout
    )
    replay = run_cli("replay", str(attacked))
    assert replay.returncode == 1 and "Traceback" not in replay.stderr, replay.stdout + replay.stderr
    assert "fails verification (evaluator-0001.arrows seq 0: data is not JSON" in replay.stderr


def test_a_results_json_nesting_too_deep_is_named_by_verify_and_missing_evidence_to_audit(attacked: Path) -> None:
    from tests.integrity.forge import write

    events = rows(_evaluator(attacked))
    body = DEEP.encode()
    (attacked / "derived" / "evals" / "step_0000018" / "results.json").write_bytes(body)
    result = next(e for e in events if e["kind"] == "eval_result" and e["step"] == 18)
    result["data"] = {**result["data"], "results_sha256": hashlib.sha256(body).hexdigest()}
    write(_evaluator(attacked), events)
    assert [(p.rule, p.seq) for p in verify_run(attacked).problems] == [("eval-evidence", result["seq"])]
    (step,) = audit_run(attacked, AuditOptions(force=True, steps=(18,))).steps
    assert step.status == "missing evidence" and "is not JSON" in step.detail


def test_a_safetensors_header_nesting_too_deep_is_a_header_error(tmp_path: Path) -> None:
    header = ('{"__metadata__":' + DEEP + "}").encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(HeaderError, match="not JSON"):
        read_header(path)


def test_an_mllog_line_nesting_too_deep_is_malformed() -> None:
    parsed = parse_line(":::MLLOG " + DEEP)
    assert parsed is not None and parsed.error == "malformed JSON: nested deeper than Python parses"


def test_import_and_cache_files_nesting_too_deep_are_refused_or_ignored(tmp_path: Path) -> None:
    from recorder.adapters import nemo, result_folder
    from recorder.history import compact
    from recorder.store.run import RunDir
    from replay.errors import ImportFileError

    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    with pytest.raises(ImportFileError, match="not readable JSON"):
        result_folder._read_json(deep)  # a result folder's JSON files
    with pytest.raises(nemo.CheckpointLayoutError, match="nested deeper than Python parses"):
        nemo._load_json(deep)  # a NeMo-RL checkpoint's config
    run = RunDir.create(tmp_path, "r")
    compact.manifest_path(run).parent.mkdir(parents=True, exist_ok=True)
    compact.manifest_path(run).write_text(DEEP)
    assert compact.read_manifest(run) is None  # only a cache: unreadable means absent
