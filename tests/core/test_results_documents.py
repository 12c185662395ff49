"""results.json documents: the encoding (indent 1, keys in field order, UTF-8 as is, no NaN, final newline),
optional keys left out, the checked parse that names the key at fault, and the claims verify and audit read
from a file they do not trust."""

from __future__ import annotations

import json
import math
from dataclasses import fields, replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recorder.results.claims import EvaluationClaims
from recorder.results.document import ResultsDocError
from recorder.results.evaluation import (
    CommitRecord,
    PassAtKResults,
    SampleRow,
    SamplingSettings,
    ScoredCheckpoint,
    TaskSet,
)
from recorder.results.harness import HarnessTask
from recorder.results.zero_shot import ZeroShotStepResults, zero_shot_from_json

ROW = SampleRow(
    task=0,
    sample=1,
    seed=7,
    prompt_sha256="a" * 64,
    completion_sha256="b" * 64,
    target_sha256="c" * 64,
    reward=1.0,
    correct=True,
)
DOC = PassAtKResults(
    run_id="run-é",  # written as it is, not \u-escaped
    step=18,
    samples_count=4608,
    metric="pass@1",
    score=1.0,
    k=1,
    n_tasks=1,
    tasks_passed=1,
    target=0.5,
    passed=True,
    complete_task_set=False,
    settings=SamplingSettings(
        temperature=1.0, top_p=1.0, max_new_tokens=8, batch_size=2, workers="local", seeds="sample_seed(...)"
    ),
    checkpoint=ScoredCheckpoint(
        path="checkpoints/step_0000018",
        sha256="d" * 64,
        bytes=None,
        dtype="bf16",
        weight_update_ns=12,
        committed=CommitRecord(segment="trainer-0001.arrows", seq=40),
    ),
    fingerprint={"checked": False, "why": "--fingerprint off"},
    task_set=TaskSet(name="validation", n=1, of=251, sha256="e" * 64),
    task={"name": "addition", "spec_sha256": "f" * 64},
    backend={"name": "torch", "dtype": "bf16", "device": "cpu", "batch_invariant": True},
    provenance={"git_commit": None},
    unverified=(),
    timings={"start_ns": 1, "end_ns": 2, "score_s": 0.5},
    evaluator_segment="evaluator-0001.arrows",
    samples=(ROW,),
)


def _plain(doc: PassAtKResults) -> dict[str, Any]:
    """The document as nested dicts, built by hand in field order: what a writer of dicts would write."""
    return {
        f.name: (
            [r.to_dict() for r in doc.samples]
            if f.name == "samples"
            else {**doc.checkpoint.to_dict(), "committed": doc.checkpoint.committed.to_dict()}
            if f.name == "checkpoint"
            else getattr(doc, f.name).to_dict()
            if f.name in ("settings", "task_set")
            else list(doc.unverified)
            if f.name == "unverified"
            else getattr(doc, f.name)
        )
        for f in fields(doc)
    }


def test_the_bytes_are_those_of_the_same_dict_dumped_with_indent_1_and_a_final_newline() -> None:
    expected = json.dumps(_plain(DOC), indent=1, sort_keys=False, ensure_ascii=False, allow_nan=False) + "\n"
    assert DOC.to_json() == expected.encode()
    assert list(json.loads(DOC.to_json())) == [f.name for f in fields(PassAtKResults)]
    assert '"run_id": "run-é"' in DOC.to_json().decode() and "\n  " in DOC.to_json().decode()


def test_it_reads_back_to_the_same_document_and_bytes() -> None:
    again = PassAtKResults.from_json(DOC.to_json())
    assert again == DOC and again.to_json() == DOC.to_json()
    assert isinstance(again.samples[0], SampleRow) and again.checkpoint.committed.seq == 40


def test_a_score_that_is_not_a_number_is_not_written() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        replace(DOC, score=math.nan).to_json()


def test_an_optional_key_is_left_out_when_none_and_a_null_one_is_written() -> None:
    task = HarnessTask(
        metric="acc",
        score=0.5,
        n=2,
        of=2,
        metrics={"acc": 0.5},
        version=None,
        data_file="piqa.jsonl",
        data_sha256="0" * 64,
        config_sha256="1" * 64,
        samples=(),
    )
    assert "data_files" not in task.to_dict() and task.to_dict()["version"] is None
    several = replace(task, data_files=("a.arrow", "b.arrow"))
    assert list(several.to_dict())[6:8] == ["data_file", "data_files"]  # in its place, not at the end


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("k"), "lacks k"),
        (lambda d: d.pop("schema"), "lacks schema"),
        (lambda d: d.update(extra=1), "unexpected key 'extra'"),
        (lambda d: d.update(step="18"), "step: str '18', expected int"),
        (lambda d: d.update(passed=1), "passed: int 1, expected bool"),
        (lambda d: d.update(schema="recorder.zero-shot/1"), "schema: str 'recorder.zero-shot/1'"),
        (lambda d: d["checkpoint"]["committed"].pop("seq"), "checkpoint.committed: lacks seq"),
        (lambda d: d["samples"][0].update(correct=None), r"samples\[0\].correct: NoneType None, expected bool"),
    ],
)
def test_the_parse_names_the_key_at_fault(change: Any, message: str) -> None:
    raw = json.loads(DOC.to_json())
    change(raw)
    with pytest.raises(ResultsDocError, match=message):
        PassAtKResults.from_json(json.dumps(raw))


def test_what_is_not_json_is_a_results_doc_error() -> None:
    with pytest.raises(ResultsDocError, match="not JSON"):
        PassAtKResults.from_json(b"{")
    with pytest.raises(ResultsDocError, match="not JSON"):
        zero_shot_from_json(b"\xff")
    with pytest.raises(ResultsDocError, match="expected an object"):
        PassAtKResults.from_json(b"[]")


def test_a_zero_shot_result_of_a_recorder_runs_step_is_told_apart_by_its_events() -> None:
    with pytest.raises(ResultsDocError, match="ZeroShotResults: lacks"):
        zero_shot_from_json(b"{}")
    with pytest.raises(ResultsDocError, match="ZeroShotStepResults: lacks schema, label"):
        zero_shot_from_json(b'{"events": {}}')
    assert ZeroShotStepResults.__dataclass_fields__["events"]  # the key that tells them apart is a field


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
ROW_KEYS = [f.name for f in fields(SampleRow)]


# a key of a row, or another one, with any JSON value; or a row with some of its values replaced
OBJECTS = st.dictionaries(st.sampled_from([*ROW_KEYS, "extra"]), JSON) | st.fixed_dictionaries(
    {k: st.just(v) | JSON for k, v in ROW.to_dict().items()}
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OBJECTS)
def test_any_object_parses_into_a_row_that_writes_it_back_or_is_refused(raw: dict[str, Any]) -> None:
    try:
        row = SampleRow.from_dict(raw)
    except ResultsDocError:
        return
    assert row.to_dict() == raw and list(row.to_dict()) == ROW_KEYS


def test_claims_are_read_by_the_documents_names() -> None:
    claims = EvaluationClaims.of(json.loads(DOC.to_json()))
    assert (claims.run_id, claims.step, claims.score, claims.k) == (DOC.run_id, DOC.step, DOC.score, DOC.k)
    assert (claims.n_tasks, claims.tasks_passed) == (DOC.n_tasks, DOC.tasks_passed)
    assert claims.samples == [ROW.to_dict()] and claims.checkpoint_sha256 == DOC.checkpoint.sha256
    assert claims.task_spec_sha256 == DOC.task["spec_sha256"]
    assert (claims.backend_name, claims.backend_dtype, claims.backend_device) == ("torch", "bf16", "cpu")
    assert claims.stated == {f.name for f in fields(PassAtKResults)}


def test_claims_keep_what_the_file_says_whatever_its_type_and_tell_null_from_missing() -> None:
    claims = EvaluationClaims.of({"score": None, "step": "18", "checkpoint": [1], "task": {"spec_sha256": 5}})
    assert claims.score is None and "score" in claims.stated and "k" not in claims.stated and claims.k is None
    assert claims.step == "18" and claims.checkpoint_sha256 is None and claims.task_spec_sha256 == 5
    assert EvaluationClaims.of([1, 2]) == EvaluationClaims(stated=frozenset())
